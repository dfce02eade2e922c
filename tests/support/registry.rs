//! A throwaway image registry (Debian's docker-registry) on loopback, and test images pushed to it with every local copy removed.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::docker::{busybox_image, docker, unique};

/// The login of the registries started with [`Registry::start_with_auth`].
pub const USER: &str = "gpudeck";
pub const PASSWORD: &str = "s3cret-for-tests";
/// bcrypt (cost 5) of PASSWORD. docker-registry reads only bcrypt htpasswd files; a fixed line
/// needs no htpasswd tool. Made once with Python 3.11:
/// `crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=32))`.
const HTPASSWD_LINE: &str = "gpudeck:$2b$05$DeFCgDKmDN.ZUkkbZ4gCMO.k7g2jjtTzHOJdwa7J.AVDE0Okc4x66";
const READY_DEADLINE: Duration = Duration::from_secs(15);

/// A running registry; killed, and its storage deleted, on drop.
pub struct Registry {
    child: Child,
    dir: tempfile::TempDir,
    pub port: u16,
    auth: bool,
}

impl Registry {
    /// A registry without auth on 127.0.0.1 and a free port.
    pub fn start() -> Registry {
        Self::start_checked(false)
    }

    /// A registry that wants [`USER`]/[`PASSWORD`] (htpasswd auth).
    pub fn start_with_auth() -> Registry {
        Self::start_checked(true)
    }

    fn start_checked(auth: bool) -> Registry {
        let program = "/usr/bin/docker-registry";
        let found = if Path::new(program).exists() {
            Ok(())
        } else {
            Err(format!("{program} is missing"))
        };
        super::real::must(
            super::real::Part::Registry,
            &super::real::current_test(),
            found,
        );
        let mut last_error = String::new();
        // The free port is only free when asked; another process may take it before the registry does.
        for _ in 0..3 {
            match Self::spawn(auth) {
                Ok(registry) => return registry,
                Err(why) => last_error = why,
            }
        }
        panic!("docker-registry did not start: {last_error}");
    }

