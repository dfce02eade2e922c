//! Slurm runs in the run store: submitting one (its directory, record, batch script and log
//! links), bringing its recorded state up to date from the queue, and cancelling it.

use std::path::Path;
use std::time::Duration;

use super::clock;
use super::error::RunError;
use super::record::{RankRecord, RunRecord, RunState};
use super::slurm::{
    batch_script, cancel, log_files, observe, submit_script, Backend, JobView, SlurmJob,
    SlurmSettings,
};
use super::spec::RunSpec;
use super::stop::{wait_for, StopOutcome};
use super::store::{log_path, write_atomic, LogStream, Run, RunStore};

/// The batch script's name in the run directory.
pub const SCRIPT_FILE: &str = "job.sbatch";
/// How long a cancelled job gets to leave RUNNING.
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// Records the run, writes its script and submits it; the run, `starting` with its job id, or
/// `failed` with sbatch's refusal (returned as the error too).
pub fn submit(spec: &RunSpec, settings: &SlurmSettings, store: &RunStore) -> Result<Run, RunError> {
    let now = clock::now_ms();
    let name = spec.effective_name();
    let (id, dir) = store.create(&name, &spec.to_toml(), now)?;
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
    let job_id = match submit_script(&run.dir.join(SCRIPT_FILE)) {
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
    run.record.slurm = Some(SlurmJob {
        job_id,
        script: run.dir.join(SCRIPT_FILE),
        partition: settings.partition.clone(),
        submitted_ms: now,
        reason: None,
        slurm_state: None,
    });
    run.write_record(&run.record)?;
    Ok(run)
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

/// Every unfinished Slurm run gets what Slurm says of its job, recorded in `run.json` when it
/// changed; a warning for each job that could not be looked at.
pub(crate) fn look_at_jobs(runs: &mut [Run]) -> Vec<String> {
    let mut warnings = Vec::new();
    for run in runs.iter_mut().filter(|r| is_live_job(r)) {
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
        && !run.record.state.is_finished()
}

/// Brings one Slurm run's record up to date with its job.
pub(crate) fn refresh(run: &mut Run) -> Result<(), String> {
    let Some(job) = &run.record.slurm else {
        return Ok(());
    };
    let Some(view) = observe(&job.job_id)? else {
        return Ok(());
    };
    let mut record = run.record.clone();
    apply(&mut record, view, clock::now_ms());
    if record != run.record {
        run.write_record(&record).map_err(|e| e.to_string())?;
        run.record = record;
    }
    Ok(())
}

/// What the queue said, as the run's record.
pub(crate) fn apply(record: &mut RunRecord, view: JobView, now_ms: u64) {
    let Some(job) = record.slurm.as_mut() else {
        return;
    };
    match view {
        JobView::Queued { state, reason } => {
            record.state = state;
            job.reason = reason.clone();
            record.error = reason.map(|r| format!("pending in the Slurm queue: {r}"));
            if state == RunState::Running {
                record.started_ms = record.started_ms.or(Some(now_ms));
            }
        }
        JobView::Ended(end) => {
            record.state = end.state;
            record.exit_code = end.exit_code;
            record.ended_ms = Some(now_ms);
            job.reason = None;
            record.error = match end.state {
                RunState::Succeeded => None,
                _ => Some(format!("Slurm ended the job as {}", end.slurm_state)),
            };
            job.slurm_state = Some(end.slurm_state);
        }
    }
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
    if current.record.state.is_finished() {
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
        !matches!(&last, Ok(Some(JobView::Queued { .. })) | Err(_))
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
    let view = match last {
        Ok(Some(view @ JobView::Ended(_))) => view,
        // Gone from the queue with no record of how: cancelled, as asked.
        _ => JobView::Ended(super::slurm::JobEnd {
            state: RunState::Stopped,
            exit_code: None,
            slurm_state: "CANCELLED".into(),
        }),
    };
    apply(&mut current.record, view, clock::now_ms());
    current.write_record(&current.record)?;
    Ok(StopOutcome::Stopped {
        signal: "scancel",
        run: Box::new(current),
    })
}

#[cfg(test)]
#[path = "slurm_run_tests.rs"]
mod tests;
