//! Checks of Docker for GPU containers: the engine, the NVIDIA runtime or CDI, the Container
//! Toolkit, the default runtime and room for images.

use super::facts::{
    DockerFacts, DockerProblemKind, FreeSpace, HostFacts, DEFAULT_SOCKET, DOCKER_PROGRAMS,
};
use super::report::{Check, Family, Status};
use crate::compat::profile::{GpuPathFacts, GpuRuntime};
use crate::docker::EngineInfo;
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
            check(ENGINE, title, Status::Fail, detail).with_fix(problem.fix)
        }
    }
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
#[path = "docker_tests.rs"]
mod tests;
