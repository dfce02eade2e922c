//! Slurm runs in the run store: submitting one (its directory, record, batch script and log
//! links), bringing its recorded state up to date from the queue, and cancelling it.

use std::path::Path;
use std::time::Duration;

use super::{
    batch_script, cancel, explain_end, explain_wait, job_shape, log_files, observe, submit_script,
    JobView, SlurmJob, SlurmSettings,
};
use crate::config::Backend;
use crate::runs::clock::{self, wait_for};
use crate::runs::error::RunError;
use crate::runs::record::{RankRecord, RunRecord, RunState};
use crate::runs::spec::{GpuSelection, RunSpec};
use crate::runs::store::{log_path, write_atomic, LogStream, Run, RunStore, StopOutcome};

/// The batch script's name in the run directory.
pub const SCRIPT_FILE: &str = "job.sbatch";
/// How long a cancelled job gets to leave RUNNING.
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// Records the run, writes its script and submits it; the run, `starting` with its job id, or
/// `failed` with sbatch's refusal (returned as the error too). The spec kept in the run
/// directory carries the settings it was submitted with, so a re-run submits the same job.
pub fn submit(spec: &RunSpec, settings: &SlurmSettings, store: &RunStore) -> Result<Run, RunError> {
    let now = clock::now_ms();
    let name = spec.effective_name();
    let kept = RunSpec {
        backend: Some(Backend::Slurm),
        slurm: settings.clone(),
        ..spec.clone()
    };
    let (id, dir) = store.create(&name, &kept.to_toml(), now)?;
    // Checked before with a stand-in id; a run directory it still refuses is not left behind.
    let script = batch_script(spec, settings, &id, &dir).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&dir);
    })?;
    write_atomic(&dir, SCRIPT_FILE, script.as_bytes())?;
    let mut run = Run {
        record: submitted_record(spec, id, name, now),
        dir,
    };
    run.write_record(&run.record)?;
    let workdir = spec.workdir.clone().unwrap_or_else(|| run.dir.clone());
    let job_id = match submit_script(&run.dir.join(SCRIPT_FILE), &workdir) {
        Ok(job_id) => job_id,
        Err(e) => {
            run.record.state = RunState::Failed;
            run.record.ended_ms = Some(clock::now_ms());
            run.record.error = Some(format!("sbatch refused the job: {e}"));
            run.write_record(&run.record)?;
            return Err(RunError::SlurmSubmit(e));
        }
    };
    let logs = log_files(spec, settings, &job_id, &run.dir)?;
    link_logs(&run.dir, &logs)?;
    run.record.ranks = (0..logs.len()).map(|rank| rank_of(spec, rank)).collect();
    let (node_count, gpus_per_node) = job_shape(spec, settings, &run.dir)?;
    run.record.slurm = Some(SlurmJob {
        node_count,
        gpus_per_node,
        ..SlurmJob::submitted(
            job_id,
            run.dir.join(SCRIPT_FILE),
            settings.partition.clone(),
            now,
        )
    });
    run.write_record(&run.record)?;
    Ok(run)
}

/// Submits `run`'s job again as a new run: the same script settings, command and work dir,
/// on `gpus` when given.
pub fn resubmit(run: &Run, gpus: Option<GpuSelection>, store: &RunStore) -> Result<Run, RunError> {
    let spec = run.spec()?;
    let spec = RunSpec {
        gpus: gpus.unwrap_or_else(|| spec.gpus.clone()),
        // Submitted runs keep an absolute work dir; older ones ran where they were submitted.
        workdir: spec.workdir.clone().or(Some(run.record.workdir.clone())),
        ..spec
    };
    submit(&spec, &spec.slurm, store)
}

fn submitted_record(spec: &RunSpec, id: String, name: String, now: u64) -> RunRecord {
    let workdir = spec.workdir.clone().unwrap_or_default();
    RunRecord {
        image: spec.image.clone(),
        backend: Backend::Slurm,
        ..RunRecord::starting(
            id,
            name,
            spec.launcher,
            workdir,
            crate::host::hostname(),
            now,
        )
    }
}

