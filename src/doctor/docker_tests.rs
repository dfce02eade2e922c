use super::*;
use crate::docker::DockerError;
use crate::doctor::facts::{CdiSpec, DockerInstall, DockerProblem, Program};
use crate::doctor::run_checks;
use crate::doctor::testkit::{find, healthy, nvml_failed, status_of, GIB};
use crate::gpu::GpuError;

fn engine(f: &mut HostFacts) -> &mut EngineInfo {
    match &mut f.docker {
        DockerFacts::Reachable { info, .. } => info,
        DockerFacts::Unreachable { .. } => panic!("unreachable"),
    }
}

fn unreachable(e: DockerError) -> HostFacts {
    let mut f = healthy();
    f.docker = DockerFacts::Unreachable {
        host: Some("unix:///nonexistent.sock".into()),
        problem: DockerProblem::from_error(&e),
    };
    f
}

fn without_runtime() -> HostFacts {
    let mut f = healthy();
    engine(&mut f).runtimes = vec!["runc".into()];
    f
}

fn not_running() -> HostFacts {
    unreachable(DockerError::Unreachable {
        host: "unix:///nonexistent.sock".into(),
        detail: "there is no socket".into(),
    })
}

#[test]
fn an_installed_engine_that_is_not_running_fails_and_the_rest_skip() {
    let r = run_checks(&not_running());
    let c = find(&r, ENGINE);
    assert_eq!(c.status, Status::Fail);
    assert!(c.detail.contains("not reachable"), "{}", c.detail);
    assert!(
        c.detail
            .contains("Docker is installed: dockerd at /usr/bin/dockerd"),
        "{}",
        c.detail
    );
    assert!(c
        .fix
        .as_deref()
        .is_some_and(|x| x.contains("systemctl start docker")));
    for id in [GPU_RUNTIME, DEFAULT_RUNTIME, DISK_SPACE] {
        let c = find(&r, id);
        assert_eq!(c.status, Status::Skip, "{id}");
        assert!(c.detail.contains("not reachable"), "{id}: {}", c.detail);
    }
    // The toolkit is a host fact: still judged.
    assert_eq!(find(&r, TOOLKIT).status, Status::Pass);
}

#[test]
fn any_sign_of_docker_makes_an_unreachable_engine_a_failure() {
    let signs = [
        DockerInstall {
            programs: vec![Program {
                name: "docker".into(),
                path: "/usr/bin/docker".into(),
            }],
            ..DockerInstall::default()
        },
        DockerInstall {
            configured_host: Some("unix:///run/user/1000/docker.sock".into()),
            ..DockerInstall::default()
        },
        DockerInstall {
            socket: Some("/var/run/docker.sock".into()),
            ..DockerInstall::default()
        },
    ];
    for sign in signs {
        let mut f = not_running();
        f.docker_install = sign.clone();
        let (status, fix) = status_of(&f, ENGINE);
        assert_eq!(status, Status::Fail, "{sign:?}");
        assert!(fix.is_some_and(|x| x.contains("systemctl start docker")));
        let detail = find(&run_checks(&f), ENGINE).detail.clone();
        assert!(detail.contains(&sign.evidence()), "{detail}");
    }
}

#[test]
fn docker_not_installed_at_all_warns_with_how_to_install_it() {
    let mut f = not_running();
    f.docker_install = DockerInstall::default();
    let r = run_checks(&f);
    let c = find(&r, ENGINE);
    assert_eq!(c.status, Status::Warn);
    assert!(
        c.detail.starts_with("Docker is not installed"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("dockerd nor docker"), "{}", c.detail);
    let fix = c.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("https://docs.docker.com/engine/install/"),
        "{fix}"
    );
    assert!(fix.contains("systemctl enable --now docker"), "{fix}");
    assert_eq!(find(&r, GPU_RUNTIME).status, Status::Skip);
}

#[test]
fn a_socket_you_may_not_use_fails_even_without_other_signs_of_docker() {
    let mut f = unreachable(DockerError::PermissionDenied {
        host: "unix:///var/run/docker.sock".into(),
    });
    f.docker_install = DockerInstall::default();
    assert_eq!(status_of(&f, ENGINE).0, Status::Fail);
}

#[test]
fn a_socket_you_may_not_use_fails_with_the_group_fix() {
    let f = unreachable(DockerError::PermissionDenied {
        host: "unix:///var/run/docker.sock".into(),
    });
    let (status, fix) = status_of(&f, ENGINE);
    assert_eq!(status, Status::Fail);
    assert!(fix.is_some_and(|x| x.contains("usermod -aG docker")));
}

#[test]
fn the_nvidia_runtime_passes() {
    let r = run_checks(&healthy());
    assert_eq!(
        find(&r, ENGINE).detail,
        "Docker 27.3.1 (API 1.47) at unix:///var/run/docker.sock"
    );
    assert_eq!(find(&r, GPU_RUNTIME).status, Status::Pass);
}

