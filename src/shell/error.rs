//! Why a shell could not be opened or ended badly, each with what to do about it.

use thiserror::Error;

use crate::docker::DockerError;
use crate::launch_check::{LaunchError, Workload};

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
    /// What pre-flight shares with container runs: GPUs, toolkit, image, verdict, workspace.
    #[error("{0}")]
    Launch(LaunchError),
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
            ShellError::Launch(e) => e.fix(),
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
            DockerError::NoGpuRuntime { detail } => ShellError::Launch(LaunchError::NoToolkit {
                workload: Workload::Shell,
                detail,
            }),
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

impl From<LaunchError> for ShellError {
    fn from(e: LaunchError) -> Self {
        ShellError::Launch(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch_check::TOOLKIT_MESSAGE;

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
            ShellError::Launch(LaunchError::ImageNotLocal {
                image: "x:1".into(),
            }),
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