fn rank_of(spec: &RunSpec, rank: usize) -> RankRecord {
    RankRecord {
        rank,
        argv: spec.command.clone(),
        env: spec.env.clone().into_iter().collect(),
        gpus: Vec::new(),
        pid: None,
        exit_code: None,
        ended_ms: None,
    }
}

/// `rank-N.stdout.log` and `rank-N.stderr.log` as links to the files Slurm writes, so `gpudeck
/// logs` reads a Slurm run as it reads a local one.
fn link_logs(
    dir: &Path,
    logs: &[(std::path::PathBuf, std::path::PathBuf)],
) -> Result<(), RunError> {
    for (rank, (out, err)) in logs.iter().enumerate() {
        for (target, stream) in [(out, LogStream::Stdout), (err, LogStream::Stderr)] {
            let link = log_path(dir, rank, stream);
            std::os::unix::fs::symlink(target, &link).map_err(|e| RunError::store(&link, e))?;
        }
    }
    Ok(())
}

/// A job submitted this recently and still waiting is looked at more often (`look_at_jobs`).
const FRESH_MS: u64 = 10 * 60 * 1000;

/// Every unfinished Slurm run (`fresh_only`: only those submitted in the last minutes and still
/// waiting to start) gets what Slurm says of its job, recorded in `run.json` when it changed; a
/// warning for each job that could not be looked at.
pub(crate) fn look_at_jobs(runs: &mut [Run], fresh_only: bool) -> Vec<String> {
    let now = clock::now_ms();
    let fresh = |r: &Run| {
        r.record.state == RunState::Starting
            && r.record
                .slurm
                .as_ref()
                .is_some_and(|j| now.saturating_sub(j.submitted_ms) < FRESH_MS)
    };
    let mut warnings = Vec::new();
    for run in runs
        .iter_mut()
        .filter(|r| is_live_job(r) && (!fresh_only || fresh(r)))
    {
        if let Err(why) = refresh(run) {
            warnings.push(format!(
                "{}: its Slurm job could not be looked at: {why}",
                run.id()
            ));
        }
    }
    warnings
}

fn is_live_job(run: &Run) -> bool {
    run.record.backend == Backend::Slurm
        && run.record.slurm.is_some()
        && matches!(run.record.state, RunState::Starting | RunState::Running)
}

/// Brings one Slurm run's record up to date with its job.
pub(crate) fn refresh(run: &mut Run) -> Result<(), String> {
    let Some(job) = &run.record.slurm else {
        return Ok(());
    };
    let mut record = run.record.clone();
    match observe(&job.job_id)? {
        Some((view, by)) => apply(&mut record, view, by, clock::now_ms()),
        None => vanished(&mut record, clock::now_ms()),
    }
    if record != run.record {
        run.write_record(&record).map_err(|e| e.to_string())?;
        run.record = record;
    }
    Ok(())
}

/// What Slurm said of the job (`by` the tool that said it), as the run's record.
pub(crate) fn apply(record: &mut RunRecord, view: JobView, by: &str, now_ms: u64) {
    let Some(job) = record.slurm.as_mut() else {
        return;
    };
    let ms = |s: Option<u64>| s.map(|s| s * 1000);
    job.nodes = view.nodes.clone().or(job.nodes.take());
    job.elapsed = view.elapsed.clone().or(job.elapsed.take());
    job.reason = view.reason.clone();
    record.state = view.state;
    match view.state {
        RunState::Starting => {
            record.error = view.reason.as_deref().map(|r| explain_wait(&job.job_id, r));
        }
        RunState::Running => {
            record.error = None;
            record.started_ms = ms(view.started_s).or(record.started_ms).or(Some(now_ms));
        }
        _ => {
            record.error = explain_end(&job.job_id, &view);
            // Slurm's own times; a job that never ran has no start, and no exit code of its own
            // (Slurm's is an error number).
            if view.never_ran() {
                record.exit_code = None;
                record.started_ms = None;
            } else {
                record.exit_code = view.exit_code();
                record.started_ms = ms(view.started_s).or(record.started_ms);
            }
            record.ended_ms = ms(view.ended_s).or(record.ended_ms).or(Some(now_ms));
            job.exit = view.exit.clone();
            job.slurm_state = Some(view.slurm_state.clone());
            job.reported_by = Some(by.to_string());
        }
    }
}

