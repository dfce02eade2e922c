//! Docker test fixtures: whether an engine is reachable, and tiny local images built from busybox.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use gpudeck::docker::{resolve_host, Engine, HostSpec};

use super::real::Part;

/// Why the engine cannot be used, or Ok when tests that need it should run.
pub fn engine() -> Result<(), String> {
    static STATE: OnceLock<Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            let out = Command::new("docker")
                .args(["version", "--format", "{{.Server.APIVersion}}"])
                .output()
                .map_err(|e| format!("the docker CLI could not run: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "no Docker Engine is reachable: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        })
        .clone()
}

/// The engine the environment names (`DOCKER_HOST`, else the local socket), found as gpudeck finds it.
pub fn host() -> HostSpec {
    resolve_host(None, |key| std::env::var(key).ok()).unwrap()
}

/// A connection to [`host`].
pub async fn connect() -> Engine {
    Engine::connect(&host()).await.unwrap()
}

/// Returns true if the engine is there; otherwise false after saying why `test` is skipped, or,
/// under `CI=true`, fails the test ([`super::real::require`]).
pub fn engine_or_skip(test: &str) -> bool {
    super::real::require(Part::Docker, test, engine()).is_some()
}

/// Whether the engine has the NVIDIA runtime (`docker info`'s runtimes).
pub fn has_nvidia_runtime() -> bool {
    docker(&["info", "--format", "{{json .Runtimes}}"]).contains("nvidia")
}

/// For tests that GPUs are refused where the NVIDIA Container Toolkit is missing: true if the
/// engine has no NVIDIA runtime; otherwise false after saying why `test` is skipped, or, under
/// `CI=true`, fails the test. Ask [`engine_or_skip`] first.
pub fn no_nvidia_runtime_or_skip(test: &str) -> bool {
    super::real::have(
        Part::EngineWithoutNvidia,
        test,
        !has_nvidia_runtime(),
        "this engine has the nvidia runtime, so GPUs would be granted",
    )
}

/// Builds (once per tag) a ~2 MB image from Debian's busybox-static with the given ENV lines,
/// by `docker import` of a rootfs: no registry and no Dockerfile needed.
pub fn busybox_image(tag: &str, env: &[&str]) -> String {
    static BUILT: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if built.iter().any(|t| t == tag) {
        return tag.to_string();
    }
    let busybox = Path::new("/bin/busybox");
    assert!(
        busybox.exists(),
        "/bin/busybox is missing: install Debian's busybox-static (.ci/run does)"
    );
    let root = tempfile::tempdir().expect("tempdir");
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    std::fs::create_dir_all(root.path().join("tmp")).expect("mkdir tmp");
    std::fs::copy(busybox, bin.join("busybox")).expect("copy busybox");
    for applet in [
        "sh", "sleep", "echo", "cat", "ls", "env", "id", "true", "false", "yes", "head", "dd",
        "seq", "pwd",
    ] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).expect("symlink");
    }
    let mut import = Command::new("docker");
    import.args(["import", "-c", "ENV PATH=/bin", "-c", "CMD [\"/bin/sh\"]"]);
    for e in env {
        import.args(["-c", &format!("ENV {e}")]);
    }
    let mut tar = Command::new("tar")
        .args(["-C"])
        .arg(root.path())
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .expect("tar runs");
    let status = import
        .args(["-", tag])
        .stdin(tar.stdout.take().expect("tar stdout"))
        .stdout(Stdio::null())
        .status()
        .expect("docker import runs");
    assert!(
        tar.wait().expect("tar exits").success(),
        "tar of the rootfs failed"
    );
    assert!(status.success(), "docker import of {tag} failed");
    built.push(tag.to_string());
    tag.to_string()
}

/// Runs the docker CLI, panicking with its stderr on failure; returns stdout.
pub fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs");
    assert!(
        out.status.success(),
        "docker {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A name unique to this test process, for containers and images it creates.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "gpudeck-test-{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}