    fn spawn(auth: bool) -> Result<Registry, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let port = free_port();
        let config = write_config(dir.path(), port, auth);
        let log =
            std::fs::File::create(dir.path().join("registry.log")).map_err(|e| e.to_string())?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("docker-registry could not run: {e}"))?;
        let mut registry = Registry {
            child,
            dir,
            port,
            auth,
        };
        registry.wait_ready()?;
        Ok(registry)
    }

    /// `127.0.0.1:PORT`, the registry part of image references.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A Docker config dir (for `docker --config` and gpudeck's credential reader) holding this
    /// registry's login as a base64 `auths` entry.
    pub fn docker_config(&self) -> PathBuf {
        let dir = self.dir.path().join("docker-config");
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
        let json = format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            self.host()
        );
        std::fs::create_dir_all(&dir).expect("mkdir docker config");
        std::fs::write(dir.join("config.json"), json).expect("write docker config");
        dir
    }

    /// Tags the local `image` as `<host>/<repo_tag>`, pushes it, then removes every local copy
    /// (all tags of the image and of its base), so a pull must download every layer. Returns
    /// the pushed reference.
    pub fn push_and_forget(&self, image: &TestImage, repo_tag: &str) -> String {
        let reference = format!("{}/{repo_tag}", self.host());
        docker(&["tag", &image.tag, &reference]);
        let config = self.docker_config();
        let config = config.to_string_lossy();
        let mut push = vec!["push", &reference];
        if self.auth {
            push.splice(0..0, ["--config", &*config]);
        }
        let out = Command::new("docker")
            .args(&push)
            .output()
            .expect("docker push runs");
        assert!(
            out.status.success(),
            "docker push {reference} failed: {}\nregistry log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        image.remove_every_local_copy();
        reference
    }

    /// What the registry logged so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            if let Some(status) = http_status(self.port, "/v2/") {
                // Without auth /v2/ answers 200; with auth it answers 401 until one logs in.
                if status == 200 || (self.auth && status == 401) {
                    return Ok(());
                }
            }
            if let Ok(Some(exit)) = self.child.try_wait() {
                return Err(format!(
                    "docker-registry exited with {exit}:\n{}",
                    self.log()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "http://{}/v2/ did not answer within {READY_DEADLINE:?}:\n{}",
                    self.host(),
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

fn write_config(dir: &Path, port: u16, auth: bool) -> PathBuf {
    let storage = dir.join("storage");
    let mut yaml = format!(
        "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
         delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
        storage.display()
    );
    if auth {
        let htpasswd = dir.join("htpasswd");
        std::fs::write(&htpasswd, format!("{HTPASSWD_LINE}\n")).expect("write htpasswd");
        yaml.push_str(&format!(
            "auth:\n  htpasswd:\n    realm: gpudeck-test\n    path: {}\n",
            htpasswd.display()
        ));
    }
    let config = dir.join("config.yml");
    std::fs::write(&config, yaml).expect("write registry config");
    config
}

/// The status code of a plain HTTP GET to 127.0.0.1:port, or None if nothing answers yet.
pub fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).ok()?;
    let text = String::from_utf8_lossy(&head[..n]);
    text.split_whitespace().nth(1)?.parse().ok()
}

/// A local image made for one test: a fresh busybox base plus layers only it has.
pub struct TestImage {
    pub tag: String,
    base: String,
}

impl TestImage {
    /// A busybox image with `env`, one small layer naming it (so no other image shares it), and
    /// one layer of `mb` MB of random data per entry of `blobs_mb` (incompressible, so the
    /// registry serves that many bytes).
    pub fn build(name: &str, env: &[&str], blobs_mb: &[u32]) -> TestImage {
        Self::build_labelled(name, env, &[], blobs_mb)
    }

    /// As [`TestImage::build`], with `LABEL` lines (`key="value"`) too.
    pub fn build_labelled(
        name: &str,
        env: &[&str],
        labels: &[&str],
        blobs_mb: &[u32],
    ) -> TestImage {
        let base = busybox_image(&format!("{}:base", unique(name)), env);
        let tag = format!("{}:built", unique(name));
        let mut dockerfile = format!("FROM {base}\nRUN echo {tag} > /gpudeck-test-image\n");
        for label in labels {
            dockerfile.push_str(&format!("LABEL {label}\n"));
        }
        for (i, mb) in blobs_mb.iter().enumerate() {
            dockerfile.push_str(&format!(
                "RUN dd if=/dev/urandom of=/blob{i} bs=1M count={mb} 2>/dev/null\n"
            ));
        }
        let context = tempfile::tempdir().expect("build context");
        let mut build = Command::new("docker")
            .args(["build", "-q", "--rm", "-t", &tag, "-f", "-"])
            .arg(context.path())
            .env("DOCKER_BUILDKIT", "0")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("docker build runs");
        build
            .stdin
            .take()
            .expect("build stdin")
            .write_all(dockerfile.as_bytes())
            .expect("write Dockerfile");
        let out = build.wait_with_output().expect("docker build finishes");
        assert!(
            out.status.success(),
            "docker build of {tag} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        TestImage { tag, base }
    }

    /// Removes every tag of this image and of its base: `docker rmi` of one tag keeps layers
    /// that another local tag shares.
    pub fn remove_every_local_copy(&self) {
        for image in [&self.tag, &self.base] {
            if let Some(id) = image_id(image) {
                docker(&["rmi", "-f", &id]);
            }
        }
        assert!(image_id(&self.tag).is_none() && image_id(&self.base).is_none());
    }
}

/// The local image id for a reference, if the Engine has it.
pub fn image_id(reference: &str) -> Option<String> {
    let out = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", reference])
        .output()
        .expect("docker image inspect runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Removes a pulled image by reference, if present (test cleanup).
pub fn remove_image(reference: &str) {
    if let Some(id) = image_id(reference) {
        let _ = Command::new("docker").args(["rmi", "-f", &id]).output();
    }
}
