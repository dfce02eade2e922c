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
mod workspace;

pub use crate::config::UserMode;
pub use claim::{claim_gpus, reclaim_kept, ShellClaim};
pub use defaults::{check_network, ShellDefaults};
pub use error::{ShellError, TOOLKIT_MESSAGE};
pub use hangup::{stop_after_hangup, HangUp};
pub use kept::{find_shell, kept_shells, render_shells, KeptShell};
pub use options::ShellOptions;
pub use preflight::{
    find_local, gpu_plumbing, judge_image, preflight, suggest_free_gpus, Preflight,
    PreflightContext,
};
pub use session::{create, finish, reenter, run_attached, run_attached_watching};
pub use size::{parse_limit, parse_size};
pub use spec::{
    container_body, refuse_dangerous_workdir, GpuPlumbing, ResolvedGpu, ResolvedGpus, ShellGpus,
    ShellRequest, DEFAULT_SHELL, LABEL_GPUS, LABEL_GPU_INDICES, LABEL_SHELL, LABEL_WORKDIR,
    SHELL_HOME, SYSTEM_DIRS,
};
pub use workspace::{check_workspace, ScanLimits, WorkspaceGuard};
