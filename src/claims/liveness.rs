//! Whether a claim's owner is still there: the facts a claim's liveness rests on, as a seam. The
//! real facts (`/proc` and the run store) are `runs::SystemLiveness`, since reading a run's record
//! is the run store's business.

use std::path::Path;

use crate::host::ProcessRef;

/// The facts a claim's liveness rests on; a seam so tests can say what is alive.
pub trait Liveness {
    /// This very process still runs (not a zombie, not a newer process with its pid).
    fn process_alive(&self, process: &ProcessRef) -> bool;
    /// Whether the run's record, as a reader derives its state, says it still holds its GPUs
    /// (see `runs::run_holds_gpus`); `None` when it has no readable record yet.
    fn run_holds_gpus(&self, dir: &Path) -> Option<bool>;
    /// Some process on this host runs in the container with this full id.
    fn container_running(&self, id: &str) -> bool;
}
