//! The real facts a GPU claim's liveness rests on: a process by pid and start time, a run by its
//! record in the run store, a container by its processes in `/proc` (no engine needed, so a
//! reader never waits on Docker).

use std::path::Path;

use super::record::RunState;
use super::store::Run;
use crate::claims::Liveness;
use crate::host::ProcessRef;

/// Whether a run in this state still holds its GPUs: while starting or running. A finished run
/// has let them go, and so has a lost one (its supervisor died without recording an end).
pub fn run_holds_gpus(state: RunState) -> bool {
    !state.is_finished() && state != RunState::Lost
}

/// The real facts: `/proc` and the run store.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLiveness;

impl Liveness for SystemLiveness {
    fn process_alive(&self, process: &ProcessRef) -> bool {
        process.is_alive()
    }

    fn run_holds_gpus(&self, dir: &Path) -> Option<bool> {
        Run::open(dir).ok().map(|run| run_holds_gpus(run.state()))
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
