//! A service request turned into a run spec: the program and its flags for the kind, where it
//! runs (a container of a local image, or this machine), its loopback ports and its token.

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use super::error::ServiceError;
use super::{jupyter, tensorboard, triton};
use crate::runs::{GpuSelection, Launcher, RunSpec, ServiceKind, ServicePort, ServiceSpec};

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

/// Where the request is made from, and what the placement needs.
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    pub cwd: &'a Path,
    /// Where the service's directory is seen inside a container (`[shell] mount_point`).
    pub mount_point: &'a str,
    /// A private directory gpudeck may make things in (the state dir): the backend directory
    /// a host Triton from the nvidia-pytriton wheel needs.
    pub scratch: &'a Path,
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

    /// Who can open it, in a line for `services` and the start: every user of this machine
    /// (its port is on 127.0.0.1, a container's also at its address on its own network, which
    /// the host reaches), and what keeps them out; no other container, for one in a container.
    pub fn who_reaches(self, in_container: bool) -> &'static str {
        match (self, in_container) {
            (ServiceKind::Notebook, false) => "every user of this machine; its token keeps them out",
            (ServiceKind::Notebook, true) => {
                "every user of this machine, no other container; its token keeps them out"
            }
            (_, false) => "every user of this machine, with no password (it asks for none)",
            (_, true) => {
                "every user of this machine, no other container; with no password (it asks for none)"
            }
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
                "Install it in your environment (`pip install jupyterlab`) and activate that environment, or run it in an image that has it: `gpudeck notebook IMAGE` (an image with JupyterLab, e.g. `gpudeck pull tensorflow/tensorflow:2.17.0-gpu-jupyter`; `gpudeck compat` lists the catalog's images)."
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
    // On this machine: the program PATH finds, by its full path. In a container: the image's.
    let program = match &req.image {
        Some(_) => PathBuf::from(req.kind.program()),
        None => find_host_program(req.kind).ok_or(ServiceError::ProgramMissing {
            what: req.kind.what(),
            program: req.kind.program(),
            install: req.kind.install(),
        })?,
    };
    let ports = ports_for(req.kind, req.port)?;
    let port = |name: &str| ports.iter().find(|p| p.name == name).map_or(0, |p| p.port);
    let (address, inside) = match req.image {
        Some(_) => ("0.0.0.0", PathBuf::from(at.mount_point)),
        None => ("127.0.0.1", dir.clone()),
    };
    let mut env: std::collections::BTreeMap<String, String> = req.env.iter().cloned().collect();
    let command = match req.kind {
        ServiceKind::Notebook => {
            let token =
                jupyter::new_token().map_err(|e| ServiceError::NoToken { why: e.to_string() })?;
            env.extend(jupyter::notebook_env(&token));
            jupyter::notebook_command(&program, address, port("http"), &inside)
        }
        ServiceKind::Tensorboard => {
            tensorboard::tensorboard_command(&program, address, &inside, port("http"))
        }
        ServiceKind::Triton => {
            let ports = triton::TritonPorts {
                http: port("http"),
                grpc: port("grpc"),
                metrics: port("metrics"),
            };
            let backends = match req.image {
                Some(_) => None,
                None => Some(host_triton(&program, at.scratch, &mut env)?),
            };
            triton::triton_command(&program, address, &inside, backends.as_deref(), ports)
        }
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

/// What a `tritonserver` on this machine needs: its backend directory (made under `scratch`
/// for the nvidia-pytriton wheel's) and its environment's PATH and library path in `env`.
fn host_triton(
    tritonserver: &Path,
    scratch: &Path,
    env: &mut std::collections::BTreeMap<String, String>,
) -> Result<PathBuf, ServiceError> {
    let install = triton::TritonInstall::from_binary(tritonserver);
    let path = env
        .get("PATH")
        .map(Into::into)
        .or_else(|| std::env::var_os("PATH"));
    let libs = std::env::var_os("LD_LIBRARY_PATH");
    for (name, value) in triton::triton_env(&install, path, libs) {
        env.insert(name, value.to_string_lossy().into_owned());
    }
    let scratch = scratch.join("triton-backends");
    crate::private_files::create_own_dir(&scratch).map_err(|e| ServiceError::TritonSetup {
        why: format!(
            "its backend directory {} cannot be made: {e}",
            scratch.display()
        ),
    })?;
    triton::prepare_backend_directory(tritonserver, &scratch)
        .map_err(|e| ServiceError::TritonSetup { why: e.to_string() })
}

/// The program of `kind` on this machine: the first on PATH; for Triton, else the
/// `tritonserver` the nvidia-pytriton wheel keeps inside a Python environment on PATH (a venv's
/// or conda env's `bin`), which pip does not put on PATH.
fn find_host_program(kind: ServiceKind) -> Option<PathBuf> {
    if let Some(found) = crate::host::find_program(kind.program()) {
        return Some(found);
    }
    if kind != ServiceKind::Triton {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|bin| wheel_tritonserver(&bin))
}

/// `ENV/lib/python3.X/site-packages/pytriton/tritonserver/bin/tritonserver` for the
/// environment whose `bin` is `bin`.
fn wheel_tritonserver(bin: &Path) -> Option<PathBuf> {
    let lib = bin.parent()?.join("lib");
    std::fs::read_dir(lib)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| {
            e.path()
                .join("site-packages/pytriton/tritonserver/bin/tritonserver")
        })
        .find(|server| crate::host::is_executable(server))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_wheels_tritonserver_is_found_inside_an_environment_on_path() {
        let env = tempfile::tempdir().expect("tempdir");
        let bin = env.path().join("bin");
        let server = env
            .path()
            .join("lib/python3.11/site-packages/pytriton/tritonserver/bin/tritonserver");
        std::fs::create_dir_all(&bin).expect("bin");
        assert_eq!(wheel_tritonserver(&bin), None);
        std::fs::create_dir_all(server.parent().expect("dir")).expect("dirs");
        std::fs::write(&server, "#!/bin/sh\n").expect("write");
        assert_eq!(wheel_tritonserver(&bin), None, "not executable yet");
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(wheel_tritonserver(&bin), Some(server));
    }
}

/// A service started again from its own spec (`gpudeck rerun`, the Services tab's `R`): same
/// command, GPUs and port, with a fresh notebook token unless `keep_token`. Whoever saw the old
/// token (a neighbour who took its port while it was down, a pasted URL) cannot use it.
pub fn restart(
    run: &crate::runs::Run,
    ctx: &crate::runs::StartContext<'_>,
    (keep_token, gpus): (bool, Option<GpuSelection>),
) -> Result<crate::runs::Started, crate::runs::RunError> {
    let mut spec = run.spec()?;
    if let Some(gpus) = gpus {
        spec.gpus = gpus;
    }
    if !keep_token {
        fresh_token(&mut spec).map_err(|why| crate::runs::RunError::SupervisorFailed {
            id: run.id().to_string(),
            why,
        })?;
    }
    crate::runs::rerun_local_as(run, spec, ctx)
}

/// Replaces a notebook spec's token with a new one; other specs are left as they are.
fn fresh_token(spec: &mut RunSpec) -> Result<(), String> {
    let notebook = spec
        .service
        .as_ref()
        .is_some_and(|s| s.kind == ServiceKind::Notebook);
    if notebook && spec.env.contains_key(jupyter::TOKEN_ENV) {
        let token =
            jupyter::new_token().map_err(|e| format!("a new token could not be made: {e}"))?;
        spec.env.extend(jupyter::notebook_env(&token));
    }
    Ok(())
}

#[cfg(test)]
mod restart_tests {
    use super::*;

    #[test]
    fn a_notebooks_spec_gets_a_new_token_and_other_specs_keep_their_env() {
        let mut spec = RunSpec {
            service: Some(ServiceSpec {
                kind: ServiceKind::Notebook,
                ports: vec![ServicePort {
                    name: "http".into(),
                    port: 8888,
                }],
                idle_stop_secs: None,
            }),
            ..RunSpec::default()
        };
        spec.env.insert(jupyter::TOKEN_ENV.into(), "old".into());
        spec.env.insert("OTHER".into(), "kept".into());
        fresh_token(&mut spec).unwrap();
        let token = &spec.env[jupyter::TOKEN_ENV];
        assert_ne!(token, "old");
        assert_eq!(token.len(), 48, "24 random bytes in hex: {token}");
        assert_eq!(spec.env["OTHER"], "kept");

        let mut board = spec.clone();
        board.service.as_mut().unwrap().kind = ServiceKind::Tensorboard;
        board
            .env
            .insert(jupyter::TOKEN_ENV.into(), "user's own".into());
        fresh_token(&mut board).unwrap();
        assert_eq!(board.env[jupyter::TOKEN_ENV], "user's own");
    }
}
