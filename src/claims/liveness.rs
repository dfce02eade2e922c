//! Whether a claim's owner is still there: a process by pid and start time, a run by its record,
//! a container by its processes in `/proc` (no engine needed, so a reader never waits on Docker).

use std::path::Path;

use crate::runs::{ProcessRef, Run, RunState};

/// The facts a claim's liveness rests on; a seam so tests can say what is alive.
pub trait Liveness {
    /// This very process still runs (not a zombie, not a newer process with its pid).
    fn process_alive(&self, process: &ProcessRef) -> bool;
    /// The run's state as a reader derives it; `None` when it has no readable record yet.
    fn run_state(&self, dir: &Path) -> Option<RunState>;
    /// Some process on this host runs in the container with this full id.
    fn container_running(&self, id: &str) -> bool;
}

/// The real facts: `/proc` and the run store.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLiveness;

impl Liveness for SystemLiveness {
    fn process_alive(&self, process: &ProcessRef) -> bool {
        process.is_alive()
    }

    fn run_state(&self, dir: &Path) -> Option<RunState> {
        Run::open(dir).ok().map(|run| run.state())
    }

    fn container_running(&self, id: &str) -> bool {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .filter_map(|e| std::fs::read_to_string(e.path().join("cgroup")).ok())
            .filter_map(|text| crate::host::container_from_cgroup(&text))
            .any(|c| c.id == id)
    }
}
