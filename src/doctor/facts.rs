//! Everything the checks look at, gathered once into plain data (`HostFacts`), so the checks are
//! pure and tests can hand them any machine.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::host_env::{find_on_path, HostEnv};
use super::kernel_log::{self, KernelLogChoice, KernelLogFacts};
use super::parse::{self, ModuleVersion};
use crate::docker::{resolve_host, DockerError, Engine, EngineInfo};
use crate::gpu::report::GpuReport;
use crate::health::XidCatalog;

/// Where the kernel module tells its version; /proc has the flavour too, /sys survives in
/// containers that hide /proc/driver.
pub const PROC_VERSION: &str = "/proc/driver/nvidia/version";
pub const SYS_VERSION: &str = "/sys/module/nvidia/version";

/// Where CDI specs live unless the engine says otherwise (the CDI spec's defaults).
pub const DEFAULT_CDI_DIRS: [&str; 2] = ["/etc/cdi", "/var/run/cdi"];

/// The NVIDIA Container Toolkit's programs; any one of them means it is installed.
/// Docker's `--gpus` needs `nvidia-container-runtime-hook` on the daemon's PATH.
pub const TOOLKIT_PROGRAMS: [&str; 4] = [
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-container-runtime",
    "nvidia-container-runtime-hook",
];

/// Where CUDA installers put nvcc when it is not on PATH.
pub const DEFAULT_NVCC: &str = "/usr/local/cuda/bin/nvcc";

/// The machine, as the checks see it.
#[derive(Clone, Debug, Serialize)]
pub struct HostFacts {
    /// `linux`, `macos`...
    pub os: String,
    pub kernel_module: Option<KernelModule>,
    pub gpu: GpuReport,
    pub docker: DockerFacts,
    /// Signs that Docker is installed here, whether or not its engine answers.
    pub docker_install: DockerInstall,
    /// Where CDI specs were looked for, and what was found there.
    pub cdi_dirs: Vec<String>,
    pub cdi_specs: Vec<CdiSpec>,
    /// Container Toolkit programs found on PATH.
    pub toolkit: Vec<Program>,
    pub nvcc: Option<Nvcc>,
    pub cuda_visible_devices: Option<String>,
    pub cuda_device_order: Option<String>,
    /// The Xids in the kernel log, or why it was not read.
    pub kernel_log: KernelLogFacts,
    /// What each Xid means (gpudeck's data, not a fact of the machine).
    #[serde(skip)]
    pub xid_catalog: XidCatalog,
}

/// The loaded kernel module, from the first file that named a version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelModule {
    pub file: String,
    /// None when the file exists but holds no version gpudeck understands.
    pub version: Option<ModuleVersion>,
}

/// The Docker Engine, reached or not.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DockerFacts {
    Reachable {
        host: String,
        info: EngineInfo,
        root_free: FreeSpace,
    },
    Unreachable {
        host: Option<String>,
        problem: DockerProblem,
    },
}

impl DockerFacts {
    /// How Docker hands GPUs to containers, decided from the engine's info as the
    /// Compatibility tab decides it (`Unknown` when the engine did not answer).
    pub fn gpu_runtime(&self) -> crate::compat::GpuRuntime {
        match self {
            DockerFacts::Reachable { info, .. } => {
                crate::compat::GpuRuntime::from_engine(Some(info))
            }
            DockerFacts::Unreachable { .. } => crate::compat::GpuRuntime::from_engine(None),
        }
    }
}

/// What says Docker is installed on this machine: its programs on PATH, an engine address
/// someone configured (`--docker-host`, `DOCKER_HOST`), or the default socket left behind.
/// An unreachable engine is a broken setup when any of these is there, a missing one when none is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DockerInstall {
    /// `dockerd` and `docker`, where found on PATH.
    pub programs: Vec<Program>,
    /// The engine address given by `--docker-host` or `DOCKER_HOST`.
    pub configured_host: Option<String>,
    /// Which of the two gave it: `--docker-host` or `DOCKER_HOST`.
    pub configured_by: Option<&'static str>,
    /// The default socket, when it exists (a daemon that stopped leaves it).
    pub socket: Option<String>,
}

impl DockerInstall {
    /// Whether anything says Docker is meant to be here.
    pub fn is_installed(&self) -> bool {
        !self.programs.is_empty() || self.configured_host.is_some() || self.socket.is_some()
    }

