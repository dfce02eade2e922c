//! `gpudeck notebook IMAGE` with the real JupyterLab in a container on the real engine: its token
//! is nowhere in what `docker inspect` shows (every member of the docker group may run it), yet
//! JupyterLab reads it and lets in whoever has it and no one else; the token's file is private;
//! the container is on a network of its own, removed with it by `gpudeck stop`.
//!
//! The image is made here, with no registry: Debian's python3 (the venv's 3.11 ABI), its
//! standard library, the shared libraries they load and the test venv's site-packages without
//! the GPU stacks, by `docker import`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::docker::{engine_or_skip, unique};
use crate::support::docker_cleanup::Cleanup;
use crate::support::run_containers::{containers_of, inspect, workdir, RunContainers};
use crate::support::runs::{output, record, run_dir, wait_until};
use crate::support::{real, services, stderr, stdout, Dirs};

/// Fills `root` with python3, its libraries and the venv's site-packages, and the `jupyter` and
/// `jupyter-lab` commands.
const ROOTFS: &str = r#"
set -eu
root=$1; site=$2
mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/local/bin" "$root/opt/site" "$root/tmp"
chmod 1777 "$root/tmp"
cp /usr/bin/python3.11 "$root/usr/bin/"
ln -s python3.11 "$root/usr/bin/python3"
tar -C /usr/lib --exclude=test --exclude=idlelib --exclude=tkinter --exclude=ensurepip \
    --exclude=__pycache__ -cf - python3.11 | tar -C "$root/usr/lib" -xf -
set --
for big in triton 'triton*' nvidia 'nvidia*' torch 'torch*' functorch sympy mpmath 'tensorboard*' \
    pytriton 'numpy*' cuda ml_dtypes networkx grpc pip 'pillow*' PIL gevent aiohttp \
    'rapidjson*' 'pydantic*' debugpy; do
  set -- "$@" "--exclude=./$big"
done
tar -C "$site" "$@" -cf - . | tar -C "$root/opt/site" -xf -
find "$root" \( -name '*.so' -o -name '*.so.*' -o -name python3.11 \) -type f -print0 \
  | xargs -0 ldd 2>/dev/null \
  | awk '/=> \//{print $3} /^[[:space:]]*\/lib/{print $1}' | sort -u \
  | while read -r lib; do
      mkdir -p "$root$(dirname "$lib")"
      [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
    done
printf '#!/usr/bin/python3\nimport sys\nfrom jupyter_core.command import main\nsys.exit(main())\n' \
  > "$root/usr/local/bin/jupyter"
printf '#!/usr/bin/python3\nimport sys\nfrom jupyterlab.labapp import main\nsys.exit(main())\n' \
  > "$root/usr/local/bin/jupyter-lab"
chmod 755 "$root/usr/local/bin/jupyter" "$root/usr/local/bin/jupyter-lab"
"#;

/// A local image with the venv's JupyterLab, removed with `cleanup`; `None` (after saying why)
/// where the venv or Debian's python3.11 is missing.
fn jupyter_image(test: &str, cleanup: &mut Cleanup) -> Option<String> {
    let jupyter = services::or_skip(test, services::jupyter())?;
    let venv = jupyter.parent()?.parent()?.to_path_buf();
    let site = venv.join("lib/python3.11/site-packages");
    let have = Path::new("/usr/bin/python3.11").exists() && site.join("jupyterlab").is_dir();
    let why = format!("the image is made of /usr/bin/python3.11 and the JupyterLab in {site:?}");
    if !real::have(real::Part::JupyterLab, test, have, &why) {
        return None;
    }
    let root = tempfile::tempdir().unwrap();
    let made = Command::new("bash")
        .args(["-c", ROOTFS, "rootfs"])
        .arg(root.path())
        .arg(&site)
        .status()
        .unwrap();
    assert!(made.success(), "the image's files could not be gathered");
    let tag = format!("{}:latest", unique("jupyter"));
    cleanup.image_name(&tag);
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(root.path())
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let imported = Command::new("docker")
        .args(["import", "-c", "ENV PATH=/usr/local/bin:/usr/bin:/bin"])
        .args(["-c", "ENV PYTHONPATH=/opt/site", "-c", "ENV HOME=/tmp"])
        .args(["-", &tag])
        .stdin(tar.stdout.take().unwrap())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(
        tar.wait().unwrap().success() && imported.success(),
        "docker import"
    );
    Some(tag)
}

/// An HTTP GET on loopback: the status code.
fn status_of(port: u16, path: &str, token: Option<&str>) -> u16 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: token {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {answer:?}"))
}

/// Removes a service's network when the test is done, pass or fail (after its container).
struct NetworkGone(String);

impl Drop for NetworkGone {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["network", "rm", &self.0])
            .output();
    }
}

