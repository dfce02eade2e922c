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
    job.backend = crate::runs::slurm::Backend::Slurm;
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
