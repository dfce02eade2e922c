//! Per-run labels end to end: a real `gpudeck run` whose rank and the rank's child are put on a
//! simulated GPU (`pids=`), scraped from `gpudeck serve`.

use crate::support;

use support::runs::{start, wait_state, wait_until};
use support::serve::{scrape, start as serve, value};
use support::Dirs;

/// The first child of `pid`, once it has one.
fn child_of(pid: i64) -> i64 {
    let mut child = None;
    wait_until("the rank's child", || {
        child = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .ok()
            .and_then(|c| c.split_whitespace().next().and_then(|p| p.parse().ok()));
        child.is_some()
    });
    child.unwrap_or_default()
}

#[test]
fn a_runs_rank_and_its_worker_carry_the_run_id_and_rank() {
    let dirs = Dirs::new();
    let (id, _guard) = start(
        &dirs,
        &[
            "--name",
            "train",
            "--gpus",
            "0",
            "--",
            "sh",
            "-c",
            "sleep 60 & wait",
        ],
    );
    let record = wait_state(&dirs, &id, "running");
    let rank = record["ranks"][0]["pid"].as_i64().expect("rank 0's pid");
    let worker = child_of(rank);
    let sim = format!("gpus=4,frozen=300,pids=0:{rank};0:{worker}");
    let mut cmd = dirs.gpudeck(&sim);
    cmd.args(["--demo", "serve", "--metrics", "127.0.0.1:0"]);
    let served = serve(cmd);
    let text = scrape(&served.addr);
    let info = format!(
        r#"gpudeck_run_info{{run_id="{id}",name="train",state="running",backend="local",slurm_job_id=""}}"#
    );
    assert_eq!(value(&text, &info), Some(1.0), "{text}");
    let given = format!(r#"gpudeck_run_gpu_info{{run_id="{id}",gpu="0","#);
    assert!(text.contains(&given), "{text}");
    for pid in [rank, worker] {
        let labels = format!(r#",pid="{pid}",container="",run_id="{id}",rank="0"}}"#);
        let line = text.lines().find(|l| {
            l.starts_with("gpudeck_process_gpu_memory_bytes{gpu=\"0\"") && l.contains(&labels)
        });
        assert!(
            line.is_some(),
            "no series for pid {pid} with {labels}:\n{text}"
        );
    }
}
