//! One process named for the life of the machine: its pid and its start time, so a reused pid
//! is not mistaken for the process it once named.

use serde::{Deserialize, Serialize};

use super::stat::ProcStat;

/// A process as recorded in `run.json`: its pid and its start time in clock ticks after boot
/// (field 22 of `/proc/PID/stat`), which together name one process for the life of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRef {
    pub pid: u32,
    pub start_ticks: u64,
}

impl ProcessRef {
    /// This process.
    pub fn current() -> Option<ProcessRef> {
        Self::of(std::process::id())
    }

    /// The live process with this pid, as it is now.
    pub fn of(pid: u32) -> Option<ProcessRef> {
        let stat = ProcStat::read(pid)?;
        Some(ProcessRef {
            pid,
            start_ticks: stat.start_ticks,
        })
    }

    /// Whether this very process still runs (not a zombie, not a newer process with its pid).
    pub fn is_alive(&self) -> bool {
        ProcStat::read(self.pid).is_some_and(|s| s.is_alive() && s.start_ticks == self.start_ticks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not_it() {
        let me = ProcessRef::current().unwrap();
        assert!(me.is_alive());
        let impostor = ProcessRef {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        assert!(!impostor.is_alive());
    }

    #[test]
    fn a_reaped_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let seen = ProcessRef::of(child.id());
        child.wait().unwrap();
        if let Some(seen) = seen {
            assert!(!seen.is_alive());
        }
    }
}
