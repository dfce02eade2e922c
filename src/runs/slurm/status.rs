//! What Slurm's client tools say about a job, read from their output text: `sbatch --parsable`'s
//! job id or why it refused, `squeue`'s state and reason, and the end `sacct` or `scontrol`
//! reports. Pure: the commands are run elsewhere, so this is tested without a cluster.

use thiserror::Error;

use crate::runs::record::RunState;

/// Why `sbatch` did not take a job, from its exit and stderr.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum SubmitError {
    #[error("sbatch is not installed (not found on PATH)")]
    NotInstalled,
    #[error("sbatch could not be started: {why}")]
    NotStarted { why: String },
    #[error("the Slurm controller could not be reached: {stderr}")]
    Unreachable { stderr: String },
    #[error("Slurm does not know the partition: {stderr}")]
    UnknownPartition { stderr: String },
    #[error("Slurm does not know the account, or it may not use this partition: {stderr}")]
    UnknownAccount { stderr: String },
    #[error("Slurm rejected the job: {stderr}")]
    Rejected { stderr: String },
    #[error("sbatch printed no job id (stdout: `{stdout}`)")]
    NoJobId { stdout: String },
}

impl SubmitError {
    /// What to do about it.
    pub fn fix(&self) -> String {
        match self {
            SubmitError::NotInstalled | SubmitError::NotStarted { .. } => {
                "Install Slurm's client tools (sbatch, squeue, sacct, scancel), or use --dry-run to print the script.".into()
            }
            SubmitError::Unreachable { .. } => "Check that slurmctld runs and that this host's slurm.conf and munge key match the cluster's (`sinfo` should answer).".into(),
            SubmitError::UnknownPartition { .. } => "Pick a partition `sinfo -s` lists (--partition or slurm.partition).".into(),
            SubmitError::UnknownAccount { .. } => "Pick an account `sacctmgr show assoc user=$USER` lists (--account or slurm.account).".into(),
            SubmitError::Rejected { .. } | SubmitError::NoJobId { .. } => {
                "Check the run's slurm settings against what the cluster offers (`sinfo`, `scontrol show partition`).".into()
            }
        }
    }
}

/// The job id from `sbatch --parsable` ("123" or "123;cluster"), or why sbatch refused.
pub fn submitted_job_id(success: bool, stdout: &str, stderr: &str) -> Result<String, SubmitError> {
    if !success {
        return Err(classify_refusal(stderr));
    }
    let first = stdout.lines().next().unwrap_or("").trim();
    let id = first.split(';').next().unwrap_or("");
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(id.to_string());
    }
    Err(SubmitError::NoJobId {
        stdout: stdout.trim().to_string(),
    })
}

/// Which of the refusals sbatch's stderr describes.
pub fn classify_refusal(stderr: &str) -> SubmitError {
    let text = stderr.trim().to_string();
    let lower = text.to_lowercase();
    let has = |needle: &str| lower.contains(needle);
    if has("unable to contact slurm controller")
        || has("could not establish a configuration source")
        || has("connection refused")
        || has("unable to process configuration file")
        || has("munge")
    {
        SubmitError::Unreachable { stderr: text }
    } else if has("invalid partition") {
        SubmitError::UnknownPartition { stderr: text }
    } else if has("invalid account") {
        SubmitError::UnknownAccount { stderr: text }
    } else {
        SubmitError::Rejected { stderr: text }
    }
}

/// A job's place as Slurm tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobView {
    /// Still in the queue: `starting` (pending, with why) or `running`.
    Queued {
        state: RunState,
        reason: Option<String>,
    },
    /// It has ended.
    Ended(JobEnd),
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd {
    pub state: RunState,
    pub exit_code: Option<i32>,
    /// Slurm's own word for it ("TIMEOUT", "CANCELLED by 0").
    pub slurm_state: String,
}

/// `squeue --noheader --format=%T|%r -j ID`: the job while queued; `None` once it left the queue
/// (empty output).
pub fn parse_squeue(stdout: &str) -> Option<JobView> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let (state, reason) = line.split_once('|').unwrap_or((line, ""));
    let reason = match reason.trim() {
        "" | "None" => None,
        r => Some(r.to_string()),
    };
    view_of(state.trim(), None, reason)
}

/// `sacct -n -P -j ID --format=State,ExitCode,Elapsed`: the job's end from its first line (the
/// job itself; steps follow); `None` while it has not ended or sacct knows nothing of it.
pub fn parse_sacct(stdout: &str) -> Option<JobEnd> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut fields = line.split('|');
    let state = fields.next()?.trim();
    let exit = fields.next().and_then(exit_code_of);
    match view_of(state, exit, None)? {
        JobView::Ended(end) => Some(end),
        JobView::Queued { .. } => None,
    }
}

/// `scontrol show job ID`: `JobState=`, `Reason=` and `ExitCode=` of a job the controller still
/// holds; `None` when neither state is there (an invalid job id).
pub fn parse_scontrol(stdout: &str) -> Option<JobView> {
    let field = |key: &str| {
        stdout
            .split_whitespace()
            .find_map(|word| word.strip_prefix(key))
    };
    let state = field("JobState=")?;
    let exit = field("ExitCode=").and_then(exit_code_of);
    let reason = field("Reason=").filter(|r| *r != "None").map(String::from);
    view_of(state, exit, reason)
}

/// Slurm's `CODE:SIGNAL` as one exit code: the code, or 128 + the signal that killed it.
pub fn exit_code_of(text: &str) -> Option<i32> {
    let (code, signal) = text.trim().split_once(':')?;
    let code: i32 = code.parse().ok()?;
    let signal: i32 = signal.parse().ok()?;
    Some(if code == 0 && signal != 0 {
        128 + signal
    } else {
        code
    })
}

/// One of Slurm's job states as a run's; `None` for a word that is no job state (an error text).
fn view_of(slurm_state: &str, exit_code: Option<i32>, reason: Option<String>) -> Option<JobView> {
    // sacct writes "CANCELLED by UID"; fixed-width tools add a "+".
    let word = slurm_state
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches('+');
    let ended = |state| {
        Some(JobView::Ended(JobEnd {
            state,
            exit_code,
            slurm_state: slurm_state.to_string(),
        }))
    };
    match word {
        "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "RESV_DEL_HOLD" => {
            Some(JobView::Queued {
                state: RunState::Starting,
                reason,
            })
        }
        "RUNNING" | "COMPLETING" | "SUSPENDED" | "STAGE_OUT" | "SIGNALING" | "RESIZING" => {
            Some(JobView::Queued {
                state: RunState::Running,
                reason: None,
            })
        }
        "COMPLETED" => ended(RunState::Succeeded),
        "CANCELLED" | "PREEMPTED" => ended(RunState::Stopped),
        "FAILED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY" | "BOOT_FAIL" | "DEADLINE"
        | "REVOKED" | "SPECIAL_EXIT" => ended(RunState::Failed),
        _ => None,
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
