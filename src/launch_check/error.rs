//! Why a GPU container may not start, for a shell and a container run alike, each with what to
//! do about it.

use std::path::PathBuf;

use thiserror::Error;

/// The one message for "Docker cannot hand GPUs to containers", whether pre-flight found it or
/// the engine said so itself (`could not select device driver`).
pub const TOOLKIT_MESSAGE: &str = "NVIDIA Container Toolkit is not configured for Docker: install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`";

/// What was being started: where the way out differs (a shell has `--force`, a run can leave
/// out its image), the words say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Shell,
    Run,
}

impl Workload {
    /// What `--gpus none` gives instead.
    fn without_gpus(self) -> &'static str {
        match self {
            Workload::Shell => "gives a shell without GPUs",
            Workload::Run => "runs it without GPUs",
        }
    }

    /// The start of the "GPUs could not be read" sentence.
    fn unreadable(self) -> &'static str {
        match self {
            Workload::Shell => "GPUs were requested but they could not be read",
            Workload::Run => "GPUs could not be read",
        }
    }
}

/// A refusal of pre-flight that shells and container runs share.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum LaunchError {
    #[error("there is no GPU {missing}: this machine has {present}")]
    NoSuchGpu { missing: String, present: String },
    #[error("{}: {detail}", .workload.unreadable())]
    GpusUnreadable { workload: Workload, detail: String },
    #[error("{TOOLKIT_MESSAGE}")]
    NoToolkit { workload: Workload, detail: String },
    #[error("the image {image} is not on this machine")]
    ImageNotLocal { image: String },
    #[error("{image} will not run on this machine:\n{reasons}")]
    WontRun {
        workload: Workload,
        image: String,
        reasons: String,
    },
    #[error("refusing to mount {path} as the workspace: {why}")]
    DangerousWorkdir { path: PathBuf, why: String },
    #[error("the workspace {path} cannot be used: {why}")]
    BadWorkdir { path: PathBuf, why: String },
    #[error("refusing to mount {path} as the workspace:\nit holds the Unix socket {socket}")]
    WorkspaceSocket { path: PathBuf, socket: PathBuf },
    #[error("refusing to mount {path} as the workspace:\nit could not all be checked for Unix sockets:\n{why}")]
    WorkspaceUnchecked { path: PathBuf, why: String },
}

impl LaunchError {
    /// The GPUs cannot be used at all: the driver's error, or none there.
    pub fn gpus_unreadable(workload: Workload, detail: impl Into<String>) -> LaunchError {
        LaunchError::GpusUnreadable {
            workload,
            detail: detail.into(),
        }
    }

    /// What to do about it, in concrete steps.
    pub fn fix(&self) -> String {
        match self {
            LaunchError::NoSuchGpu { .. } => {
                "Pick from the GPUs listed (`gpudeck gpus` shows them), or `--gpus all`.".into()
            }
            LaunchError::GpusUnreadable { workload, .. } => format!(
                "Run `gpudeck doctor` to see why the driver cannot be read. Meanwhile `--gpus none` {}, and `--demo` tries gpudeck on simulated GPUs.",
                workload.without_gpus()
            ),
            LaunchError::NoToolkit { workload, .. } => format!(
                "Then `sudo systemctl restart docker`; `docker info | grep -i runtime` should list nvidia. Until then `--gpus none` {}.",
                workload.without_gpus()
            ),
            LaunchError::ImageNotLocal { image } => format!(
                "Pull it first: `gpudeck pull {image}` (gpudeck never pulls on its own; `gpudeck images` lists what is here)."
            ),
            LaunchError::WontRun { workload, .. } => {
                let otherwise = match workload {
                    Workload::Shell => "add --force to start it anyway",
                    Workload::Run => "run on the host (leave out the image)",
                };
                format!("Pick an image the verdicts allow (`gpudeck compat` lists them), or {otherwise}.")
            }
            LaunchError::DangerousWorkdir { .. } => {
                "Run gpudeck from your project directory or pass `--workdir ~/project`;\n\
                 the Docker socket must never be inside a container\n\
                 (--force does not change this).".into()
            }
            LaunchError::WorkspaceSocket { .. } => {
                "A socket in a container can forward to a host service (a Docker socket is root\n\
                 on this host). Move or delete it, or pass a --workdir that does not hold it\n\
                 (--force does not change this).".into()
            }
            LaunchError::WorkspaceUnchecked { .. } => {
                "Pass a narrower --workdir (the project, not the whole data tree), or raise\n\
                 workspace_scan_entries / workspace_scan_seconds under [shell] in config.toml\n\
                 (--force does not skip the check).".into()
            }
            LaunchError::BadWorkdir { .. } => {
                "Pass an existing directory with --workdir (or cd into one).".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words each workload had before the two shared this type.
    #[test]
    fn the_way_out_is_worded_for_what_was_started() {
        let shell = LaunchError::gpus_unreadable(Workload::Shell, "NVML: driver not loaded");
        let run = LaunchError::gpus_unreadable(Workload::Run, "NVML: driver not loaded");
        assert_eq!(
            shell.to_string(),
            "GPUs were requested but they could not be read: NVML: driver not loaded"
        );
        assert_eq!(
            run.to_string(),
            "GPUs could not be read: NVML: driver not loaded"
        );
        assert!(shell
            .fix()
            .contains("`--gpus none` gives a shell without GPUs, and"));
        assert!(run
            .fix()
            .contains("`--gpus none` runs it without GPUs, and"));
        let toolkit = |workload| LaunchError::NoToolkit {
            workload,
            detail: String::new(),
        };
        assert_eq!(toolkit(Workload::Shell).to_string(), TOOLKIT_MESSAGE);
        assert!(toolkit(Workload::Shell)
            .fix()
            .ends_with("Until then `--gpus none` gives a shell without GPUs."));
        assert!(toolkit(Workload::Run)
            .fix()
            .ends_with("Until then `--gpus none` runs it without GPUs."));
        let wont_run = |workload| LaunchError::WontRun {
            workload,
            image: "new:1".into(),
            reasons: "  - r".into(),
        };
        assert!(wont_run(Workload::Shell)
            .fix()
            .ends_with("or add --force to start it anyway."));
        assert!(wont_run(Workload::Run)
            .fix()
            .ends_with("or run on the host (leave out the image)."));
    }
}
