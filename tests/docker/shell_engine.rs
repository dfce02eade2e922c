//! Shell containers on the real engine: what a created shell container carries, a non-root user
//! without a passwd entry getting a working shell, and the engine's own refusal of GPUs.

use crate::support;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bollard::models::ContainerInspectResponse;
use gpudeck::docker::Engine;
use gpudeck::launch_check::LaunchError;
use gpudeck::shell::{
    container_body, create, kept_shells, run_attached, GpuPlumbing, ResolvedGpu, ResolvedGpus,
    ShellDefaults, ShellError, ShellRequest, LABEL_GPUS, LABEL_GPU_INDICES, LABEL_SHELL,
    LABEL_WORKDIR, SHELL_HOME, TOOLKIT_MESSAGE,
};
use support::docker::{connect as engine, docker, engine_or_skip, unique};
use support::docker_cleanup::Cleanup;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn host_user() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

async fn inspect(engine: &Engine, id: &str) -> ContainerInspectResponse {
    engine.client().inspect_container(id, None).await.unwrap()
}

#[test]
fn a_created_shell_container_carries_the_whole_spec() {
    if !engine_or_skip("a_created_shell_container_carries_the_whole_spec") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let workdir = tempfile::tempdir().unwrap();
    let workdir_path = workdir.path().canonicalize().unwrap();
    let name = unique("shell-spec");
    cleanup.container(&name);
    let mut req = ShellRequest::new(&image);
    req.network = Some("none".into());
    req.shm_bytes = Some(1 << 30);
    let defaults = ShellDefaults::default();
    let body = container_body(
        &req,
        &defaults,
        &ResolvedGpus::default(),
        GpuPlumbing::None,
        host_user(),
        &workdir_path,
    )
    .unwrap();
    runtime().block_on(async {
        let engine = engine().await;
        let id = create(&engine, body, Some(&name)).await.unwrap();
        let seen = inspect(&engine, &id).await;
        let config = seen.config.unwrap();
        let host = seen.host_config.unwrap();
        let (uid, gid) = host_user();
        assert_eq!(config.user, Some(format!("{uid}:{gid}")));
        assert_eq!(config.working_dir.as_deref(), Some("/workspace"));
        assert_eq!((config.tty, config.open_stdin), (Some(true), Some(true)));
        assert_eq!(config.stdin_once, Some(false));
        assert!(config.env.unwrap().contains(&format!("HOME={SHELL_HOME}")));
        let labels = config.labels.unwrap();
        assert_eq!(labels[LABEL_SHELL], "1");
        assert_eq!(labels[LABEL_GPUS], "none");
        assert_eq!(labels[LABEL_GPU_INDICES], "none");
        assert_eq!(labels[LABEL_WORKDIR], workdir_path.to_string_lossy());

        let mounts = seen.mounts.unwrap();
        assert_eq!(mounts.len(), 1, "{mounts:?}");
        assert_eq!(mounts[0].destination.as_deref(), Some("/workspace"));
        assert_eq!(
            mounts[0].source.as_deref(),
            Some(&*workdir_path.to_string_lossy())
        );
        assert_eq!(mounts[0].rw, Some(true));
        assert_eq!(mounts[0].typ.as_deref(), Some("bind"));

        assert_eq!(host.shm_size, Some(1 << 30));
        let ulimits = host.ulimits.unwrap();
        let limit = |n: &str| {
            let u = ulimits
                .iter()
                .find(|u| u.name.as_deref() == Some(n))
                .unwrap();
            (u.soft, u.hard)
        };
        assert_eq!(limit("memlock"), (Some(-1), Some(-1)));
        assert_eq!(limit("stack"), (Some(64 << 20), Some(64 << 20)));
        assert_eq!(
            host.security_opt,
            Some(vec!["no-new-privileges".to_string()])
        );
        assert_eq!(host.cap_drop, Some(defaults.cap_drop.clone()));
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.privileged, Some(false));
        assert_eq!(host.auto_remove, Some(false));
        assert!(host.tmpfs.unwrap().contains_key(SHELL_HOME));
        assert_eq!(host.device_requests.unwrap_or_default(), Vec::new());

        let shells = kept_shells(&engine.containers().await.unwrap());
        let listed = shells
            .iter()
            .find(|s| s.name == name)
            .expect("listed as a shell");
        assert_eq!(listed.image, image);
    });
}

