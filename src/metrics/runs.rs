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
            let job = record.remote_job();
            let processes: Vec<RunProcess> = match &job {
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
            if job.is_some() {
                let used: std::collections::BTreeSet<u32> =
                    processes.iter().map(|p| p.gpu).collect();
                gpus.extend(used.into_iter().map(|gpu| (gpu, String::new())));
            }
            RunInfo {
                id: record.id.clone(),
                name: record.name.clone(),
                state: state.as_str().to_string(),
                backend: record.backend.as_str().into(),
                slurm_job: job.map(|j| j.id),
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
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::gpu::{GpuProcess, ProcessKind};
    use crate::runs::{Launcher, ProcessRef, RankRecord, RunGpu, RUN_SCHEMA};

    /// Two ranks, rank 0 (pid 100, the group leader) on GPU 0 and rank 1 (pid 101) on GPU 1.
    fn record() -> RunRecord {
        let rank = |rank: usize, pid| RankRecord {
            rank,
            argv: vec!["python".into()],
            env: BTreeMap::new(),
            gpus: vec![rank as u32],
            pid: Some(pid),
            exit_code: None,
            ended_ms: None,
        };
        RunRecord {
            schema: RUN_SCHEMA.into(),
            id: "r1".into(),
            name: "train".into(),
            launcher: Launcher::PerGpu,
            image: None,
            workdir: "/work".into(),
            host: "box".into(),
            driver_version: None,
            gpus: (0..2)
                .map(|i| RunGpu {
                    index: i,
                    uuid: format!("GPU-{i}"),
                    name: "H100".into(),
                })
                .collect(),
            ranks: vec![rank(0, 100), rank(1, 101)],
            state: RunState::Running,
            created_ms: 1_000,
            started_ms: Some(2_000),
            ended_ms: None,
            supervisor: None,
            process_group: Some(ProcessRef {
                pid: 100,
                start_ticks: 1,
            }),
            exit_code: None,
            first_failed_rank: None,
            error: None,
            gpu_source: None,
            metrics_error: None,
            service: None,
            torchrun_workers: None,
            lost_gpus: Vec::new(),
            backend: Default::default(),
            slurm: None,
            container: None,
        }
    }

    fn on_gpu(gpu: u32, pids: &[u32]) -> GpuSample {
        GpuSample {
            processes: pids
                .iter()
                .map(|&pid| GpuProcess {
                    gpu_index: gpu,
                    pid,
                    kind: ProcessKind::Compute,
                    used_memory_bytes: Some(1),
                    user: None,
                    command: None,
                    container: None,
                    identity: None,
                    gpu_util: None,
                    cpu_pct: None,
                    host_memory_bytes: None,
                })
                .collect(),
            ..GpuSample::default()
        }
    }

    #[test]
    fn ranks_by_pid_workers_by_group_and_strangers_by_neither() {
        let samples = [on_gpu(0, &[100, 555]), on_gpu(1, &[101, 777, 888])];
        // 555 and 777 are workers in the run's group; 888 is someone else's.
        let pgid = |pid| match pid {
            555 | 777 | 100 | 101 => Some(100),
            _ => Some(888),
        };
        let runs = attribute(&[(record(), RunState::Running)], &samples, pgid, |_| None);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].gpus, vec![(0, "GPU-0".into()), (1, "GPU-1".into())]);
        assert_eq!(owner(&runs, 0, 100), ("r1", Some(0)));
        assert_eq!(owner(&runs, 1, 101), ("r1", Some(1)));
        assert_eq!(owner(&runs, 0, 555), ("r1", Some(0)));
        assert_eq!(owner(&runs, 1, 777), ("r1", Some(1)));
        assert_eq!(owner(&runs, 1, 888), ("", None));
    }

    #[test]
    fn a_worker_on_a_gpu_no_single_rank_was_given_has_no_rank() {
        let mut shared = record();
        for r in &mut shared.ranks {
            r.gpus = vec![0, 1];
        }
        let runs = attribute(
            &[(shared, RunState::Lost)],
            &[on_gpu(1, &[555])],
            |_| Some(100),
            |_| None,
        );
        assert_eq!(runs[0].state, "lost");
        assert_eq!(owner(&runs, 1, 555), ("r1", None));
    }

    #[test]
    fn a_slurm_jobs_tasks_are_known_by_the_run_id_in_their_environment() {
        let mut job = record();
        job.gpus.clear();
        job.process_group = None;
        job.backend = crate::runs::Backend::Slurm;
        job.slurm = Some(crate::runs::slurm::SlurmJob::submitted(
            "42".into(),
            "/runs/r1/job.sbatch".into(),
            None,
            1_000,
        ));
        let samples = [on_gpu(0, &[300, 999]), on_gpu(1, &[301])];
        let env = |pid| match pid {
            300 => Some(RunEnv {
                run_id: "r1".into(),
                rank: Some(0),
            }),
            301 => Some(RunEnv {
                run_id: "r1".into(),
                rank: Some(1),
            }),
            999 => Some(RunEnv {
                run_id: "another".into(),
                rank: Some(0),
            }),
            _ => None,
        };
        let runs = attribute(&[(job, RunState::Running)], &samples, |_| None, env);
        assert_eq!(runs[0].backend, "slurm");
        assert_eq!(runs[0].slurm_job.as_deref(), Some("42"));
        assert_eq!(runs[0].gpus, vec![(0, String::new()), (1, String::new())]);
        assert_eq!(owner(&runs, 0, 300), ("r1", Some(0)));
        assert_eq!(owner(&runs, 1, 301), ("r1", Some(1)));
        assert_eq!(owner(&runs, 0, 999), ("", None));
    }

    #[test]
    fn the_environment_gives_the_run_id_and_rank_else_slurms_task_id() {
        let env = b"PATH=/bin\0GPUDECK_RUN_ID=r1\0SLURM_PROCID=3\0RANK=5\0";
        assert_eq!(
            parse_environ(env),
            Some(RunEnv {
                run_id: "r1".into(),
                rank: Some(5)
            })
        );
        let task = b"GPUDECK_RUN_ID=r1\0SLURM_PROCID=3\0";
        assert_eq!(parse_environ(task).unwrap().rank, Some(3));
        assert_eq!(parse_environ(b"PATH=/bin\0RANK=1\0"), None);
        assert_eq!(parse_environ(b"GPUDECK_RUN_ID=\0"), None);
    }
}