/// No Slurm tool knows the job any more: it left the queue, the controller forgot it and no
/// accounting kept its end. How it went cannot be known; it is not guessed.
fn vanished(record: &mut RunRecord, now_ms: u64) {
    let Some(job) = record.slurm.as_ref() else {
        return;
    };
    record.state = RunState::Lost;
    record.ended_ms = record.ended_ms.or(Some(now_ms));
    record.error = Some(format!(
        "Slurm no longer knows job {}: it left the queue and neither accounting (sacct), the          job-completion log (sacct -c) nor the controller (scontrol) has its end, so how it ended          is unknown. Its logs are still readable; turn on accounting or          JobCompType=jobcomp/filetxt to keep job ends",
        job.job_id
    ));
}

/// `gpudeck stop` on a Slurm run: `scancel`, then the job's end once it left RUNNING.
pub(crate) fn stop_job(run: &Run) -> Result<StopOutcome, RunError> {
    let failed = |why: String| RunError::StopFailed {
        id: run.id().to_string(),
        why,
    };
    let mut current = run.reload()?;
    // It may have ended since anyone looked; scancel would refuse a finished job.
    let _ = refresh(&mut current);
    if !matches!(current.record.state, RunState::Starting | RunState::Running) {
        return Ok(StopOutcome::AlreadyFinished(current.record.state));
    }
    let Some(job) = current.record.slurm.clone() else {
        return Err(failed("it was never submitted (no job id)".into()));
    };
    run.request_stop()?;
    cancel(&job.job_id).map_err(failed)?;
    let mut last = Err(String::new());
    let left = wait_for(CANCEL_WAIT, || {
        last = observe(&job.job_id);
        match &last {
            Ok(Some((view, _))) => view.has_ended(),
            Ok(None) => true,
            Err(_) => false,
        }
    });
    if !left {
        let why = last
            .err()
            .unwrap_or_else(|| "it is still in the queue".into());
        return Err(failed(format!(
            "job {} did not end within {}s: {why}",
            job.job_id,
            CANCEL_WAIT.as_secs()
        )));
    }
    let (view, by) = match last {
        Ok(Some(seen)) => seen,
        // Gone from the queue with no record of how: cancelled, as asked.
        _ => (
            JobView {
                state: RunState::Stopped,
                slurm_state: "CANCELLED".into(),
                ..JobView::default()
            },
            "scancel",
        ),
    };
    apply(&mut current.record, view, by, clock::now_ms());
    current.write_record(&current.record)?;
    Ok(StopOutcome::Stopped {
        signal: "scancel",
        run: Box::new(current),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submitted() -> RunRecord {
        let spec = RunSpec {
            command: vec!["python".into(), "train.py".into()],
            ..RunSpec::default()
        };
        let mut record = submitted_record(&spec, "r1".into(), "train".into(), 1_000);
        record.slurm = Some(SlurmJob::submitted(
            "42".into(),
            "/runs/r1/job.sbatch".into(),
            None,
            1_000,
        ));
        record
    }

    fn view(state: RunState, slurm_state: &str) -> JobView {
        JobView {
            state,
            slurm_state: slurm_state.into(),
            ..JobView::default()
        }
    }

    #[test]
    fn a_pending_job_is_starting_with_its_reason_explained() {
        let mut record = submitted();
        let pending = JobView {
            reason: Some("Resources".into()),
            ..view(RunState::Starting, "PENDING")
        };
        apply(&mut record, pending, "squeue", 2_000);
        assert_eq!(record.effective_state(), RunState::Starting);
        assert_eq!(
            record.slurm.as_ref().unwrap().reason.as_deref(),
            Some("Resources")
        );
        let error = record.error.clone().unwrap();
        assert!(
            error.contains("(Resources)") && !error.contains("will not start"),
            "{error}"
        );
        let never = JobView {
            reason: Some("PartitionTimeLimit".into()),
            ..view(RunState::Starting, "PENDING")
        };
        apply(&mut record, never, "squeue", 2_500);
        let error = record.error.clone().unwrap();
        assert!(
            error.contains("will not start") && error.contains("--time"),
            "{error}"
        );
    }

    #[test]
    fn running_then_failed_records_slurms_times_nodes_and_exit() {
        let mut record = submitted();
        let running = JobView {
            nodes: Some("gpu01".into()),
            started_s: Some(2),
            ..view(RunState::Running, "RUNNING")
        };
        apply(&mut record, running, "squeue", 9_000);
        assert_eq!(record.state, RunState::Running);
        // Slurm's start, not when gpudeck happened to look.
        assert_eq!(record.started_ms, Some(2_000));
        assert_eq!(record.error, None);
        let end = JobView {
            exit: Some("3:0".into()),
            started_s: Some(2),
            ended_s: Some(5),
            elapsed: Some("00:00:03".into()),
            ..view(RunState::Failed, "FAILED")
        };
        apply(&mut record, end, "sacct", 60_000);
        assert_eq!(record.state, RunState::Failed);
        assert_eq!(record.exit_code, Some(3));
        assert_eq!(
            (record.started_ms, record.ended_ms),
            (Some(2_000), Some(5_000))
        );
        let job = record.slurm.as_ref().unwrap();
        assert_eq!(job.slurm_state.as_deref(), Some("FAILED"));
        assert_eq!(job.exit.as_deref(), Some("3:0"));
        assert_eq!(job.nodes.as_deref(), Some("gpu01"));
        assert_eq!(job.elapsed.as_deref(), Some("00:00:03"));
        assert_eq!(job.reported_by.as_deref(), Some("sacct"));
        assert!(record.error.as_deref().unwrap().contains("exited with 3"));
    }

    #[test]
    fn a_job_that_failed_to_launch_says_so_and_has_no_start() {
        let mut record = submitted();
        let launch = JobView {
            reason: Some("JobLaunchFailure".into()),
            exit: Some("0:53".into()),
            nodes: Some("vm".into()),
            started_s: Some(4),
            ended_s: Some(4),
            ..view(RunState::Failed, "FAILED")
        };
        apply(&mut record, launch, "scontrol", 9_000);
        assert_eq!(record.state, RunState::Failed);
        assert_eq!((record.started_ms, record.exit_code), (None, None));
        assert_eq!(record.ended_ms, Some(4_000));
        let error = record.error.unwrap();
        assert!(error.contains("failed before starting"), "{error}");
    }

    #[test]
    fn a_job_no_slurm_tool_knows_is_lost_not_guessed() {
        let mut record = submitted();
        apply(
            &mut record,
            view(RunState::Running, "RUNNING"),
            "squeue",
            2_000,
        );
        vanished(&mut record, 7_000);
        assert_eq!(record.state, RunState::Lost);
        assert_eq!(record.exit_code, None);
        assert_eq!(record.ended_ms, Some(7_000));
        assert!(record.error.unwrap().contains("no longer knows job 42"));
    }

    #[test]
    fn an_old_slurm_run_is_never_lost() {
        // No supervisor and long past the start deadline: a local run would be `lost`.
        let record = submitted();
        assert_eq!(record.effective_state(), RunState::Starting);
    }

    #[test]
    fn the_record_round_trips_and_local_records_stay_as_they_were() {
        let record = submitted();
        let text = serde_json::to_string(&record).unwrap();
        assert!(text.contains("\"backend\":\"slurm\""));
        assert!(text.contains("\"job_id\":\"42\""));
        assert_eq!(serde_json::from_str::<RunRecord>(&text).unwrap(), record);
        let mut local = submitted();
        local.backend = Backend::Local;
        local.slurm = None;
        let text = serde_json::to_string(&local).unwrap();
        assert!(!text.contains("backend") && !text.contains("slurm"));
    }
}