#[test]
fn a_user_without_a_passwd_entry_gets_a_working_shell_and_owns_its_files() {
    if !engine_or_skip("a_user_without_a_passwd_entry_gets_a_working_shell_and_owns_its_files") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let workdir = tempfile::tempdir().unwrap();
    let workdir_path = workdir.path().canonicalize().unwrap();
    // A UID the image has never heard of; as root the test can hand it the workspace.
    let user = if host_user().0 == 0 {
        (4321, 4321)
    } else {
        host_user()
    };
    chown(&workdir_path, user);
    let name = unique("shell-user");
    cleanup.container(&name);
    let mut req = ShellRequest::new(&image);
    req.tty = false;
    req.command = ["sh", "-c", "echo home > $HOME/h && cat $HOME/h && id -u && echo made > /workspace/made && ls /workspace"]
        .map(String::from)
        .to_vec();
    // This engine may not raise the locked-memory limit (see docs/shells.md); Docker's own
    // limit keeps the test about users and capabilities.
    let defaults = ShellDefaults {
        memlock: None,
        ..ShellDefaults::default()
    };
    let body = container_body(
        &req,
        &defaults,
        &ResolvedGpus::default(),
        GpuPlumbing::None,
        user,
        &workdir_path,
    )
    .unwrap();
    runtime().block_on(async {
        let engine = engine().await;
        create(&engine, body, Some(&name)).await.unwrap();
        engine.start(&name).await.unwrap();
    });
    let code = wait_exited(&name);
    let logs = docker(&["logs", &name]);
    assert_eq!(code, "0", "logs:\n{logs}");
    assert_eq!(
        logs.lines().collect::<Vec<_>>(),
        ["home", &user.0.to_string(), "made"]
    );
    let made = std::fs::metadata(workdir_path.join("made")).unwrap();
    assert_eq!((made.uid(), made.gid()), user);
}

#[test]
fn gpus_on_an_engine_without_the_toolkit_fail_at_start_with_the_explained_error() {
    if !engine_or_skip(
        "gpus_on_an_engine_without_the_toolkit_fail_at_start_with_the_explained_error",
    ) {
        return;
    }
    if !support::docker::no_nvidia_runtime_or_skip(
        "gpus_on_an_engine_without_the_toolkit_fail_at_start_with_the_explained_error",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let workdir = tempfile::tempdir().unwrap();
    let name = unique("shell-gpu");
    cleanup.container(&name);
    let gpus = ResolvedGpus {
        gpus: vec![ResolvedGpu {
            index: 0,
            uuid: "GPU-00000000-1111-2222-3333-444444444444".into(),
            name: "simulated".into(),
        }],
    };
    let mut req = ShellRequest::new(&image);
    req.tty = false;
    req.command = vec!["true".into()];
    let body = container_body(
        &req,
        &ShellDefaults::default(),
        &gpus,
        GpuPlumbing::DeviceRequest,
        host_user(),
        &workdir.path().canonicalize().unwrap(),
    )
    .unwrap();
    runtime().block_on(async {
        let engine = engine().await;
        let id = create(&engine, body, Some(&name)).await.unwrap();
        let err = run_attached(engine.client(), &id).await.unwrap_err();
        match &err {
            ShellError::Launch(LaunchError::NoToolkit { detail, .. }) => {
                assert!(
                    detail.contains("could not select device driver"),
                    "{detail}"
                )
            }
            other => panic!("expected the toolkit error, got {other:?}"),
        }
        assert_eq!(err.to_string(), TOOLKIT_MESSAGE);
    });
}

fn chown(path: &Path, (uid, gid): (u32, u32)) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

/// Waits until the container has exited; returns its exit code.
fn wait_exited(name: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = Command::new("docker")
            .args([
                "inspect",
                "--format",
                "{{.State.Status}} {{.State.ExitCode}}",
                name,
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if let Some(code) = text.strip_prefix("exited ") {
            return code.to_string();
        }
        assert!(Instant::now() < deadline, "{name} did not exit: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
