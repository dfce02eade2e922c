//! Checks of Docker for GPU containers: the engine, the NVIDIA runtime or CDI, the Container
//! Toolkit, the default runtime and room for images.

use super::facts::{
    DockerFacts, DockerProblem, DockerProblemKind, FreeSpace, HostFacts, DEFAULT_SOCKET,
    DOCKER_PROGRAMS,
};
use super::report::{Check, Family, Status};
use crate::compat::profile::{GpuPathFacts, GpuRuntime};
use crate::docker::{EngineInfo, DEFAULT_HOST};
use crate::units;

pub const ENGINE: &str = "docker.engine";
pub const GPU_RUNTIME: &str = "docker.gpu_runtime";
pub const TOOLKIT: &str = "docker.toolkit";
pub const DEFAULT_RUNTIME: &str = "docker.default_runtime";
pub const DISK_SPACE: &str = "docker.disk_space";

const GIB: u64 = 1 << 30;
/// GPU framework images are 5-20 GB each; below this a pull or two fills the disk.
pub const DISK_WARN_BYTES: u64 = 20 * GIB;
/// Below this even one framework image will not fit.
pub const DISK_FAIL_BYTES: u64 = 5 * GIB;

const INSTALL_TOOLKIT: &str = "Install the NVIDIA Container Toolkit \
     (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html; \
     on Debian/Ubuntu with NVIDIA's apt repository: `sudo apt-get install -y nvidia-container-toolkit`)";
const CONFIGURE_RUNTIME: &str =
    "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`";

fn check(id: &'static str, title: &'static str, status: Status, detail: String) -> Check {
    Check::new(id, Family::Docker, title, status, detail)
}

pub fn checks(f: &HostFacts) -> Vec<Check> {
    let mut out = vec![engine(f)];
    match &f.docker {
        DockerFacts::Reachable {
            info, root_free, ..
        } => {
            out.push(gpu_runtime(f, info));
            out.push(toolkit(f));
            out.push(default_runtime(f, info));
            out.push(disk_space(root_free));
        }
        DockerFacts::Unreachable { .. } => {
            let why = "Docker is not reachable (see Docker Engine above)".to_string();
            out.push(check(
                GPU_RUNTIME,
                "GPU runtime or CDI",
                Status::Skip,
                why.clone(),
            ));
            out.push(toolkit(f));
            out.push(check(
                DEFAULT_RUNTIME,
                "Default runtime",
                Status::Skip,
                why.clone(),
            ));
            out.push(check(
                DISK_SPACE,
                "Disk space for images",
                Status::Skip,
                why,
            ));
        }
    }
    out
}

fn engine(f: &HostFacts) -> Check {
    let title = "Docker Engine";
    match &f.docker {
        DockerFacts::Reachable { host, info, .. } => check(
            ENGINE,
            title,
            Status::Pass,
            format!(
                "Docker {} (API {}) at {host}",
                info.server_version, info.api_version
            ),
        ),
        DockerFacts::Unreachable { problem, .. } => {
            let install = &f.docker_install;
            // Docker not installed at all may be a choice on a GPU box; installed but not
            // answering (or a socket you may not use) is a broken setup.
            if problem.kind == DockerProblemKind::NotRunning && !install.is_installed() {
                return check(ENGINE, title, Status::Warn, not_installed(problem))
                    .with_fix(INSTALL_DOCKER);
            }
            let mut detail = problem.message.clone();
            if install.is_installed() {
                detail.push_str(&format!(" (Docker is installed: {})", install.evidence()));
            }
            let fix = elsewhere_fix(f, problem).unwrap_or_else(|| problem.fix.to_string());
            check(ENGINE, title, Status::Fail, detail).with_fix(fix)
        }
    }
}

