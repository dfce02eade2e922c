//! The process table seam: PID -> user, command line and container, and signalling processes.

mod cgroup;
mod error;
mod fake;
mod name;
mod procfs;
mod users;

use std::fmt;

pub use cgroup::{container_from_cgroup, ContainerRef, ContainerRuntime};
pub use error::HostError;
pub use fake::FakeProcessTable;
pub use name::hostname;
pub use procfs::ProcFs;

/// What the host knows about one process, for the GPU process table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessDetails {
    pub pid: u32,
    /// The real user's name, or the numeric uid when it has no passwd entry.
    pub user: Option<String>,
    /// The command line joined with spaces, or `[name]` for a kernel thread.
    pub command: Option<String>,
    pub container: Option<ContainerRef>,
}

/// The signals gpudeck offers for ending a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KillSignal {
    /// Ask politely: the process may clean up (free GPU memory, write a checkpoint).
    Term,
    /// Cannot be caught; for a process that ignored `Term`.
    Kill,
}

impl KillSignal {
    pub(crate) fn as_raw(self) -> libc::c_int {
        match self {
            Self::Term => libc::SIGTERM,
            Self::Kill => libc::SIGKILL,
        }
    }
}

impl fmt::Display for KillSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Term => "SIGTERM",
            Self::Kill => "SIGKILL",
        })
    }
}

/// The host's processes, as the GPU process panel needs them.
pub trait ProcessTable: Send + Sync {
    /// Details of a live process; `None` when the PID no longer exists.
    fn describe(&self, pid: u32) -> Option<ProcessDetails>;

    fn signal(&self, pid: u32, signal: KillSignal) -> Result<(), HostError>;
}
