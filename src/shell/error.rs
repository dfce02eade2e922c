//! Why a shell could not be opened or ended badly, each with what to do about it.

use std::path::PathBuf;

use thiserror::Error;

use crate::docker::DockerError;

/// The one message for "Docker cannot hand GPUs to containers", whether pre-flight found it or
/// the engine said so itself (`could not select device driver`).
pub const TOOLKIT_MESSAGE: &str = "NVIDIA Container Toolkit is not configured for Docker: install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`";

/// A failure of `gpudeck shell` (or the TUI's shell) before or around the session.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ShellError {
    #[error("`{value}` is not a GPU selection: {why}")]
    BadGpuList { value: String, why: String },
    #[error("`{value}` is not a size: {why}")]
    BadSize { value: String, why: String },
    #[error("shell.{key} = {value:?} in the config is not valid: {why}")]
    BadSetting {
        key: &'static str,
        value: String,
        why: String,
    },
    #[error("there is no GPU {missing}: this machine has {present}")]
    NoSuchGpu { missing: String, present: String },
    #[error("GPUs were requested but they could not be read: {detail}")]
    GpusUnreadable { detail: String },
    #[error("{TOOLKIT_MESSAGE}")]
    NoToolkit { detail: String },
    #[error("the image {image} is not on this machine")]
    ImageNotLocal { image: String },
    #[error("{image} will not run on this machine:\n{reasons}")]
    WontRun { image: String, reasons: String },
    #[error("refusing to mount {path} as the workspace: {why}")]
    DangerousWorkdir { path: PathBuf, why: String },
    #[error("the workspace {path} cannot be used: {why}")]
    BadWorkdir { path: PathBuf, why: String },
    #[error("refusing to mount {path} as the workspace:\nit holds the Unix socket {socket}")]
    WorkspaceSocket { path: PathBuf, socket: PathBuf },
    #[error("refusing to mount {path} as the workspace:\nit could not all be checked for Unix sockets:\n{why}")]
    WorkspaceUnchecked { path: PathBuf, why: String },
    #[error("no kept shell is called {name}")]
    NoSuchShell { name: String },
    #[error("detached from the shell {id}; it keeps running")]
    Detached { id: String },
    #[error("the shell {id} lost its terminal ({why})")]
    HungUp { id: String, why: &'static str },
    #[error("nobody reads the output of the shell {id} any more")]
    ReaderGone { id: String },
    #[error("the terminal could not be set up: {detail}")]
    Terminal { detail: String },
    #[error("Docker could not set the shell's {limit} limit: {detail}")]
    Rlimit { limit: &'static str, detail: String },
    #[error("{0}")]
    Docker(DockerError),
}

impl ShellError {
    /// What to do about it, in concrete steps.
    pub fn fix(&self) -> String {
        match self {
            ShellError::BadGpuList { .. } => {
                "Write `--gpus none`, `--gpus all` or GPU indices such as `--gpus 2,3` (see `gpudeck gpus`).".into()
            }
            ShellError::BadSize { .. } => {
                "Write a size such as 512MiB, 8GiB or 16g (units B, KiB, MiB, GiB, TiB; K, M, G, T are the same).".into()
            }
            ShellError::BadSetting { .. } => {
                "Correct it in config.toml (config/default.toml documents every [shell] key) or delete the line to use the default.".into()
            }
            ShellError::NoSuchGpu { .. } => {
                "Pick from the GPUs listed (`gpudeck gpus` shows them), or `--gpus all`.".into()
            }
            ShellError::GpusUnreadable { .. } => {
                "Run `gpudeck doctor` to see why the driver cannot be read. Meanwhile `--gpus none` gives a shell without GPUs, and `--demo` tries gpudeck on simulated GPUs.".into()
            }
            ShellError::NoToolkit { .. } => {
                "Then `sudo systemctl restart docker`; `docker info | grep -i runtime` should list nvidia. Until then `--gpus none` gives a shell without GPUs.".into()
            }
            ShellError::ImageNotLocal { image } => format!(
                "Pull it first: gpudeck pull {image} (gpudeck never pulls on its own; `gpudeck images` lists what is here)."
            ),
            ShellError::WontRun { .. } => {
                "Pick an image the verdicts allow (`gpudeck compat` lists them), or add --force to start it anyway.".into()
            }
            ShellError::DangerousWorkdir { .. } => {
                "Run gpudeck from your project directory or pass `--workdir ~/project`;\n\
                 the Docker socket must never be inside a container\n\
                 (--force does not change this).".into()
            }
            ShellError::WorkspaceSocket { .. } => {
                "A socket in a container can forward to a host service (a Docker socket is root\n\
                 on this host). Move or delete it, or pass a --workdir that does not hold it\n\
                 (--force does not change this).".into()
            }
            ShellError::WorkspaceUnchecked { .. } => {
                "Pass a narrower --workdir (the project, not the whole data tree), or raise\n\
                 workspace_scan_entries / workspace_scan_seconds under [shell] in config.toml\n\
                 (--force does not skip the check).".into()
            }
            ShellError::BadWorkdir { .. } => {
                "Pass an existing directory with --workdir (or cd into one).".into()
            }
            ShellError::NoSuchShell { .. } => {
                "`gpudeck shell --list` shows the kept shells by name.".into()
            }
            ShellError::Detached { id } => format!(
                "Re-enter it with `gpudeck shell --attach NAME` (`gpudeck shell --list` shows it), or remove it: `docker rm -f {id}`."
            ),
            ShellError::HungUp { .. } => "It was stopped, so it does not hold its GPUs; a kept shell stays \
                 (`gpudeck shell --attach NAME` starts it again), any other is removed."
                .into(),
            ShellError::ReaderGone { .. } => {
                "Nothing to do: the output's reader ended on purpose (`| head`).".into()
            }
            ShellError::Terminal { .. } => {
                "Run it from a terminal, or pipe its input; `stty sane` repairs a terminal left in raw mode.".into()
            }
            ShellError::Rlimit { limit, .. } => format!(
                "The Docker daemon's own {limit} limit is lower and it may not raise it (no CAP_SYS_RESOURCE). \
                 Set `{limit} = \"default\"` (or a smaller size) under [shell] in config.toml, or raise the daemon's \
                 limit (systemd: LimitMEMLOCK=infinity / LimitSTACK=infinity for docker.service)."
            ),
            ShellError::Docker(e) => e.fix().into(),
        }
    }
}

impl From<DockerError> for ShellError {
    /// The engine's own "no GPU driver" answer means what pre-flight would have said.
    fn from(e: DockerError) -> Self {
        match e {
            DockerError::NoGpuRuntime { detail } => ShellError::NoToolkit { detail },
            DockerError::Other(detail) if detail.contains("error setting rlimit") => {
                // runc names the limit by number: RLIMIT_STACK is 3, RLIMIT_MEMLOCK 8.
                let limit = if detail.contains("rlimit type 3") {
                    "stack"
                } else {
                    "memlock"
                };
                ShellError::Rlimit { limit, detail }
            }
            other => ShellError::Docker(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_gpu_refusal_reads_as_the_toolkit_message() {
        let engine = DockerError::NoGpuRuntime {
            detail: "could not select device driver \"\" with capabilities: [[gpu]]".into(),
        };
        let err = ShellError::from(engine);
        assert_eq!(err.to_string(), TOOLKIT_MESSAGE);
        assert!(err.fix().contains("systemctl restart docker"));
        let other = ShellError::from(DockerError::Other("boom".into()));
        assert_eq!(other.to_string(), "Docker Engine error: boom");
    }

    #[test]
    fn every_error_says_what_to_do() {
        let errors = [
            ShellError::ImageNotLocal {
                image: "x:1".into(),
            },
            ShellError::NoSuchShell { name: "n".into() },
            ShellError::BadGpuList {
                value: "a".into(),
                why: "b".into(),
            },
        ];
        assert!(errors[0].fix().contains("gpudeck pull x:1"));
        for e in errors {
            assert!(!e.fix().is_empty(), "{e}");
        }
    }
}