/// When nothing (or no Docker Engine) answers at an address `DOCKER_HOST` or `--docker-host`
/// chose instead of the default socket, that choice is the first thing to fix: starting the
/// default daemon would change nothing.
fn elsewhere_fix(f: &HostFacts, problem: &DockerProblem) -> Option<String> {
    let install = &f.docker_install;
    let configured = install.configured_host.as_deref()?;
    let at_default = match &f.docker {
        DockerFacts::Unreachable { host, .. } => host.as_deref() == Some(DEFAULT_HOST),
        DockerFacts::Reachable { .. } => true,
    };
    if problem.kind != DockerProblemKind::NotRunning || at_default {
        return None;
    }
    let by = install.configured_by.unwrap_or("DOCKER_HOST");
    let undo = if by == "DOCKER_HOST" {
        "unset it (`unset DOCKER_HOST`, and remove it from your shell's startup file)"
    } else {
        "leave --docker-host out"
    };
    let default = if install.socket.is_some() {
        format!("the default socket {DEFAULT_SOCKET} is there")
    } else {
        format!(
            "the default socket {DEFAULT_SOCKET} is not there either: start Docker \
             (`sudo systemctl start docker`)"
        )
    };
    Some(format!(
        "{by} points elsewhere ({configured}), where no Docker Engine answers: {undo} to use the \
         default engine ({default}), or correct it to your engine's address (`docker context ls` \
         shows the ones the docker CLI knows), or start the engine it names."
    ))
}

const INSTALL_DOCKER: &str = "Install Docker Engine (https://docs.docker.com/engine/install/; on \
     Debian/Ubuntu: `sudo apt-get install -y docker.io`), then start it: \
     `sudo systemctl enable --now docker`. Without it gpudeck still shows the GPUs and runs on the host.";

fn not_installed(problem: &super::facts::DockerProblem) -> String {
    format!(
        "Docker is not installed: neither {} is on PATH, no engine is configured \
         (--docker-host, DOCKER_HOST) and {DEFAULT_SOCKET} does not exist ({})",
        DOCKER_PROGRAMS.join(" nor "),
        problem.message
    )
}

const RUNTIME_TITLE: &str = "GPU runtime or CDI";

fn gpu_runtime(f: &HostFacts, info: &EngineInfo) -> Check {
    let cdi: Vec<&str> = f
        .cdi_specs
        .iter()
        .filter(|s| s.is_nvidia_gpu())
        .map(|s| s.path.as_str())
        .collect();
    if let Some(how) = gpu_path(f, info, &cdi) {
        return check(GPU_RUNTIME, RUNTIME_TITLE, Status::Pass, how);
    }
    if !cdi.is_empty() {
        return check(
            GPU_RUNTIME,
            RUNTIME_TITLE,
            Status::Warn,
            format!(
                "CDI specs for nvidia.com/gpu exist ({}) but Docker {} does not read CDI (it needs \
                 Docker 25+ with CDI enabled)",
                cdi.join(", "),
                info.server_version
            ),
        )
        .with_fix(format!(
            "Register the runtime instead: {CONFIGURE_RUNTIME}."
        ));
    }
    // Without GPUs (or without NVML) a missing runtime is not yet in anyone's way.
    let status = if f.gpu.gpu_count > 0 {
        Status::Fail
    } else {
        Status::Warn
    };
    check(
        GPU_RUNTIME,
        RUNTIME_TITLE,
        status,
        format!(
            "Docker has neither the nvidia runtime (runtimes: {}) nor CDI specs for nvidia.com/gpu \
             (in {}): `docker run --gpus all` fails with \"could not select device driver\"",
            list_or_none(&info.runtimes),
            f.cdi_dirs.join(", ")
        ),
    )
    .with_fix(runtime_fix(f))
}

