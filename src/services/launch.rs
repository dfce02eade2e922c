//! A service request turned into a run spec: the program and its flags for the kind, where it
//! runs (a container of a local image, or this machine), its loopback ports and its token.

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use super::error::ServiceError;
use crate::runs::{GpuSelection, Launcher, RunSpec, ServiceKind, ServicePort, ServiceSpec};

/// The variable a notebook's token is handed in: never on the command line, which every user
/// of the machine can read in /proc.
pub const TOKEN_VAR: &str = "JUPYTER_TOKEN";

/// What `gpudeck notebook`, `tensorboard` and `triton` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRequest {
    pub kind: ServiceKind,
    /// A local image to run it in; `None`: on this machine (`--host`).
    pub image: Option<String>,
    pub gpus: GpuSelection,
    /// The notebook's root, TensorBoard's log dir, Triton's model repository; `None`: the
    /// current directory.
    pub dir: Option<PathBuf>,
    pub name: Option<String>,
    /// The port users open; `None`: a free one.
    pub port: Option<u16>,
    pub env: Vec<(String, String)>,
    /// A notebook's `[notebook] idle_stop`: its supervisor shuts kernels idle this long down.
    pub idle_stop: Option<std::time::Duration>,
}

/// Where a service's directory is seen from inside a container (the `[shell] mount_point`).
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    pub cwd: &'a Path,
    pub mount_point: &'a str,
}

impl ServiceKind {
    /// What it is called in messages.
    pub fn what(self) -> &'static str {
        match self {
            ServiceKind::Notebook => "JupyterLab",
            ServiceKind::Tensorboard => "TensorBoard",
            ServiceKind::Triton => "Triton Inference Server",
        }
    }

    /// The program that serves it.
    pub fn program(self) -> &'static str {
        match self {
            ServiceKind::Notebook => "jupyter",
            ServiceKind::Tensorboard => "tensorboard",
            ServiceKind::Triton => "tritonserver",
        }
    }

    /// How to get the program onto this machine.
    fn install(self) -> &'static str {
        match self {
            ServiceKind::Notebook => {
                "Install it in your environment (`pip install jupyterlab`) and activate that environment, or run it in an image that has it: `gpudeck notebook IMAGE` (e.g. a PyTorch or TensorFlow -jupyter image; `gpudeck pull` lists them)."
            }
            ServiceKind::Tensorboard => {
                "Install it in your environment (`pip install tensorboard`) and activate that environment, or run it in an image that has it with --image."
            }
            ServiceKind::Triton => {
                "Run it in NVIDIA's image (`gpudeck pull nvcr.io/nvidia/tritonserver:25.10-py3`, then --image), or put a `tritonserver` on PATH (the nvidia-pytriton wheel ships one)."
            }
        }
    }

    /// The ports it listens on, the one users open first.
    fn port_names(self) -> &'static [&'static str] {
        match self {
            ServiceKind::Notebook | ServiceKind::Tensorboard => &["http"],
            ServiceKind::Triton => &["http", "grpc", "metrics"],
        }
    }

    /// GPUs when the command line names none: TensorBoard needs none, the others one free GPU.
    pub fn default_gpus(self) -> GpuSelection {
        match self {
            ServiceKind::Tensorboard => GpuSelection::None,
            ServiceKind::Notebook | ServiceKind::Triton => GpuSelection::Count(1),
        }
    }
}

/// The run spec of a service: its program with the flags for its kind, listening on 127.0.0.1
/// (in a container: on every address inside, published on the host's 127.0.0.1 only), on one
/// process (the single launcher), named after the kind unless a name is given.
pub fn service_spec(req: &ServiceRequest, at: Placement<'_>) -> Result<RunSpec, ServiceError> {
    let dir = absolute(at.cwd, req.dir.as_deref());
    check_dir(req.kind, &dir)?;
    if req.image.is_none() && crate::host::find_program(req.kind.program()).is_none() {
        return Err(ServiceError::ProgramMissing {
            what: req.kind.what(),
            program: req.kind.program(),
            install: req.kind.install(),
        });
    }
    let ports = ports_for(req.kind, req.port)?;
    let port = |name: &str| ports.iter().find(|p| p.name == name).map_or(0, |p| p.port);
    let (address, inside) = match req.image {
        Some(_) => ("0.0.0.0", PathBuf::from(at.mount_point)),
        None => ("127.0.0.1", dir.clone()),
    };
    let mut env: std::collections::BTreeMap<String, String> = req.env.iter().cloned().collect();
    let command = match req.kind {
        ServiceKind::Notebook => {
            env.insert(TOKEN_VAR.into(), new_token()?);
            notebook_command(address, port("http"), &inside)
        }
        ServiceKind::Tensorboard => tensorboard_command(address, port("http"), &inside),
        ServiceKind::Triton => triton_command(
            address,
            [port("http"), port("grpc"), port("metrics")],
            &inside,
        ),
    };
    Ok(RunSpec {
        name: Some(req.name.clone().unwrap_or_else(|| req.kind.as_str().into())),
        command,
        image: req.image.clone(),
        gpus: req.gpus.clone(),
        launcher: Launcher::Single,
        workdir: Some(dir),
        env,
        service: Some(ServiceSpec {
            kind: req.kind,
            ports,
            idle_stop_secs: match req.kind {
                ServiceKind::Notebook => req.idle_stop.map(|d| d.as_secs().max(1)),
                _ => None,
            },
        }),
        ..RunSpec::default()
    })
}