#[test]
fn no_runtime_and_no_cdi_with_gpus_fails_with_the_toolkit_recipe() {
    let mut f = without_runtime();
    f.toolkit.clear();
    let r = run_checks(&f);
    let c = find(&r, GPU_RUNTIME);
    assert_eq!(c.status, Status::Fail);
    assert!(c.detail.contains("runtimes: runc"), "{}", c.detail);
    let fix = c.fix.as_deref().unwrap_or_default();
    assert!(fix.contains("nvidia-container-toolkit"), "{fix}");
    assert!(
        fix.contains("sudo nvidia-ctk runtime configure --runtime=docker"),
        "{fix}"
    );
    assert!(fix.contains("systemctl restart docker"), "{fix}");
    let (status, fix) = status_of(&f, TOOLKIT);
    assert_eq!(status, Status::Warn);
    assert!(fix.is_some_and(|x| x.contains("install-guide")));
    // Without GPUs it is only a warning.
    let mut none = nvml_failed(&GpuError::NoGpus);
    none.docker = f.docker.clone();
    none.toolkit.clear();
    assert_eq!(status_of(&none, GPU_RUNTIME).0, Status::Warn);
}

#[test]
fn an_installed_toolkit_only_needs_configuring() {
    let (status, fix) = status_of(&without_runtime(), GPU_RUNTIME);
    assert_eq!(status, Status::Fail);
    let fix = fix.unwrap_or_default();
    assert!(fix.starts_with("The toolkit is installed"), "{fix}");
    assert!(!fix.contains("apt-get"), "{fix}");
}

#[test]
fn cdi_specs_count_when_the_engine_reads_them() {
    let mut f = without_runtime();
    f.cdi_specs = vec![CdiSpec {
        path: "/etc/cdi/nvidia.yaml".into(),
        kinds: vec!["nvidia.com/gpu".into()],
    }];
    assert_eq!(status_of(&f, GPU_RUNTIME).0, Status::Pass);
    assert!(find(&run_checks(&f), GPU_RUNTIME)
        .detail
        .contains("--device nvidia.com/gpu=all"));
    engine(&mut f).cdi_spec_dirs.clear();
    let (status, fix) = status_of(&f, GPU_RUNTIME);
    assert_eq!(status, Status::Warn);
    assert!(fix.is_some_and(|x| x.contains("nvidia-ctk runtime configure")));
    // A spec for another vendor's devices does not help.
    f.cdi_specs[0].kinds = vec!["vendor.example/fpga".into()];
    engine(&mut f).cdi_spec_dirs = vec!["/etc/cdi".into()];
    assert_eq!(status_of(&f, GPU_RUNTIME).0, Status::Fail);
}

#[test]
fn the_runtime_hook_makes_gpus_work_without_a_registered_runtime() {
    let mut f = without_runtime();
    f.toolkit.push(Program {
        name: "nvidia-container-runtime-hook".into(),
        path: "/usr/bin/nvidia-container-runtime-hook".into(),
    });
    assert_eq!(status_of(&f, GPU_RUNTIME).0, Status::Pass);
}

#[test]
fn the_default_runtime_says_what_gpus_need() {
    let r = run_checks(&healthy());
    let c = find(&r, DEFAULT_RUNTIME);
    assert_eq!(c.status, Status::Pass);
    assert!(
        c.detail.starts_with("runc:") && c.detail.contains("--gpus all"),
        "{}",
        c.detail
    );
    let mut f = healthy();
    engine(&mut f).default_runtime = "nvidia".into();
    assert!(find(&run_checks(&f), DEFAULT_RUNTIME)
        .detail
        .starts_with("nvidia:"));
    engine(&mut f).runtimes = vec!["runc".into()];
    let (status, fix) = status_of(&f, DEFAULT_RUNTIME);
    assert_eq!(status, Status::Warn);
    assert!(fix.is_some_and(|x| x.contains("daemon.json")));
}

fn with_free(bytes: u64) -> HostFacts {
    let mut f = healthy();
    if let DockerFacts::Reachable { root_free, .. } = &mut f.docker {
        *root_free = FreeSpace::Known {
            path: "/var/lib/docker".into(),
            bytes,
        };
    }
    f
}

#[test]
fn disk_space_thresholds() {
    assert_eq!(
        status_of(&with_free(DISK_WARN_BYTES), DISK_SPACE).0,
        Status::Pass
    );
    let (status, fix) = status_of(&with_free(DISK_WARN_BYTES - 1), DISK_SPACE);
    assert_eq!(status, Status::Warn);
    assert!(fix.is_some_and(|x| x.contains("docker system df") && x.contains("data-root")));
    assert_eq!(
        status_of(&with_free(DISK_FAIL_BYTES), DISK_SPACE).0,
        Status::Warn
    );
    assert_eq!(
        status_of(&with_free(DISK_FAIL_BYTES - 1), DISK_SPACE).0,
        Status::Fail
    );
    let d = find(&run_checks(&with_free(3 * GIB)), DISK_SPACE)
        .detail
        .clone();
    assert!(d.starts_with("3.0GiB free under /var/lib/docker"), "{d}");
}

#[test]
fn remote_or_unreadable_data_roots() {
    let mut f = healthy();
    if let DockerFacts::Reachable { root_free, .. } = &mut f.docker {
        *root_free = FreeSpace::Remote;
    }
    assert_eq!(status_of(&f, DISK_SPACE).0, Status::Skip);
    if let DockerFacts::Reachable { root_free, .. } = &mut f.docker {
        *root_free = FreeSpace::Unreadable {
            path: "/srv/docker".into(),
            reason: "Permission denied".into(),
        };
    }
    let (status, fix) = status_of(&f, DISK_SPACE);
    assert_eq!(status, Status::Warn);
    assert!(fix.is_some_and(|x| x.contains("df -h /srv/docker")));
}
