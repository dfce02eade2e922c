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
    let runs = attribute(&[(record(), RunState::Running)], &samples, pgid);
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
    let runs = attribute(&[(shared, RunState::Lost)], &[on_gpu(1, &[555])], |_| {
        Some(100)
    });
    assert_eq!(runs[0].state, "lost");
    assert_eq!(owner(&runs, 1, 555), ("r1", None));
}
