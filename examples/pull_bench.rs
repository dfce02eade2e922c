//! Times gpudeck's pull job against `docker pull` for a ~200 MB, 4-layer image served by a loopback registry.
//!
//! Needs the Docker Engine, Debian's docker-registry and busybox-static. Run with
//! `cargo run --release --example pull_bench`. Every run starts with no local copy of the image.

use std::error::Error;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bollard::Docker;
use gpudeck::pull::{start_pull, ImageRef};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const LAYER_MB: u32 = 50;
const LAYERS: usize = 4;
const RUNS: usize = 3;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let registry = Registry::start()?;
    let reference = build_and_push(&registry)?;
    println!("image: {reference} ({LAYERS} layers of {LAYER_MB} MB random data)");
    let docker = Docker::connect_with_local_defaults()?;
    let (mut docker_times, mut gpudeck_times) = (Vec::new(), Vec::new());
    for run in 1..=RUNS {
        let cli = time_docker_pull(&reference)?;
        remove_every_local_copy(&reference)?;
        let job = time_gpudeck_pull(&docker, &reference).await?;
        remove_every_local_copy(&reference)?;
        println!(
            "run {run}: docker pull {:.2} s, gpudeck {:.2} s",
            cli.as_secs_f64(),
            job.as_secs_f64()
        );
        docker_times.push(cli);
        gpudeck_times.push(job);
    }
    let (cli, job) = (median(&mut docker_times), median(&mut gpudeck_times));
    println!(
        "median: docker pull {:.2} s, gpudeck {:.2} s, ratio gpudeck/docker {:.2}",
        cli.as_secs_f64(),
        job.as_secs_f64(),
        job.as_secs_f64() / cli.as_secs_f64()
    );
    Ok(())
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn time_docker_pull(reference: &str) -> Result<Duration> {
    let started = Instant::now();
    run("docker", &["pull", "-q", reference])?;
    Ok(started.elapsed())
}

async fn time_gpudeck_pull(docker: &Docker, reference: &str) -> Result<Duration> {
    let started = Instant::now();
    let handle = start_pull(docker.clone(), ImageRef::parse(reference)?, None);
    handle.finish().await?;
    Ok(started.elapsed())
}

/// A rootfs of busybox plus one random blob, imported (layer 1), then three RUN layers of random
/// data on top; pushed, then deleted locally.
fn build_and_push(registry: &Registry) -> Result<String> {
    let base = format!("gpudeck-bench-base:{}", std::process::id());
    let tag = format!("{}/bench/big:{}", registry.host(), std::process::id());
    let root = tempfile::tempdir()?;
    std::fs::create_dir_all(root.path().join("bin"))?;
    std::fs::copy("/bin/busybox", root.path().join("bin/busybox"))?;
    for applet in ["sh", "dd", "echo"] {
        std::os::unix::fs::symlink("busybox", root.path().join("bin").join(applet))?;
    }
    run(
        "dd",
        &[
            "if=/dev/urandom",
            &format!("of={}/blob0", root.path().display()),
            "bs=1M",
            &format!("count={LAYER_MB}"),
        ],
    )?;
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(root.path())
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()?;
    let tar_out = tar.stdout.take().ok_or("tar has no stdout")?;
    let status = Command::new("docker")
        .args(["import", "-c", "ENV PATH=/bin", "-", &base])
        .stdin(tar_out)
        .stdout(Stdio::null())
        .status()?;
    if !tar.wait()?.success() || !status.success() {
        return Err("tar | docker import failed".into());
    }
    let mut dockerfile = format!("FROM {base}\n");
    for i in 1..LAYERS {
        dockerfile.push_str(&format!(
            "RUN dd if=/dev/urandom of=/blob{i} bs=1M count={LAYER_MB} 2>/dev/null\n"
        ));
    }
    docker_build(&tag, &dockerfile)?;
    run("docker", &["push", "-q", &tag])?;
    remove_every_local_copy(&tag)?;
    remove_every_local_copy(&base)?;
    Ok(tag)
}

fn docker_build(tag: &str, dockerfile: &str) -> Result<()> {
    let context = tempfile::tempdir()?;
    let mut build = Command::new("docker")
        .args(["build", "-q", "--rm", "-t", tag, "-f", "-"])
        .arg(context.path())
        .env("DOCKER_BUILDKIT", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    build
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(dockerfile.as_bytes())?;
    if !build.wait()?.success() {
        return Err(format!("docker build of {tag} failed").into());
    }
    Ok(())
}

/// `docker rmi -f <id>` removes every tag of the image, so no layer survives under another name.
fn remove_every_local_copy(reference: &str) -> Result<()> {
    let out = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", reference])
        .output()?;
    if out.status.success() {
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        run("docker", &["rmi", "-f", &id])?;
    }
    Ok(())
}

fn run(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program).args(args).output()?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{program} {args:?} failed: {stderr}").into());
    }
    Ok(())
}

/// docker-registry on 127.0.0.1 and a free port, with temporary storage; killed on drop.
struct Registry {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Result<Registry> {
        let dir = tempfile::tempdir()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.path().join("storage").display()
            ),
        )?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let registry = Registry {
            child,
            port,
            _dir: dir,
        };
        registry.wait_ready(Path::new("/v2/"))?;
        Ok(registry)
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn wait_ready(&self, path: &Path) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                write!(stream, "GET {} HTTP/1.0\r\n\r\n", path.display())?;
                let mut head = [0u8; 12];
                if stream.read_exact(&mut head).is_ok() && head.ends_with(b"200") {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err("docker-registry did not answer within 15 s".into())
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
