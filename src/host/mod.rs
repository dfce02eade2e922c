//! The process table seam: PID -> user, command line and container, and signalling processes.

mod cgroup;
mod error;
mod fake;
pub mod listeners;
mod name;
mod process;
mod process_ref;
mod procfs;
mod programs;
mod signal;
mod stat;
mod users;

pub use cgroup::{container_from_cgroup, ContainerRef, ContainerRuntime};
pub use error::HostError;
pub use fake::FakeProcessTable;
pub use name::hostname;
pub use process::{ProcessDetails, ProcessIdentity, ProcessTable, ProcessTarget, ProcessUsage};
pub use process_ref::ProcessRef;
pub use procfs::ProcFs;
pub use programs::{find_program, is_executable};
pub use signal::KillSignal;
pub use stat::{pids, ProcStat};
pub use users::{my_user_name, user_name_of};