/// Before, the token was in the container's `Config.Env`, shown by `docker inspect`.
#[test]
fn a_container_notebooks_token_is_not_in_its_container_config_and_still_lets_its_owner_in() {
    let test =
        "a_container_notebooks_token_is_not_in_its_container_config_and_still_lets_its_owner_in";
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip(test) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let Some(image) = jupyter_image(test, &mut cleanup) else {
        return;
    };
    let (_work_dir, work) = workdir();
    let dirs = Dirs::new();
    let out = output(
        &dirs,
        &["notebook", &image, "--gpus", "none", "--workdir", &work],
    );
    let said = stderr(&out);
    assert!(out.status.success(), "{said}\n{}", stdout(&out));
    let listed = output(&dirs, &["services", "--json"]);
    let doc: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let row = doc["services"][0].clone();
    let id = row["id"].as_str().unwrap().to_string();
    let network = format!("gpudeck-{id}-net");
    let _network = NetworkGone(network.clone());
    let _containers = RunContainers(id.clone());
    assert_eq!(row["health"], "ready", "{row}\n{said}");
    let url = row["url"].as_str().unwrap();
    let token = url.split("token=").nth(1).unwrap().to_string();
    assert_eq!(token.len(), 48, "{url}");
    let port: u16 = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a loopback port in {url}"));

    let found = containers_of(&id);
    assert_eq!(found.len(), 1);
    let seen = inspect(&found[0]);
    let everything = seen.to_string();
    assert!(
        !everything.contains(&token),
        "the token is in `docker inspect`: {}",
        seen["Config"]
    );
    let env: Vec<&str> = seen["Config"]["Env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        env.contains(&"JUPYTER_TOKEN_FILE=/run/gpudeck/jupyter-token"),
        "{env:?}"
    );
    assert!(
        !env.iter().any(|e| e.starts_with("JUPYTER_TOKEN=")),
        "{env:?}"
    );
    let mount = seen["Mounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["Destination"] == "/run/gpudeck/jupyter-token")
        .unwrap_or_else(|| panic!("the token file is mounted: {}", seen["Mounts"]))
        .clone();
    assert_eq!(mount["RW"], false, "read-only: {mount}");
    assert_eq!(seen["HostConfig"]["NetworkMode"], network.as_str());

    // The file is the owner's alone.
    let file = run_dir(&dirs, &id).join("jupyter-token");
    assert_eq!(mount["Source"], file.to_string_lossy().as_ref());
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    // SAFETY: getuid cannot fail.
    assert_eq!(meta.uid(), unsafe { libc::getuid() });
    assert_eq!(std::fs::read_to_string(&file).unwrap(), token);

    // JupyterLab read it: the token lets in, nothing else does.
    assert_eq!(status_of(port, "/api/status", Some(&token)), 200);
    assert_eq!(status_of(port, "/api/status", None), 403);
    let wrong = "0".repeat(48);
    assert_eq!(status_of(port, "/api/status", Some(&wrong)), 403);

    let out = output(&dirs, &["stop", &id, "--grace", "10"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(record(&dirs, &id)["state"], "stopped");
    assert!(containers_of(&id).is_empty(), "removed after the stop");
    wait_until("the notebook's network to be removed", || {
        !Command::new("docker")
            .args(["network", "inspect", &network])
            .output()
            .is_ok_and(|o| o.status.success())
    });
}
