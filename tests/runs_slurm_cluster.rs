//! `gpudeck run --on slurm` against a real one-node Slurm (2 fake GPUs) started for each test by
//! `tests/support/slurm-up.sh`: a job's end and exit code, its log through `gpudeck logs`, a
//! pending job and its reason, `gpudeck stop`, and sbatch's refusals. Where Slurm cannot be
//! started here (no root, no packages), each test prints SKIPPED with the reason and passes.

mod support;

use support::runs::wait_until;
use support::slurm::Cluster;
use support::{stderr, stdout, Dirs};

fn cluster() -> Option<Cluster> {
    match Cluster::start() {
        Ok(cluster) => Some(cluster),
        Err(why) => {
            eprintln!("SKIPPED: no Slurm cluster could be started: {why}");
            None
        }
    }
}

#[test]
fn a_job_that_exits_3_is_failed_with_code_3_and_its_log_is_readable() {
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let id = slurm.submit(
        &dirs,
        &[
            "--name",
            "three",
            "--",
            "sh",
            "-c",
            "echo out-line; echo err-line >&2; exit 3",
        ],
    );
    wait_until("the job to fail", || {
        slurm.listed(&dirs, &id)["state"] == "failed"
    });
    let run = slurm.listed(&dirs, &id);
    assert_eq!(run["exit_code"], 3, "{run}");
    assert_eq!(run["backend"], "slurm", "{run}");
    assert!(
        run["slurm"]["job_id"]
            .as_str()
            .is_some_and(|j| !j.is_empty()),
        "{run}"
    );
    let logs = slurm.gpudeck(&dirs, &["logs", &id]);
    assert!(logs.status.success(), "{}", stderr(&logs));
    assert_eq!(stdout(&logs), "out-line\n");
    let errs = slurm.gpudeck(&dirs, &["logs", &id, "--stderr"]);
    assert!(stdout(&errs).contains("err-line"), "{}", stdout(&errs));
    // Its spec would start here, not on the cluster: refused.
    let again = slurm.gpudeck(&dirs, &["rerun", &id]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("is a Slurm run"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_job_waiting_for_gpus_is_starting_with_slurms_reason() {
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let both = slurm.submit(&dirs, &["--gpus", "count:2", "--", "sleep", "300"]);
    wait_until("the first job to run", || {
        slurm.listed(&dirs, &both)["state"] == "running"
    });
    let waiting = slurm.submit(&dirs, &["--gpus", "count:1", "--", "true"]);
    wait_until("the second job to be pending", || {
        slurm.listed(&dirs, &waiting)["slurm"]["reason"].is_string()
    });
    let run = slurm.listed(&dirs, &waiting);
    assert_eq!(run["state"], "starting", "{run}");
    assert_eq!(run["slurm"]["reason"], "Resources", "{run}");
    assert!(
        run["error"]
            .as_str()
            .is_some_and(|e| e.contains("Resources")),
        "{run}"
    );
}

#[test]
fn stop_cancels_a_running_job_and_records_stopped() {
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let id = slurm.submit(&dirs, &["--", "sleep", "300"]);
    wait_until("the job to run", || {
        slurm.listed(&dirs, &id)["state"] == "running"
    });
    let out = slurm.gpudeck(&dirs, &["stop", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("stopped"), "{}", stderr(&out));
    let run = slurm.listed(&dirs, &id);
    assert_eq!(run["state"], "stopped", "{run}");
    assert_eq!(run["slurm"]["slurm_state"], "CANCELLED", "{run}");
}

#[test]
fn an_unknown_partition_is_a_clear_error_with_exit_1() {
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let out = slurm.gpudeck(
        &dirs,
        &["run", "--on", "slurm", "--partition", "nope", "--", "true"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("Slurm does not know the partition"), "{err}");
    assert!(err.contains("Invalid partition name specified"), "{err}");
    assert!(err.contains("sinfo"), "{err}");
    assert!(stdout(&out).is_empty());
}
