//! Which live training run, and which of its ranks, each GPU process belongs to: from the run
//! store's records and the processes' process groups, or for a Slurm job's tasks on this host,
//! their environment.

use crate::gpu::GpuSample;
use crate::runs::{ProcStat, RunIndex, RunRecord, RunState};

/// A run that has not ended, as the metrics label it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    pub id: String,
    pub name: String,
    /// The state a reader derives (`running`, `starting`, `lost`).
    pub state: String,
    /// `local` or `slurm`.
    pub backend: String,
    /// A Slurm run's job id.
    pub slurm_job: Option<String>,
    /// The GPUs it was given: index and UUID (empty for a Slurm job's GPU on this host, which
    /// the scheduler picked: its index is known from the job's processes).
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
/// records that changed since the index's last look (never an ended run's again) and
/// `/proc/PID/stat`; never NVML.
pub fn live_runs(index: &mut RunIndex, samples: &[GpuSample]) -> Vec<RunInfo> {
    index.refresh();
    // A settled run ended a while ago; only the others can be live.
    let live: Vec<(RunRecord, RunState)> = index
        .unsettled()
        .map(|i| (i.run.record.clone(), i.run.state()))
        .filter(|(_, state)| !state.is_finished())
        .collect();
    attribute(
        &live,
        samples,
        |pid| ProcStat::read(pid).map(|s| s.pgid),
        run_env,
    )
}

/// What a process's environment says of the gpudeck run it belongs to: a Slurm job's tasks
/// carry the run id (`GPUDECK_RUN_ID`, exported by the batch script) and their rank (`RANK`,
/// set by the per-gpu wrapper and by torchrun for its workers, else `SLURM_PROCID`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnv {
    pub run_id: String,
    pub rank: Option<usize>,
}

/// `/proc/PID/environ` read for [`RunEnv`]; `None` for a process of another user, gone, or of
/// no gpudeck run.
pub fn run_env(pid: u32) -> Option<RunEnv> {
    parse_environ(&std::fs::read(format!("/proc/{pid}/environ")).ok()?)
}

/// The NUL-separated `NAME=VALUE` list of `/proc/PID/environ` read for [`RunEnv`].
pub fn parse_environ(bytes: &[u8]) -> Option<RunEnv> {
    let (mut run_id, mut rank, mut procid) = (None, None, None);
    for entry in bytes.split(|b| *b == 0) {
        let Some(eq) = entry.iter().position(|b| *b == b'=') else {
            continue;
        };
        let value = || String::from_utf8_lossy(&entry[eq + 1..]).into_owned();
        match &entry[..eq] {
            b"GPUDECK_RUN_ID" => run_id = Some(value()),
            b"RANK" => rank = value().parse().ok(),
            b"SLURM_PROCID" => procid = value().parse().ok(),
            _ => {}
        }
    }
    Some(RunEnv {
        run_id: run_id.filter(|id| !id.is_empty())?,
        rank: rank.or(procid),
    })
}

/// Pure attribution: a process is a rank when its pid is that rank's; it belongs to a run when
/// its process group is the run's (a data loader worker, say), and then to the one rank that was
/// given its GPU, if exactly one was.
pub fn attribute(
    runs: &[(RunRecord, RunState)],
    samples: &[GpuSample],
    pgid_of: impl Fn(u32) -> Option<u32>,
    env_of: impl Fn(u32) -> Option<RunEnv>,
) -> Vec<RunInfo> {
    let on_gpus: Vec<(u32, u32)> = samples
        .iter()
        .flat_map(|s| s.processes.iter().map(|p| (p.gpu_index, p.pid)))
        .collect();
    runs.iter()
        .map(|(record, state)| {
            let processes: Vec<RunProcess> = match &record.slurm {
                // A job's tasks are not our children: their environment names the run.
                Some(_) => on_gpus
                    .iter()
                    .filter_map(|&(gpu, pid)| {
                        let env = env_of(pid).filter(|e| e.run_id == record.id)?;
                        Some(RunProcess {
                            gpu,
                            pid,
                            rank: env.rank,
                        })
                    })
                    .collect(),
                None => on_gpus
                    .iter()
                    .filter_map(|&(gpu, pid)| belongs(record, gpu, pid, &pgid_of))
                    .collect(),
            };
            let mut gpus: Vec<(u32, String)> = record
                .gpus
                .iter()
                .map(|g| (g.index, g.uuid.clone()))
                .collect();
            if record.slurm.is_some() {
                let used: std::collections::BTreeSet<u32> =
                    processes.iter().map(|p| p.gpu).collect();
                gpus.extend(used.into_iter().map(|gpu| (gpu, String::new())));
            }
            RunInfo {
                id: record.id.clone(),
                name: record.name.clone(),
                state: state.as_str().to_string(),
                backend: record.backend.as_str().into(),
                slurm_job: record.slurm.as_ref().map(|j| j.job_id.clone()),
                gpus,
                processes,
            }
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
