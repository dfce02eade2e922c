//! NVIDIA Triton Inference Server as a service: where an installed `tritonserver` keeps its
//! backends, its command line and environment; what its answers say is in `api` (repository
//! index, readiness) and `metrics` (per-model inference statistics).
//!
//! Checked against tritonserver 2.51.0 as the nvidia-pytriton 0.7.0 wheel ships it, on a
//! machine without a GPU:
//! - The wheel's layout: `site-packages/pytriton/tritonserver/bin/tritonserver`, its libraries
//!   in `site-packages/nvidia_pytriton.libs` (found through the binary's RPATH, so no
//!   LD_LIBRARY_PATH is needed for the server itself), `tritonserver/backends/python/`
//!   (`libtriton_python.so`, `triton_python_backend_utils.py`) and one python backend stub per
//!   Python version in `tritonserver/python_backend_stubs/3.X/triton_python_backend_stub`.
//! - The python backend runs its stub from its own directory, where the wheel has none:
//!   pytriton copies the tree and the stub for its Python into a workspace. gpudeck instead
//!   makes a backend directory of links ([`prepare_backend_directory`]): `python/` with the
//!   backend library, its utilities and the stub of the wheel's Python version (the
//!   `lib/python3.X/site-packages` the wheel sits in).
//! - The stub embeds Python (it links `libpython3.X.so.1.0`) and finds its packages (numpy,
//!   which every python model imports through `triton_python_backend_utils`) through the
//!   first `python3` on PATH: the wheel's environment's `bin` must come first on PATH, or the
//!   model fails to load with "ModuleNotFoundError: No module named 'numpy'"
//!   ([`triton_env`]). The stub's `libpython` is the one the environment's Python was built
//!   with when that one is not in the system's library path (pyenv, conda).
//! - No GPU needed: it warns "Unable to allocate pinned system memory ... CUDA driver version
//!   is insufficient", logs "CudaDriverHelper has not been initialized", "Failed to initialize
//!   NVML" and "DCGM unable to start", then serves models of `instance_group { kind: KIND_CPU }`
//!   and CPU metrics. A python identity model is READY in about 2 s.
//! - `--http-address`, `--grpc-address` and `--metrics-address` all exist (each defaults to
//!   0.0.0.0, the metrics one to the HTTP one): all three are set to 127.0.0.1.
//!   `--allow-metrics=true` serves Prometheus text on `--metrics-port` at `/metrics`.
//! - A model that fails to load stops the server at start (exit status 1, "error: creating
//!   server: Internal - failed to load all models") unless `--exit-on-error=false`; gpudeck
//!   keeps Triton's default, so the run fails with the model table in its log.
//! - SIGTERM unloads the models (their stubs exit) and ends the server within seconds, with
//!   status 0, but only once no HTTP connection is open: a client keeping one alive holds it
//!   up to `--exit-timeout-secs` (default 30), after which it exits with status 1 ("failed to
//!   stop server: Internal - Exit timeout expired"). gpudeck's probes keep no idle connection
//!   (`probe::client`); a run's stop grace should outlast that timeout.

pub mod api;
pub mod metrics;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use api::{parse_repository_index, Model, ModelState};
pub use metrics::{parse_metrics, ModelStats};

/// The loopback ports a Triton service listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TritonPorts {
    pub http: u16,
    pub grpc: u16,
    pub metrics: u16,
}

/// How long Triton, told to stop, waits for open HTTP connections (a browser's kept-alive
/// one) before it exits anyway: well inside the grace a stop gives before SIGKILL.
pub const EXIT_TIMEOUT_SECS: u32 = 5;

/// `tritonserver` serving the model repository `repo`, every endpoint on `address` (127.0.0.1
/// on the host, every address in a container), with the backends in `backends` (see
/// [`prepare_backend_directory`]; `None`: its own, as in NVIDIA's image).
pub fn triton_command(
    tritonserver: &Path,
    address: &str,
    repo: &Path,
    backends: Option<&Path>,
    ports: TritonPorts,
) -> Vec<String> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut command = vec![
        path(tritonserver),
        format!("--model-repository={}", path(repo)),
    ];
    if let Some(backends) = backends {
        command.push(format!("--backend-directory={}", path(backends)));
    }
    command.extend([
        format!("--http-address={address}"),
        format!("--http-port={}", ports.http),
        format!("--grpc-address={address}"),
        format!("--grpc-port={}", ports.grpc),
        "--allow-metrics=true".into(),
        format!("--metrics-address={address}"),
        format!("--metrics-port={}", ports.metrics),
        format!("--exit-timeout-secs={EXIT_TIMEOUT_SECS}"),
    ]);
    command
}

/// Why a `tritonserver` cannot be used as found.
#[derive(Debug, thiserror::Error)]
pub enum TritonSetupError {
    #[error("{} has no backends beside it: no {} and no python backend stubs of the nvidia-pytriton wheel", server.display(), backends.display())]
    NoBackends { server: PathBuf, backends: PathBuf },
    #[error("{} is not in a Python environment's lib/python3.X/site-packages, so which Python backend stub it needs is unknown", server.display())]
    UnknownPython { server: PathBuf },
    #[error("nvidia-pytriton ships no python backend stub for Python {version} ({} is missing)", stub.display())]
    NoStub { version: String, stub: PathBuf },
    #[error("the backend directory {} could not be made: {source}", dir.display())]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// Where a `tritonserver` binary sits, and what it needs around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TritonInstall {
    /// The directory above `bin/`: `/opt/tritonserver`, or `.../pytriton/tritonserver`.
    pub root: PathBuf,
    /// For the pytriton wheel: the Python environment it is installed in (`X/lib/python3.Y/
    /// site-packages/pytriton/...` gives `X`) and its version (`3.Y`).
    pub python: Option<(PathBuf, String)>,
}

