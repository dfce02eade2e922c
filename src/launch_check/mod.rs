//! What every GPU container (a shell, a container run) passes before it starts, and the one error
//! type for its refusals: the GPUs named are on this host, the engine can hand GPUs over, the
//! image is here and will run on this driver, the workspace is safe to mount.

mod engine;
mod error;
mod gpus;
mod image;
mod workspace;

pub use engine::{gpu_plumbing, GpuPlumbing};
pub use error::{LaunchError, Workload, TOOLKIT_MESSAGE};
pub use gpus::{check_readable, find_gpus};
pub use image::{find_local, judge_image, PreflightContext};
#[cfg(test)]
pub(crate) use workspace::SYSTEM_PATHS_FOR_TESTS;
pub use workspace::{
    check_workspace, refuse_dangerous_workdir, refuse_engine_dir, refuse_sockets_below,
    resolve_workdir, ScanLimits, WorkspaceGuard, MAX_DEPTH, SYSTEM_DIRS,
};