    /// The evidence, in words: "dockerd at /usr/bin/dockerd, --docker-host/DOCKER_HOST ...".
    pub fn evidence(&self) -> String {
        let mut parts: Vec<String> = self
            .programs
            .iter()
            .map(|p| format!("{} at {}", p.name, p.path))
            .collect();
        if let Some(host) = &self.configured_host {
            parts.push(format!("the engine is configured as {host}"));
        }
        if let Some(socket) = &self.socket {
            parts.push(format!("{socket} exists"));
        }
        parts.join(", ")
    }
}

/// Docker's programs; either one means Docker is installed.
pub const DOCKER_PROGRAMS: [&str; 2] = ["dockerd", "docker"];

/// Where the daemon's socket is when nothing else is configured.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";

/// Why Docker could not be used, as data (the error's kind, words and fix).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DockerProblem {
    pub kind: DockerProblemKind,
    pub title: &'static str,
    pub message: String,
    pub fix: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DockerProblemKind {
    /// Nothing answers: not installed or not running.
    NotRunning,
    PermissionDenied,
    TooOld,
    /// TLS files, an unusable DOCKER_HOST, or an engine error.
    Other,
}

impl DockerProblem {
    pub fn from_error(e: &DockerError) -> Self {
        let kind = match e {
            DockerError::Unreachable { .. } => DockerProblemKind::NotRunning,
            DockerError::PermissionDenied { .. } => DockerProblemKind::PermissionDenied,
            DockerError::ApiTooOld { .. } => DockerProblemKind::TooOld,
            _ => DockerProblemKind::Other,
        };
        Self {
            kind,
            title: e.title(),
            message: e.to_string(),
            fix: e.fix(),
        }
    }
}

/// Free space under Docker's data root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FreeSpace {
    Known {
        path: String,
        bytes: u64,
    },
    Unreadable {
        path: String,
        reason: String,
    },
    /// A tcp:// engine keeps its data on another machine.
    Remote,
}

/// One CDI spec file and the device kinds it declares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CdiSpec {
    pub path: String,
    pub kinds: Vec<String>,
}

