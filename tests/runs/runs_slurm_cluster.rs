//! `gpudeck run --on slurm` against a real one-node Slurm (2 fake GPUs) started for each test by
//! `tests/support/slurm-up.sh`: a job's end and exit code, its log through `gpudeck logs`, a
//! pending job and its reason, `gpudeck stop`, re-run, per-task GPUs and ranks of a per-gpu job,
//! a job held for good or failed before starting, and sbatch's refusals. Where Slurm cannot be
//! started here (no root, no packages), each test is skipped with the reason, or fails under
//! `CI=true` (tests/support/real.rs).

use crate::support;

use support::real::Part;
use support::runs::wait_until;
use support::slurm::Cluster;
use support::tmux::Session;
use support::{stderr, stdout, Dirs};

/// A cluster for the running test, or None after saying why it is skipped (under `CI=true`, the
/// test fails instead).
fn cluster() -> Option<Cluster> {
    let started =
        Cluster::start().map_err(|why| format!("no Slurm cluster could be started: {why}"));
    support::real::require(Part::Slurm, &support::real::current_test(), started)
}

#[test]
fn with_accounting_a_jobs_end_is_what_sacct_reports() {
    let _gate = crate::support::gate::gate(module_path!());
    let started = Cluster::start_with_accounting()
        .map_err(|why| format!("no Slurm cluster with accounting could be started: {why}"));
    let test = "with_accounting_a_jobs_end_is_what_sacct_reports";
    let Some(slurm) = support::real::require(Part::SlurmAccounting, test, started) else {
        return;
    };
    let dirs = Dirs::new();
    let id = slurm.submit(&dirs, &["--", "sh", "-c", "sleep 1; exit 3"]);
    let job = slurm.listed(&dirs, &id)["slurm"]["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Until accounting has the end, the controller would be asked instead.
    wait_until("sacct to have the job's end", || {
        let out = slurm.command("sacct", &["-X", "-n", "-P", "-j", &job, "-o", "State"]);
        stdout(&out).trim() == "FAILED"
    });
    let run = slurm.listed(&dirs, &id);
    assert_eq!(run["state"], "failed", "{run}");
    assert_eq!(run["exit_code"], 3, "{run}");
    assert_eq!(run["slurm"]["reported_by"], "sacct", "{run}");
    assert_eq!(run["slurm"]["exit"], "3:0", "{run}");
    assert_eq!(run["slurm"]["nodes"], hostname(), "{run}");
    assert!(run["slurm"]["elapsed"].is_string(), "{run}");
    let (start, end) = (
        run["started_ms"].as_u64().unwrap(),
        run["ended_ms"].as_u64().unwrap(),
    );
    assert!(end >= start + 1000, "{run}");
    // A cancelled job as accounting words it.
    let sleeper = slurm.submit(&dirs, &["--", "sleep", "300"]);
    wait_until("the job to run", || {
        slurm.listed(&dirs, &sleeper)["state"] == "running"
    });
    let stop = slurm.gpudeck(&dirs, &["stop", &sleeper]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    let run = slurm.listed(&dirs, &sleeper);
    assert_eq!(run["state"], "stopped", "{run}");
    assert!(
        run["slurm"]["slurm_state"]
            .as_str()
            .is_some_and(|s| s.starts_with("CANCELLED")),
        "{run}"
    );
}

#[test]
fn a_job_that_exits_3_is_failed_with_code_3_and_its_log_is_readable() {
    let _gate = crate::support::gate::gate(module_path!());
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
    assert!(
        run["error"]
            .as_str()
            .is_some_and(|e| e.contains("exited with 3")),
        "{run}"
    );
    assert_eq!(run["slurm"]["exit"], "3:0", "{run}");
    assert_eq!(run["slurm"]["nodes"], hostname(), "{run}");
    assert!(run["slurm"]["reported_by"].is_string(), "{run}");
    // Re-run: the same job submitted again, as a new run with a new job.
    let again = slurm.gpudeck(&dirs, &["rerun", &id]);
    assert!(again.status.success(), "{}", stderr(&again));
    let new_id = stdout(&again).trim().to_string();
    assert_ne!(new_id, id);
    assert!(
        stderr(&again).contains("submitted as Slurm job"),
        "{}",
        stderr(&again)
    );
    wait_until("the re-run to fail as the first did", || {
        slurm.listed(&dirs, &new_id)["state"] == "failed"
    });
    let rerun = slurm.listed(&dirs, &new_id);
    assert_eq!(rerun["exit_code"], 3, "{rerun}");
    assert_eq!(rerun["name"], "three", "{rerun}");
    assert_ne!(rerun["slurm"]["job_id"], run["slurm"]["job_id"], "{rerun}");
    let logs = slurm.gpudeck(&dirs, &["logs", &new_id]);
    assert_eq!(stdout(&logs), "out-line\n");
}

fn hostname() -> String {
    let out = std::process::Command::new("hostname")
        .arg("-s")
        .output()
        .expect("hostname runs");
    stdout(&out).trim().to_string()
}

#[test]
fn per_gpu_tasks_each_get_their_own_gpu_rank_and_world_size() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let id = slurm.submit(
        &dirs,
        &[
            "--launcher",
            "per-gpu",
            "--gpus",
            "count:2",
            "--",
            "sh",
            "-c",
            "echo rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE cvd=$CUDA_VISIBLE_DEVICES",
        ],
    );
    wait_until("the job to succeed", || {
        slurm.listed(&dirs, &id)["state"] == "succeeded"
    });
    let run = slurm.listed(&dirs, &id);
    assert_eq!(run["exit_code"], 0, "{run}");
    assert_eq!(run["slurm"]["gpus_per_node"], 2, "{run}");
    let mut devices = Vec::new();
    for rank in 0..2 {
        let out = slurm.gpudeck(&dirs, &["logs", &id, "--rank", &rank.to_string()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let line = stdout(&out);
        assert!(
            line.starts_with(&format!("rank={rank} local={rank} world=2 cvd=")),
            "rank {rank}: {line}"
        );
        let cvd = line.trim().rsplit("cvd=").next().unwrap().to_string();
        // One GPU per task, bound by Slurm (--gpu-bind=single:1), not the job's whole list.
        assert!(cvd == "0" || cvd == "1", "rank {rank}: {line}");
        devices.push(cvd);
    }
    assert_ne!(devices[0], devices[1], "two tasks on one GPU: {devices:?}");
}

#[test]
fn a_jobs_gpus_are_sampled_on_its_node_into_the_runs_metrics_and_summary() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let fake = Cluster::fake_nvidia_smi_dir();
    let out = slurm.gpudeck_with_path(
        &dirs,
        &[
            "run", "--on", "slurm", "--gpus", "count:2", "--", "sleep", "4",
        ],
        Some(&fake),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let id = stdout(&out).trim().to_string();
    wait_until("the job to succeed", || {
        slurm.listed(&dirs, &id)["state"] == "succeeded"
    });
    let run = slurm.listed(&dirs, &id);
    // Both of the job's GPUs, as the sampler on its node read them (GPU 1 has no power).
    let summary = &run["summary"];
    let gpus = summary["gpus"]
        .as_array()
        .unwrap_or_else(|| panic!("{run}"));
    assert_eq!(gpus.len(), 2, "{run}");
    assert_eq!(gpus[0]["gpu_uuid"], "GPU-fake-0", "{run}");
    assert_eq!(gpus[1]["gpu_uuid"], "GPU-fake-1", "{run}");
    let util0 = gpus[0]["mean_util_pct"].as_f64().unwrap();
    assert!((util0 - 40.0).abs() < 0.01, "{run}");
    let export = slurm.gpudeck(&dirs, &["export", &id, "--format", "csv"]);
    assert!(export.status.success(), "{}", stderr(&export));
    let csv = stdout(&export);
    assert!(
        csv.contains(",0,GPU-fake-0,40,1073741824,85520809984,100.5,45,1980"),
        "{csv}"
    );
    assert!(
        csv.contains(",1,GPU-fake-1,50,2147483648,85520809984,,45,1980"),
        "{csv}"
    );
    // The sampler went with the job.
    let left = std::process::Command::new("pgrep")
        .args(["-f", "fake-bin/nvidia-smi"])
        .output()
        .unwrap();
    assert!(stdout(&left).trim().is_empty(), "{}", stdout(&left));
}

#[test]
fn more_gpus_per_node_than_the_partition_has_is_refused_with_what_it_has() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let out = slurm.gpudeck(
        &dirs,
        &["run", "--on", "slurm", "--gpus", "count:3", "--", "true"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("more GPUs"), "{err}");
    assert!(
        err.contains("Requested node configuration is not available"),
        "{err}"
    );
    // What the nodes have, from sinfo.
    assert!(err.contains("debug*: 1 node, gpu:2"), "{err}");
}

#[test]
fn a_job_that_cannot_start_as_submitted_says_why_and_what_to_do() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    // `short` allows 1 minute: Slurm takes the job but holds it forever.
    let id = slurm.submit(
        &dirs,
        &["--partition", "short", "--time", "10", "--", "true"],
    );
    wait_until("the job to be held", || {
        slurm.listed(&dirs, &id)["slurm"]["reason"] == "PartitionTimeLimit"
    });
    let run = slurm.listed(&dirs, &id);
    assert_eq!(run["state"], "starting", "{run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(error.contains("will not start"), "{error}");
    assert!(error.contains("shorter --time"), "{error}");
    let listing = slurm.gpudeck(&dirs, &["runs"]);
    assert!(
        stdout(&listing).contains("starting (PartitionTimeLimit)"),
        "{}",
        stdout(&listing)
    );
}

#[test]
fn a_job_whose_run_dir_the_node_cannot_see_failed_before_starting() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let blocker = slurm.submit(&dirs, &["--gpus", "count:2", "--", "sleep", "300"]);
    wait_until("the blocker to run", || {
        slurm.listed(&dirs, &blocker)["state"] == "running"
    });
    let id = slurm.submit(&dirs, &["--gpus", "count:1", "--", "true"]);
    let run = slurm.listed(&dirs, &id);
    let job = run["slurm"]["job_id"].as_str().unwrap().to_string();
    wait_until("the job to wait for GPUs", || {
        slurm.listed(&dirs, &id)["slurm"]["reason"] == "Resources"
    });
    // As on a node that does not share the file system of the run store: the job's log files
    // cannot be opened there.
    let dir = std::path::PathBuf::from(run["dir"].as_str().unwrap());
    let away = dir.with_extension("away");
    std::fs::rename(&dir, &away).unwrap();
    let stop = slurm.gpudeck(&dirs, &["stop", &blocker]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    wait_until("Slurm to end the job", || {
        let out = slurm.command("squeue", &["-h", "-j", &job, "-o", "%T"]);
        stdout(&out).trim().is_empty()
    });
    std::fs::rename(&away, &dir).unwrap();
    let run = slurm.listed(&dirs, &id);
    assert_eq!(run["state"], "failed", "{run}");
    assert_eq!(run["slurm"]["reason"], "JobLaunchFailure", "{run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(error.contains("failed before starting"), "{error}");
    assert!(error.contains("share"), "{error}");
    assert!(run["started_ms"].is_null(), "{run}");
}

#[test]
fn a_job_waiting_for_gpus_is_starting_with_slurms_reason() {
    let _gate = crate::support::gate::gate(module_path!());
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
    let _gate = crate::support::gate::gate(module_path!());
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let id = slurm.submit(&dirs, &["--", "sleep", "300"]);
    wait_until("the job to run", || {
        slurm.listed(&dirs, &id)["state"] == "running"
    });
    let running = slurm.listed(&dirs, &id);
    assert_eq!(running["slurm"]["nodes"], hostname(), "{running}");
    assert!(running["started_ms"].is_u64(), "{running}");
    let out = slurm.gpudeck(&dirs, &["stop", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("stopped"), "{}", stderr(&out));
    let run = slurm.listed(&dirs, &id);
    assert_eq!(run["state"], "stopped", "{run}");
    assert_eq!(run["slurm"]["slurm_state"], "CANCELLED", "{run}");
    // Stopping it again says it had ended rather than failing in scancel.
    let again = slurm.gpudeck(&dirs, &["stop", &id]);
    assert!(again.status.success(), "{}", stderr(&again));
}

#[test]
fn an_unknown_partition_is_a_clear_error_with_exit_1() {
    let _gate = crate::support::gate::gate(module_path!());
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

#[test]
fn the_dashboards_form_submits_a_slurm_job_and_the_runs_tab_follows_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(slurm) = cluster() else { return };
    let dirs = Dirs::new();
    let env = format!("SLURM_CONF={}", slurm.conf().display());
    let s = Session::start_with("slurmform", 110, 32, &env, "--demo", dirs);
    s.wait_for("the dashboard", |t| t.contains("DEMO"));
    s.keys(&["8"]);
    s.keys(&["n"]);
    s.wait_for("the form", |t| t.contains("New run"));
    s.keys(&["-l", "sh -c 'echo from-the-form-on-slurm; sleep 60'"]);
    // Command, Name, Work dir, Image, Launcher, then Backend.
    for _ in 0..5 {
        s.keys(&["Tab"]);
    }
    s.keys(&["Space"]);
    s.wait_for("the Slurm fields", |t| {
        t.contains("Partition") && t.contains("GPUs/node") && t.contains("Enter submit")
    });
    // Partition, Time, Nodes, then GPUs per node.
    for _ in 0..4 {
        s.keys(&["Tab"]);
    }
    s.keys(&["-l", "1"]);
    s.keys(&["Enter"]);
    s.wait_for_secs("the job running, its output in the tab", 30, |t| {
        t.contains("1/node") && t.contains("1 running") && t.contains("from-the-form-on-slurm")
    });
    s.wait_for("the job in the detail", |t| t.contains("Slurm job"));
    s.keys(&["x"]);
    s.wait_for("a confirmation", |t| t.contains("Stop "));
    s.keys(&["y"]);
    s.wait_for_secs("the job cancelled", 30, |t| {
        t.contains("0 running") && t.contains("stopped")
    });
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}