impl TritonInstall {
    /// Reads the layout from the binary's path; nothing on disk is looked at.
    pub fn from_binary(tritonserver: &Path) -> TritonInstall {
        let root = tritonserver
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        let python = root.ancestors().find_map(|dir| {
            let version = dir.file_name()?.to_str()?.strip_prefix("python")?;
            let lib = dir.parent()?;
            (lib.file_name()? == "lib" && version.starts_with("3.")).then(|| {
                (
                    lib.parent().unwrap_or(lib).to_path_buf(),
                    version.to_string(),
                )
            })
        });
        TritonInstall { root, python }
    }
}

/// The backend directory to give `tritonserver`. A full install (`/opt/tritonserver`, the NGC
/// image) has one with the python stub inside: it is used as is. The pytriton wheel's lacks
/// the stub: `scratch/python/` is made of links to its backend and to the stub of its Python,
/// and `scratch` is returned (any other backend the wheel has is linked beside it).
pub fn prepare_backend_directory(
    tritonserver: &Path,
    scratch: &Path,
) -> Result<PathBuf, TritonSetupError> {
    let install = TritonInstall::from_binary(tritonserver);
    let backends = install.root.join("backends");
    if backends.join("python/triton_python_backend_stub").exists() {
        return Ok(backends);
    }
    let stubs = install.root.join("python_backend_stubs");
    if !stubs.is_dir() || !backends.join("python").is_dir() {
        return Err(TritonSetupError::NoBackends {
            server: tritonserver.to_path_buf(),
            backends,
        });
    }
    let Some((_, version)) = install.python else {
        return Err(TritonSetupError::UnknownPython {
            server: tritonserver.to_path_buf(),
        });
    };
    let stub = stubs.join(&version).join("triton_python_backend_stub");
    if !stub.is_file() {
        return Err(TritonSetupError::NoStub { version, stub });
    }
    link_backends(&backends, &stub, scratch).map_err(|source| TritonSetupError::Io {
        dir: scratch.to_path_buf(),
        source,
    })?;
    Ok(scratch.to_path_buf())
}

fn link_backends(backends: &Path, stub: &Path, scratch: &Path) -> std::io::Result<()> {
    let python = scratch.join("python");
    std::fs::create_dir_all(&python)?;
    let mut links = vec![(
        stub.to_path_buf(),
        python.join("triton_python_backend_stub"),
    )];
    for entry in std::fs::read_dir(backends.join("python"))? {
        let entry = entry?;
        if entry.file_name() != "__pycache__" {
            links.push((entry.path(), python.join(entry.file_name())));
        }
    }
    for entry in std::fs::read_dir(backends)? {
        let entry = entry?;
        if entry.file_name() != "python" {
            links.push((entry.path(), scratch.join(entry.file_name())));
        }
    }
    for (target, link) in links {
        // A directory prepared before (the same service started again) is brought up to date.
        match std::fs::symlink_metadata(&link) {
            Ok(_) => std::fs::remove_file(&link)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::os::unix::fs::symlink(&target, &link)?;
    }
    Ok(())
}

/// The environment `tritonserver` needs beside the caller's, given the caller's `PATH` and
/// `LD_LIBRARY_PATH`: for the pytriton wheel, its environment's `bin` first on PATH (the
/// python stub finds its packages through it) and, where the environment names its Python's
/// home (`pyvenv.cfg`) and that has the `libpython` the stub links, that library directory
/// first on LD_LIBRARY_PATH. Empty for a full install. Reads `pyvenv.cfg` and looks for the
/// library.
pub fn triton_env(
    install: &TritonInstall,
    path: Option<OsString>,
    ld_library_path: Option<OsString>,
) -> Vec<(String, OsString)> {
    let Some((env_dir, version)) = &install.python else {
        return Vec::new();
    };
    let mut vars = vec![(
        "PATH".to_string(),
        prepend(
            env_dir.join("bin"),
            path.unwrap_or_else(|| "/usr/bin:/bin".into()),
        ),
    )];
    let home = std::fs::read_to_string(env_dir.join("pyvenv.cfg"))
        .ok()
        .and_then(|cfg| venv_home(&cfg));
    if let Some(lib) = home.and_then(|home| home.parent().map(|p| p.join("lib"))) {
        if lib.join(format!("libpython{version}.so.1.0")).exists() {
            vars.push((
                "LD_LIBRARY_PATH".to_string(),
                prepend(lib, ld_library_path.unwrap_or_default()),
            ));
        }
    }
    vars
}

/// The `home = DIR` line of a `pyvenv.cfg`: the `bin` of the Python it was made from.
fn venv_home(cfg: &str) -> Option<PathBuf> {
    cfg.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    })
}

fn prepend(dir: PathBuf, rest: OsString) -> OsString {
    let mut value = dir.into_os_string();
    if !rest.is_empty() {
        value.push(":");
        value.push(rest);
    }
    value
}

#[cfg(test)]
mod setup_tests;