impl CdiSpec {
    pub fn is_nvidia_gpu(&self) -> bool {
        self.kinds.iter().any(|k| k == "nvidia.com/gpu")
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Program {
    pub name: String,
    pub path: String,
}

/// The host CUDA toolkit's compiler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Nvcc {
    pub path: String,
    /// (major, minor) of `release X.Y`; None when the output could not be read.
    pub release: Option<(u32, u32)>,
    /// What went wrong running it, or the first line that could not be parsed.
    pub note: Option<String>,
}

/// Reads the machine. `gpu` comes from the caller (the TUI has it, the CLI opens NVML or the
/// simulation); `docker_host` is `--docker-host` (DOCKER_HOST otherwise, read through `env`).
///
/// The future is `Send`, so a TUI can spawn it; besides the Docker calls it reads a few small
/// files and runs `nvcc --version` synchronously, so it belongs on a task of its own, never on
/// the draw path.
pub async fn gather(gpu: GpuReport, docker_host: Option<&str>, env: &dyn HostEnv) -> HostFacts {
    gather_with(
        gpu,
        docker_host,
        env,
        &KernelLogChoice::Live,
        XidCatalog::builtin(),
    )
    .await
}

/// [`gather`] with the kernel log to read Xids from and the catalog that explains them.
pub async fn gather_with(
    gpu: GpuReport,
    docker_host: Option<&str>,
    env: &dyn HostEnv,
    log_choice: &KernelLogChoice,
    xid_catalog: XidCatalog,
) -> HostFacts {
    let kernel_log = kernel_log::gather(log_choice, &gpu, env);
    let docker = docker_facts(docker_host, env).await;
    let docker_install = docker_install(docker_host, env);
    let cdi_dirs = cdi_dirs(&docker);
    let cdi_specs = cdi_specs(&cdi_dirs, env);
    HostFacts {
        os: env.os(),
        kernel_module: kernel_module(env),
        gpu,
        docker,
        docker_install,
        cdi_dirs,
        cdi_specs,
        toolkit: toolkit(env),
        nvcc: nvcc(env),
        cuda_visible_devices: env.var("CUDA_VISIBLE_DEVICES"),
        cuda_device_order: env.var("CUDA_DEVICE_ORDER"),
        kernel_log,
        xid_catalog,
    }
}

/// /proc first (it names the flavour), /sys when /proc says nothing.
pub fn kernel_module(env: &dyn HostEnv) -> Option<KernelModule> {
    let proc = env.read_file(Path::new(PROC_VERSION));
    if let Some(version) = proc.as_deref().and_then(parse::proc_module_version) {
        return Some(KernelModule {
            file: PROC_VERSION.to_string(),
            version: Some(version),
        });
    }
    if let Some(version) = env
        .read_file(Path::new(SYS_VERSION))
        .as_deref()
        .and_then(parse::sys_module_version)
    {
        return Some(KernelModule {
            file: SYS_VERSION.to_string(),
            version: Some(version),
        });
    }
    proc.map(|_| KernelModule {
        file: PROC_VERSION.to_string(),
        version: None,
    })
}

async fn docker_facts(docker_host: Option<&str>, env: &dyn HostEnv) -> DockerFacts {
    let spec = match resolve_host(docker_host, |k| env.var(k)) {
        Ok(spec) => spec,
        Err(e) => {
            return DockerFacts::Unreachable {
                host: docker_host.map(str::to_string),
                problem: DockerProblem::from_error(&e),
            }
        }
    };
    let unreachable = |e: DockerError| DockerFacts::Unreachable {
        host: Some(spec.uri.clone()),
        problem: DockerProblem::from_error(&e),
    };
    let engine = match Engine::connect(&spec).await {
        Ok(engine) => engine,
        Err(e) => return unreachable(e),
    };
    match engine.info().await {
        Ok(info) => DockerFacts::Reachable {
            root_free: root_free(&spec.uri, &info.docker_root_dir, env),
            host: spec.uri.clone(),
            info,
        },
        Err(e) => unreachable(e),
    }
}

fn docker_install(docker_host: Option<&str>, env: &dyn HostEnv) -> DockerInstall {
    let set = |v: Option<String>| v.map(|h| h.trim().to_string()).filter(|h| !h.is_empty());
    let socket = Path::new(DEFAULT_SOCKET);
    let socket_there = socket
        .parent()
        .is_some_and(|dir| env.list_dir(dir).iter().any(|p| p == socket));
    let (configured_host, configured_by) = match set(docker_host.map(str::to_string)) {
        Some(h) => (Some(h), Some("--docker-host")),
        None => match set(env.var("DOCKER_HOST")) {
            Some(h) => (Some(h), Some("DOCKER_HOST")),
            None => (None, None),
        },
    };
    DockerInstall {
        programs: DOCKER_PROGRAMS
            .iter()
            .filter_map(|name| {
                find_on_path(env, name).map(|p| Program {
                    name: name.to_string(),
                    path: p.display().to_string(),
                })
            })
            .collect(),
        configured_host,
        configured_by,
        socket: socket_there.then(|| DEFAULT_SOCKET.to_string()),
    }
}

fn root_free(uri: &str, root: &str, env: &dyn HostEnv) -> FreeSpace {
    if !uri.starts_with("unix://") {
        return FreeSpace::Remote;
    }
    let path = if root.is_empty() {
        "/var/lib/docker"
    } else {
        root
    };
    match env.free_bytes(Path::new(path)) {
        Ok(bytes) => FreeSpace::Known {
            path: path.to_string(),
            bytes,
        },
        Err(reason) => FreeSpace::Unreadable {
            path: path.to_string(),
            reason,
        },
    }
}

/// The engine's CDI dirs when it reports them (Docker 25+), else the CDI defaults.
fn cdi_dirs(docker: &DockerFacts) -> Vec<String> {
    match docker {
        DockerFacts::Reachable { info, .. } if !info.cdi_spec_dirs.is_empty() => {
            info.cdi_spec_dirs.clone()
        }
        _ => DEFAULT_CDI_DIRS.iter().map(|d| d.to_string()).collect(),
    }
}

fn cdi_specs(dirs: &[String], env: &dyn HostEnv) -> Vec<CdiSpec> {
    let is_spec = |p: &PathBuf| {
        p.extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
    };
    dirs.iter()
        .flat_map(|d| env.list_dir(Path::new(d)))
        .filter(is_spec)
        .filter_map(|p| {
            let text = env.read_file(&p)?;
            Some(CdiSpec {
                path: p.display().to_string(),
                kinds: parse::cdi_kinds(&text),
            })
        })
        .collect()
}

fn toolkit(env: &dyn HostEnv) -> Vec<Program> {
    TOOLKIT_PROGRAMS
        .iter()
        .filter_map(|name| {
            find_on_path(env, name).map(|p| Program {
                name: name.to_string(),
                path: p.display().to_string(),
            })
        })
        .collect()
}

fn nvcc(env: &dyn HostEnv) -> Option<Nvcc> {
    let path = find_on_path(env, "nvcc").or_else(|| {
        let default = PathBuf::from(DEFAULT_NVCC);
        env.is_executable(&default).then_some(default)
    })?;
    let (release, note) = match env.run(&path, &["--version"]) {
        Ok(out) => match parse::nvcc_release(&out) {
            Some(r) => (Some(r), None),
            None => (None, Some(out.lines().next().unwrap_or("").to_string())),
        },
        Err(e) => (None, Some(e)),
    };
    Some(Nvcc {
        path: path.display().to_string(),
        release,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::host_env::FakeEnv;
    use crate::doctor::testkit::healthy;

    const PROC: &str = include_str!("testdata/proc_driver_nvidia_version");
    const SYS: &str = include_str!("testdata/sys_module_nvidia_version");
    const NVCC_OUT: &str = include_str!("testdata/nvcc_version");
    const CDI: &str = include_str!("testdata/cdi_nvidia.yaml");

    fn gather_on(env: &FakeEnv, docker_host: Option<&str>) -> HostFacts {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(gather(healthy().gpu, docker_host, env))
    }

    #[test]
    fn the_kernel_module_comes_from_proc_then_sys() {
        let both = FakeEnv::default()
            .file(PROC_VERSION, PROC)
            .file(SYS_VERSION, SYS);
        let km = kernel_module(&both).expect("found");
        assert_eq!(km.file, PROC_VERSION);
        assert_eq!(km.version.as_ref().map(|v| v.open), Some(Some(true)));
        let sys_only = FakeEnv::default().file(SYS_VERSION, SYS);
        let km = kernel_module(&sys_only).expect("found");
        assert_eq!(
            (km.file.as_str(), km.version.map(|v| v.version)),
            (SYS_VERSION, Some("580.159.04".into()))
        );
        let garbled = FakeEnv::default().file(PROC_VERSION, "NVRM version: ???\n");
        assert_eq!(kernel_module(&garbled).map(|k| k.version), Some(None));
        assert_eq!(kernel_module(&FakeEnv::default()), None);
    }

    #[test]
    fn a_dead_socket_is_unreachable_and_cdi_falls_back_to_the_default_dirs() {
        let env = FakeEnv::default()
            .file("/etc/cdi/nvidia.yaml", CDI)
            .file("/etc/cdi/readme.txt", "kind: nvidia.com/gpu")
            .file(
                "/var/run/cdi/other.json",
                include_str!("testdata/cdi_other.json"),
            );
        let f = gather_on(&env, Some("unix:///nonexistent.sock"));
        match &f.docker {
            DockerFacts::Unreachable { host, problem } => {
                assert_eq!(host.as_deref(), Some("unix:///nonexistent.sock"));
                assert_eq!(problem.kind, DockerProblemKind::NotRunning);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(f.cdi_dirs, vec!["/etc/cdi", "/var/run/cdi"]);
        let nvidia: Vec<&str> = f
            .cdi_specs
            .iter()
            .filter(|s| s.is_nvidia_gpu())
            .map(|s| s.path.as_str())
            .collect();
        assert_eq!(nvidia, vec!["/etc/cdi/nvidia.yaml"]);
        assert_eq!(
            f.cdi_specs.len(),
            2,
            "only .yaml/.yml/.json files are specs"
        );
    }

    #[test]
    fn signs_of_docker_are_its_programs_a_configured_host_or_the_default_socket() {
        let none = FakeEnv::default().var("PATH", "/usr/local/bin:/usr/bin");
        assert_eq!(docker_install(None, &none), DockerInstall::default());
        assert!(!docker_install(None, &none).is_installed());
        let cli = none.clone().program("/usr/bin/docker", "");
        let found = docker_install(None, &cli);
        assert_eq!(found.programs.len(), 1);
        assert_eq!(found.programs[0].path, "/usr/bin/docker");
        assert!(found.is_installed());
        let daemon = none.clone().program("/usr/local/bin/dockerd", "");
        assert_eq!(docker_install(None, &daemon).programs[0].name, "dockerd");
        let flag = docker_install(Some("tcp://gpubox:2375"), &none);
        assert_eq!(flag.configured_host.as_deref(), Some("tcp://gpubox:2375"));
        let env = none.clone().var("DOCKER_HOST", "unix:///srv/docker.sock");
        assert_eq!(
            docker_install(None, &env).configured_host.as_deref(),
            Some("unix:///srv/docker.sock")
        );
        let blank = none.clone().var("DOCKER_HOST", " ");
        assert!(!docker_install(None, &blank).is_installed());
        let socket = none.clone().file(DEFAULT_SOCKET, "");
        assert_eq!(
            docker_install(None, &socket).socket.as_deref(),
            Some(DEFAULT_SOCKET)
        );
        // gather() fills it in.
        let gathered = gather_on(&cli, Some("unix:///nonexistent.sock"));
        assert_eq!(gathered.docker_install.programs[0].name, "docker");
        assert_eq!(
            gathered.docker_install.configured_host.as_deref(),
            Some("unix:///nonexistent.sock")
        );
    }

    #[test]
    fn docker_host_comes_from_the_environment_and_bad_hosts_are_explained() {
        let env = FakeEnv::default().var("DOCKER_HOST", "unix:///nonexistent-env.sock");
        match gather_on(&env, None).docker {
            DockerFacts::Unreachable { host, .. } => {
                assert_eq!(host.as_deref(), Some("unix:///nonexistent-env.sock"))
            }
            other => panic!("{other:?}"),
        }
        match gather_on(&FakeEnv::default(), Some("ftp://nowhere")).docker {
            DockerFacts::Unreachable { problem, .. } => {
                assert_eq!(problem.kind, DockerProblemKind::Other);
                assert_eq!(problem.title, "Unsupported Docker host");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn toolkit_nvcc_and_cuda_variables_are_found() {
        let env = FakeEnv::default()
            .var("PATH", "/usr/local/bin:/usr/bin")
            .program("/usr/bin/nvidia-ctk", "")
            .program("/usr/bin/nvidia-container-cli", "")
            .program("/usr/local/bin/nvcc", NVCC_OUT)
            .var("CUDA_VISIBLE_DEVICES", "1")
            .var("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        let f = gather_on(&env, Some("unix:///nonexistent.sock"));
        let names: Vec<&str> = f.toolkit.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, vec!["nvidia-ctk", "nvidia-container-cli"]);
        let nvcc = f.nvcc.expect("nvcc");
        assert_eq!(
            (nvcc.path.as_str(), nvcc.release),
            ("/usr/local/bin/nvcc", Some((13, 0)))
        );
        assert_eq!(f.cuda_visible_devices.as_deref(), Some("1"));
        assert_eq!(f.cuda_device_order.as_deref(), Some("PCI_BUS_ID"));
        assert_eq!(f.os, "linux");
    }

    #[test]
    fn nvcc_off_path_is_found_in_usr_local_cuda_and_bad_output_is_kept() {
        let env = FakeEnv::default().program(DEFAULT_NVCC, "Segmentation fault\n");
        let nvcc = gather_on(&env, Some("unix:///nonexistent.sock"))
            .nvcc
            .expect("nvcc");
        assert_eq!(nvcc.path, DEFAULT_NVCC);
        assert_eq!(nvcc.release, None);
        assert_eq!(nvcc.note.as_deref(), Some("Segmentation fault"));
        assert_eq!(
            gather_on(&FakeEnv::default(), Some("unix:///nonexistent.sock")).nvcc,
            None
        );
    }

    #[test]
    fn free_space_is_read_for_local_engines_only() {
        let env = FakeEnv {
            free: [(std::path::PathBuf::from("/data/docker"), 42)].into(),
            ..FakeEnv::default()
        };
        assert_eq!(
            root_free("unix:///var/run/docker.sock", "/data/docker", &env),
            FreeSpace::Known {
                path: "/data/docker".into(),
                bytes: 42
            }
        );
        assert!(matches!(
            root_free("unix:///var/run/docker.sock", "", &env),
            FreeSpace::Unreadable { path, .. } if path == "/var/lib/docker"
        ));
        assert_eq!(
            root_free("tcp://10.0.0.2:2375", "/data/docker", &env),
            FreeSpace::Remote
        );
    }

    #[test]
    fn facts_serialise_for_bug_reports() {
        let v = serde_json::to_value(healthy()).expect("json");
        assert_eq!(v["docker"]["state"], "reachable");
        assert_eq!(v["docker"]["root_free"]["kind"], "known");
        assert_eq!(v["kernel_module"]["version"]["version"], "580.65.06");
    }

    #[test]
    fn gathering_can_be_spawned() {
        fn assert_send<T: Send>(_: &T) {}
        let env = FakeEnv::default();
        let future = gather(healthy().gpu, None, &env);
        assert_send(&future);
    }
}
