//! A Slurm run in the dashboard's Runs tab, from a run directory written by hand as
//! `gpudeck run --on slurm` and the queue would leave it: its GPUs per node in the table, its
//! job, node and Slurm's explanation in the detail, and its GPU metrics (sampled on the node) as
//! a local run's.

use crate::support;

use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::runs::watch::{RunsUpdate, Watcher};
use gpudeck::runs::RunStore;
use support::demo::demo_state;
use support::run_fixture::{FakeRun, RunFacts};
use support::screen::{render, text};
use tokio::sync::mpsc;

const T0: u64 = 1_800_000_000_000;

fn drain(rx: &mut mpsc::Receiver<RunsUpdate>) -> Vec<RunsUpdate> {
    let mut out = Vec::new();
    while let Ok(update) = rx.try_recv() {
        out.push(update);
    }
    out
}

/// Rewrites the fake run's record as a finished Slurm job's.
fn as_slurm_job(run: &FakeRun, slurm: serde_json::Value, error: &str) {
    let path = run.dir.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["backend"] = "slurm".into();
    record["gpus"] = serde_json::json!([]);
    record["slurm"] = slurm;
    record["error"] = error.into();
    std::fs::write(&path, record.to_string()).unwrap();
}

#[test]
fn a_slurm_run_shows_its_gpus_per_node_its_job_and_why_it_failed() {
    let data = tempfile::tempdir().unwrap();
    let run = FakeRun::write(
        data.path(),
        &RunFacts {
            id: "20270115-090000-llm-00cc",
            state: "failed",
            gpus: &[],
            ranks: 2,
            started_ms: T0,
            ended_ms: Some(T0 + 20_000),
            exit_code: Some(1),
            supervised: false,
        },
    );
    as_slurm_job(
        &run,
        serde_json::json!({
            "job_id": "4242",
            "script": run.dir.join("job.sbatch"),
            "partition": "gpu",
            "submitted_ms": T0 - 5_000,
            "node_count": 1,
            "gpus_per_node": 2,
            "nodes": "node07",
            "exit": "1:0",
            "slurm_state": "FAILED",
            "reported_by": "sacct",
        }),
        "its batch script exited with 1 (FAILED)",
    );
    // What the sampler on node07 wrote: GPUs 2 and 3 of that node, busy for 20 s.
    let rows: Vec<_> = (1..=20u64)
        .flat_map(|s| {
            [
                (T0 + s * 1000, 2, 80, 40, 300.0),
                (T0 + s * 1000, 3, 80, 40, 300.0),
            ]
        })
        .collect();
    run.metrics(&rows);
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.tick());
    let mut state = demo_state("gpus=4,seed=42,frozen=120", 2);
    state.now = (T0 / 1000) as i64 + 120;
    for update in drain(&mut rx) {
        state.apply_runs(update);
    }
    for c in state.update(Action::SelectTab(Tab::Runs)) {
        if let Command::Runs(c) = c {
            assert!(watcher.apply(c));
        }
    }
    assert!(watcher.tick());
    for update in drain(&mut rx) {
        state.apply_runs(update);
    }
    let screen = text(&render(&state, 120, 30));
    assert!(screen.contains("2/node"), "{screen}");
    assert!(screen.contains("Slurm job 4242"), "{screen}");
    assert!(screen.contains("2 GPUs on node07"), "{screen}");
    assert!(screen.contains("exited with 1 (FAILED)"), "{screen}");
    // Its summary covers the two GPUs the scheduler gave it, from the node's samples.
    let row = &state.runs.runs[0];
    let summary = row
        .summary
        .as_ref()
        .expect("a summary from the node's metrics");
    let gpus: Vec<u32> = summary.gpus.iter().map(|g| g.gpu_index).collect();
    assert_eq!(gpus, [2, 3]);
    assert_eq!(summary.mean_util_pct().map(|u| u.round()), Some(80.0));
}
