//! Which live training run, and which of its ranks, each GPU process belongs to: from the run
//! store's records and the processes' process groups.

use crate::gpu::GpuSample;
use crate::runs::{ProcStat, RunRecord, RunState, RunStore};

/// A run that has not ended, as the metrics label it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    pub id: String,
    pub name: String,
    /// The state a reader derives (`running`, `starting`, `lost`).
    pub state: String,
    /// The GPUs it was given: index and UUID.
    pub gpus: Vec<(u32, String)>,
    /// The GPU processes that belong to it.
    pub processes: Vec<RunProcess>,
}

/// A process on one GPU that belongs to a run, and its rank when that is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunProcess {
    pub gpu: u32,
    pub pid: u32,
    pub rank: Option<usize>,
}

/// The run id and rank of the process `pid` on GPU `gpu`: empty and `None` when no run owns it.
pub fn owner(runs: &[RunInfo], gpu: u32, pid: u32) -> (&str, Option<usize>) {
    runs.iter()
        .find_map(|r| {
            r.processes
                .iter()
                .find(|p| p.gpu == gpu && p.pid == pid)
                .map(|p| (r.id.as_str(), p.rank))
        })
        .unwrap_or(("", None))
}

/// The live runs of the store with the GPU processes of `samples` attributed to them. Reads the
/// run records and `/proc/PID/stat`; never NVML.
pub fn live_runs(store: &RunStore, samples: &[GpuSample]) -> Vec<RunInfo> {
    let (runs, _) = store.list();
    let live: Vec<(RunRecord, RunState)> = runs
        .into_iter()
        .map(|r| {
            let state = r.record.effective_state();
            (r.record, state)
        })
        .filter(|(_, state)| !state.is_finished())
        .collect();
    attribute(&live, samples, |pid| ProcStat::read(pid).map(|s| s.pgid))
}

/// Pure attribution: a process is a rank when its pid is that rank's; it belongs to a run when
/// its process group is the run's (a data loader worker, say), and then to the one rank that was
/// given its GPU, if exactly one was.
pub fn attribute(
    runs: &[(RunRecord, RunState)],
    samples: &[GpuSample],
    pgid_of: impl Fn(u32) -> Option<u32>,
) -> Vec<RunInfo> {
    let on_gpus: Vec<(u32, u32)> = samples
        .iter()
        .flat_map(|s| s.processes.iter().map(|p| (p.gpu_index, p.pid)))
        .collect();
    runs.iter()
        .map(|(record, state)| RunInfo {
            id: record.id.clone(),
            name: record.name.clone(),
            state: state.as_str().to_string(),
            gpus: record
                .gpus
                .iter()
                .map(|g| (g.index, g.uuid.clone()))
                .collect(),
            processes: on_gpus
                .iter()
                .filter_map(|&(gpu, pid)| belongs(record, gpu, pid, &pgid_of))
                .collect(),
        })
        .collect()
}

fn belongs(
    record: &RunRecord,
    gpu: u32,
    pid: u32,
    pgid_of: &impl Fn(u32) -> Option<u32>,
) -> Option<RunProcess> {
    if let Some(rank) = record.ranks.iter().find(|r| r.pid == Some(pid)) {
        return Some(RunProcess {
            gpu,
            pid,
            rank: Some(rank.rank),
        });
    }
    let group = record
        .process_group
        .map(|g| g.pid)
        .or_else(|| record.ranks.first().and_then(|r| r.pid))?;
    if pgid_of(pid)? != group {
        return None;
    }
    let mut given = record.ranks.iter().filter(|r| r.gpus.contains(&gpu));
    let rank = match (given.next(), given.next()) {
        (Some(only), None) => Some(only.rank),
        _ => None,
    };
    Some(RunProcess { gpu, pid, rank })
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