/// How containers can get GPUs here, if they can: the runtime, CDI, or `--gpus` through the hook
/// (dockerd registers its `nvidia` device driver when that hook is on its PATH). Decided by the
/// same function as the compatibility verdicts and the shell pre-flight.
fn gpu_path(f: &HostFacts, info: &EngineInfo, cdi: &[&str]) -> Option<String> {
    let hook = f
        .toolkit
        .iter()
        .find(|p| p.name == "nvidia-container-runtime-hook");
    let facts = GpuPathFacts {
        runtimes: &info.runtimes,
        api_version: &info.api_version,
        nvidia_cdi: !cdi.is_empty() && !info.cdi_spec_dirs.is_empty(),
        runtime_hook: hook.is_some(),
    };
    match GpuRuntime::decide(&facts) {
        GpuRuntime::Nvidia => Some(
            "the nvidia runtime is registered: `docker run --gpus all` and `--runtime=nvidia` work"
                .into(),
        ),
        GpuRuntime::Cdi => Some(format!(
            "CDI devices nvidia.com/gpu in {}: `docker run --device nvidia.com/gpu=all`",
            cdi.join(", ")
        )),
        GpuRuntime::Hook => Some(format!(
            "no nvidia runtime registered, but `--gpus` works through {} (`--runtime=nvidia` does not)",
            hook.map_or("", |h| h.path.as_str())
        )),
        GpuRuntime::CdiTooOld | GpuRuntime::Missing | GpuRuntime::Unknown => None,
    }
}

/// The full recipe when the toolkit is missing; just the configuration step when it is there.
fn runtime_fix(f: &HostFacts) -> String {
    if f.toolkit.iter().any(|p| p.name == "nvidia-ctk") {
        format!("The toolkit is installed; register its runtime: {CONFIGURE_RUNTIME}.")
    } else {
        format!("{INSTALL_TOOLKIT}, then run {CONFIGURE_RUNTIME}.")
    }
}

fn toolkit(f: &HostFacts) -> Check {
    let title = "NVIDIA Container Toolkit";
    if f.toolkit.is_empty() {
        return check(
            TOOLKIT,
            title,
            Status::Warn,
            format!(
                "none of {} is on PATH: containers cannot get GPUs",
                super::facts::TOOLKIT_PROGRAMS.join(", ")
            ),
        )
        .with_fix(format!("{INSTALL_TOOLKIT}."));
    }
    let found: Vec<String> = f.toolkit.iter().map(|p| p.path.clone()).collect();
    check(
        TOOLKIT,
        title,
        Status::Pass,
        format!("found {}", found.join(", ")),
    )
}

fn default_runtime(f: &HostFacts, info: &EngineInfo) -> Check {
    let title = "Default runtime";
    let default = info.default_runtime.as_str();
    if !default.is_empty() && !info.runtimes.iter().any(|r| r == default) {
        return check(
            DEFAULT_RUNTIME,
            title,
            Status::Warn,
            format!("the default runtime {default} is not among the registered ones ({})", list_or_none(&info.runtimes)),
        )
        .with_fix("Fix \"default-runtime\" in /etc/docker/daemon.json, then `sudo systemctl restart docker`.");
    }
    let detail = if default == "nvidia" {
        "nvidia: every container can reach the GPUs (NVIDIA_VISIBLE_DEVICES); `--gpus` picks which"
            .to_string()
    } else {
        let how = if f.toolkit.is_empty() {
            "once the NVIDIA Container Toolkit is installed"
        } else {
            "through the NVIDIA Container Toolkit's hook"
        };
        format!(
            "{}: containers get GPUs only when asked, `docker run --gpus all` ({how}); the default runtime need not change",
            if default.is_empty() { "unknown" } else { default }
        )
    };
    check(DEFAULT_RUNTIME, title, Status::Pass, detail)
}