fn absolute(cwd: &Path, dir: Option<&Path>) -> PathBuf {
    let joined = match dir {
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    std::path::absolute(&joined).unwrap_or(joined)
}

/// The directory must exist; a model repository is one directory per model.
fn check_dir(kind: ServiceKind, dir: &Path) -> Result<(), ServiceError> {
    let bad = |why: String| ServiceError::BadTarget {
        path: dir.to_path_buf(),
        why,
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(bad("it is not a directory".into())),
        Err(e) => return Err(bad(e.to_string())),
    }
    if kind == ServiceKind::Triton {
        let models = std::fs::read_dir(dir)
            .map_err(|e| bad(e.to_string()))?
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .count();
        if models == 0 {
            return Err(bad(
                "it holds no model: a model repository has one directory per model (MODEL/config.pbtxt, MODEL/1/...)".into(),
            ));
        }
    }
    Ok(())
}

/// The service's ports: the one asked for (checked free) first, free ones for the rest.
fn ports_for(kind: ServiceKind, asked: Option<u16>) -> Result<Vec<ServicePort>, ServiceError> {
    let mut held = Vec::new();
    let mut ports = Vec::new();
    for (i, name) in kind.port_names().iter().enumerate() {
        let listener = match (i, asked) {
            (0, Some(port)) => {
                TcpListener::bind(("127.0.0.1", port)).map_err(|e| ServiceError::PortBusy {
                    port,
                    why: match e.kind() {
                        std::io::ErrorKind::AddrInUse => "something else listens on it".into(),
                        std::io::ErrorKind::PermissionDenied => "ports below 1024 need root".into(),
                        _ => e.to_string(),
                    },
                })?
            }
            _ => TcpListener::bind("127.0.0.1:0")
                .map_err(|e| ServiceError::NoFreePort { why: e.to_string() })?,
        };
        let port = listener
            .local_addr()
            .map_err(|e| ServiceError::NoFreePort { why: e.to_string() })?
            .port();
        // Held until all are chosen, so two names never get the same port.
        held.push(listener);
        ports.push(ServicePort {
            name: (*name).to_string(),
            port,
        });
    }
    Ok(ports)
}

/// 32 random bytes as hex, from the kernel's generator.
fn new_token() -> Result<String, ServiceError> {
    let mut bytes = [0u8; 32];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| {
            ServiceError::Run(crate::runs::RunError::SupervisorFailed {
                id: "(none yet)".into(),
                why: format!("no random token could be made from /dev/urandom: {e}"),
            })
        })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn notebook_command(address: &str, port: u16, root: &Path) -> Vec<String> {
    let mut command = vec![
        "jupyter".into(),
        "lab".into(),
        "--no-browser".into(),
        format!("--ip={address}"),
        format!("--port={port}"),
        "--ServerApp.port_retries=0".into(),
        format!("--ServerApp.root_dir={}", root.display()),
    ];
    // Jupyter refuses to start as root unless told; gpudeck run as root means the user chose
    // it (and in a container the user is gpudeck's own).
    if crate::private_files::current_uid() == 0 {
        command.push("--allow-root".into());
    }
    command
}

fn tensorboard_command(address: &str, port: u16, logdir: &Path) -> Vec<String> {
    vec![
        "tensorboard".into(),
        format!("--logdir={}", logdir.display()),
        format!("--host={address}"),
        format!("--port={port}"),
    ]
}

fn triton_command(address: &str, [http, grpc, metrics]: [u16; 3], repo: &Path) -> Vec<String> {
    vec![
        "tritonserver".into(),
        format!("--model-repository={}", repo.display()),
        format!("--http-address={address}"),
        format!("--http-port={http}"),
        format!("--grpc-address={address}"),
        format!("--grpc-port={grpc}"),
        format!("--metrics-address={address}"),
        format!("--metrics-port={metrics}"),
    ]
}
