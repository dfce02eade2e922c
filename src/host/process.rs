//! One process as the host describes it, how it is picked out, and the `ProcessTable` seam the
//! real process table and the fake both implement.

use super::cgroup::ContainerRef;
use super::error::HostError;
use super::signal::KillSignal;

/// What the host knows about one process, for the GPU process table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessDetails {
    pub pid: u32,
    /// The real user's name, or the numeric uid when it has no passwd entry.
    pub user: Option<String>,
    /// The command line joined with spaces, or `[name]` for a kernel thread.
    pub command: Option<String>,
    pub container: Option<ContainerRef>,
    /// Who it is beyond its PID; `None` when `/proc/PID/stat` could not be read.
    pub identity: Option<ProcessIdentity>,
}

/// A process beyond its PID: the start time names it for the machine's life (a PID reused by a
/// new process has a later one), and the owner, group and session tell whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessIdentity {
    /// Clock ticks after boot (field 22 of `/proc/PID/stat`).
    pub start_ticks: u64,
    /// The same moment as Unix milliseconds, to within the second boot time is given in.
    pub started_unix_ms: Option<u64>,
    /// The real user id.
    pub uid: Option<u32>,
    pub pgid: u32,
    pub session: u32,
}

/// What a process uses of the host at one moment; CPU percent comes from two of these.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessUsage {
    /// CPU time in user and kernel mode since it started, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory (RSS); `None` when it could not be read.
    pub rss_bytes: Option<u64>,
}

/// One process as the user picked it: its PID and, when known, its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessTarget {
    pub pid: u32,
    pub start_ticks: Option<u64>,
}

/// The host's processes, as the GPU process panel needs them.
pub trait ProcessTable: Send + Sync {
    /// Details of a live process; `None` when the PID no longer exists.
    fn describe(&self, pid: u32) -> Option<ProcessDetails>;

    fn signal(&self, pid: u32, signal: KillSignal) -> Result<(), HostError>;

    /// Its CPU time and resident memory now; `None` when the PID is gone or cannot tell.
    fn usage(&self, _pid: u32) -> Option<ProcessUsage> {
        None
    }

    /// The start time of the process that has this PID now; `None` when there is none.
    fn start_ticks(&self, pid: u32) -> Option<u64>;

    /// Signals the process only while the PID still names the one that started at
    /// `target.start_ticks`: one that exited and left its PID to another is never signalled.
    /// A target without a start time is refused, since it cannot be told apart from a newcomer.
    fn signal_exact(&self, target: ProcessTarget, signal: KillSignal) -> Result<(), HostError> {
        let pid = target.pid;
        let wanted = target.start_ticks.ok_or(HostError::Unidentified { pid })?;
        match self.start_ticks(pid) {
            None => Err(HostError::Exited { pid }),
            Some(now) if now != wanted => Err(HostError::Replaced { pid }),
            Some(_) => self.signal(pid, signal),
        }
    }
}