fn disk_space(free: &FreeSpace) -> Check {
    let title = "Disk space for images";
    let (path, bytes) = match free {
        FreeSpace::Remote => {
            return check(
                DISK_SPACE,
                title,
                Status::Skip,
                "the engine is remote: its data root is not on this machine".into(),
            )
        }
        FreeSpace::Unreadable { path, reason } => {
            return check(
                DISK_SPACE,
                title,
                Status::Warn,
                format!("could not read the free space of {path}: {reason}"),
            )
            .with_fix(format!("Check it by hand: `df -h {path}`."))
        }
        FreeSpace::Known { path, bytes } => (path, *bytes),
    };
    let detail = format!(
        "{} free under {path} (GPU framework images take 5-20 GB each)",
        units::human_bytes(bytes)
    );
    let status = if bytes < DISK_FAIL_BYTES {
        Status::Fail
    } else if bytes < DISK_WARN_BYTES {
        Status::Warn
    } else {
        return check(DISK_SPACE, title, Status::Pass, detail);
    };
    check(DISK_SPACE, title, status, detail).with_fix(format!(
        "See what uses it: `docker system df`; free it: `docker image prune -a`, `docker builder prune`; \
         or move Docker's \"data-root\" (/etc/docker/daemon.json) to a bigger disk. `df -h {path}` shows the disk."
    ))
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
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

    /// The engine check on this machine with DOCKER_HOST set to `host`, where the default
    /// socket exists (as a file of the fake machine: nothing connects to it).
    fn engine_with_docker_host(host: &str) -> Check {
        let env = crate::doctor::FakeEnv::default()
            .var("DOCKER_HOST", host)
            .file(DEFAULT_SOCKET, "");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let f = rt.block_on(crate::doctor::gather(healthy().gpu, None, &env));
        assert_eq!(f.docker_install.configured_by, Some("DOCKER_HOST"));
        find(&run_checks(&f), ENGINE).clone()
    }

    fn assert_blames_docker_host(c: &Check, host: &str) {
        assert_eq!(c.status, Status::Fail, "{c:?}");
        let fix = c.fix.as_deref().unwrap_or_default();
        assert!(
            fix.starts_with(&format!("DOCKER_HOST points elsewhere ({host})")),
            "{fix}"
        );
        assert!(fix.contains("unset DOCKER_HOST"), "{fix}");
        assert!(
            fix.contains("the default socket /var/run/docker.sock is there"),
            "{fix}"
        );
        assert!(!fix.contains("systemctl start docker"), "{fix}");
    }

    #[test]
    fn a_docker_host_at_a_missing_socket_is_the_first_fix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let host = format!("unix://{}/docker.sock", dir.path().display());
        let c = engine_with_docker_host(&host);
        assert!(c.detail.contains(&host), "{}", c.detail);
        assert_blames_docker_host(&c, &host);
    }

    #[test]
    fn a_docker_host_at_a_plain_file_or_a_socket_that_is_no_engine_is_the_first_fix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("not-a-socket");
        std::fs::write(&file, "hello").expect("write");
        let host = format!("unix://{}", file.display());
        assert_blames_docker_host(&engine_with_docker_host(&host), &host);

        // Something listens there but speaks no HTTP at all.
        let path = dir.path().join("garbage.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                use std::io::{Read, Write};
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(b"\x00\x01 this is not a Docker Engine\r\n\r\n");
            }
        });
        let host = format!("unix://{}", path.display());
        let c = engine_with_docker_host(&host);
        assert!(
            c.detail.contains("not as a Docker Engine") || c.detail.contains("not a Docker Engine"),
            "{}",
            c.detail
        );
        assert_blames_docker_host(&c, &host);
    }

    #[test]
    fn a_docker_host_naming_the_default_socket_keeps_the_start_it_fix() {
        let mut f = not_running();
        f.docker = DockerFacts::Unreachable {
            host: Some(DEFAULT_HOST.into()),
            problem: DockerProblem::from_error(&DockerError::Unreachable {
                host: DEFAULT_HOST.into(),
                detail: "connection refused".into(),
            }),
        };
        f.docker_install.configured_host = Some(DEFAULT_HOST.into());
        f.docker_install.configured_by = Some("DOCKER_HOST");
        let fix = status_of(&f, ENGINE).1.unwrap();
        assert!(
            fix.starts_with("Start it: `sudo systemctl start docker`"),
            "{fix}"
        );
        // A flag elsewhere with no default socket: say both.
        let mut flag = not_running();
        flag.docker_install.configured_host = Some("unix:///nonexistent.sock".into());
        flag.docker_install.configured_by = Some("--docker-host");
        flag.docker_install.socket = None;
        let fix = status_of(&flag, ENGINE).1.unwrap();
        assert!(
            fix.starts_with("--docker-host points elsewhere (unix:///nonexistent.sock)"),
            "{fix}"
        );
        assert!(fix.contains("leave --docker-host out"), "{fix}");
        assert!(
            fix.contains("is not there either: start Docker (`sudo systemctl start docker`)"),
            "{fix}"
        );
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
        let mut none = nvml_failed(&GpuError::NoGpus { system: None });
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
}
