//! Shells in containers: the container spec built from a request, pre-flight against the machine,
//! the attached session, and the `gpudeck shell` command.

mod claim;
pub mod cli;
mod defaults;
mod error;
mod hangup;
mod kept;
mod options;
mod preflight;
mod session;
pub(crate) mod size;
mod spec;
mod stdio;

pub use crate::config::UserMode;
pub use claim::{claim_gpus, reclaim_kept, ShellClaim};
pub use defaults::{check_network, ShellDefaults};
pub use error::ShellError;
pub use hangup::{stop_after_hangup, HangUp};
pub use kept::{find_shell, kept_shells, render_shells, KeptShell};
pub use options::ShellOptions;
pub use preflight::{preflight, suggest_free_gpus, Preflight};
pub use session::{create, finish, reenter, run_attached, run_attached_watching};
pub use size::{parse_limit, parse_size};
pub use spec::{
    container_body, ResolvedGpu, ResolvedGpus, ShellGpus, ShellRequest, DEFAULT_SHELL, LABEL_GPUS,
    LABEL_GPU_INDICES, LABEL_SHELL, LABEL_WORKDIR, SHELL_HOME,
};
// The shared pre-flight's names that a shell's own API shows (`container_body` takes the
// plumbing; the toolkit message is what a shell prints when Docker has no GPUs to give).
pub use crate::launch_check::{GpuPlumbing, TOOLKIT_MESSAGE};
