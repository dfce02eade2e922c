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
    #[error("no node can give the job what it asks for (more GPUs, CPUs or memory per node than the partition's nodes have): {stderr}")]
    NodeConfig {
        stderr: String,
        /// What each partition's nodes offer, from sinfo.
        offered: Option<String>,
    },
    #[error("the cluster has no GPUs as a generic resource named `gpu` (GresTypes=gpu): {stderr}")]
    NoGpuGres { stderr: String },
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
            SubmitError::NodeConfig { offered, .. } => match offered {
                Some(offered) => format!("Ask for at most what one node has ({offered}): fewer GPUs per node (`--gpus count:N`) and more --nodes instead."),
                None => "Ask for at most what one node has (`sinfo -o \"%P %D %G\"` lists each partition's GPUs per node): fewer GPUs per node and more --nodes instead.".into(),
            },
            SubmitError::NoGpuGres { .. } => "Run without GPUs (`--gpus none`), or ask the cluster's administrators how its GPUs are requested (`sinfo -o \"%P %G\"` shows each partition's GRES).".into(),
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
    } else if has("invalid generic resource") {
        SubmitError::NoGpuGres { stderr: text }
    } else if has("requested node configuration is not available") {
        SubmitError::NodeConfig {
            stderr: text,
            offered: None,
        }
    } else {
        SubmitError::Rejected { stderr: text }
    }
}

/// What Slurm's tools say of a job: where it is, and what they know of its run. Times come as
/// epoch seconds because every command is run with `SLURM_TIME_FORMAT=%s`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobView {
    /// `Starting` (pending), `Running`, or how it ended.
    pub state: RunState,
    /// Slurm's own word for the state ("PENDING", "TIMEOUT", "CANCELLED by 0").
    pub slurm_state: String,
    /// Why it waits ("Resources", "PartitionTimeLimit") or why it ended ("JobLaunchFailure").
    pub reason: Option<String>,
    /// Slurm's `CODE:SIGNAL`, as reported.
    pub exit: Option<String>,
    /// The nodes it runs or ran on ("node[01-02]").
    pub nodes: Option<String>,
    /// Run time so far, or in all, as Slurm writes it ("00:01:05", "1-02:00:00").
    pub elapsed: Option<String>,
    pub started_s: Option<u64>,
    pub ended_s: Option<u64>,
}

impl JobView {
    /// Its exit code: the code, or 128 + the signal that killed it.
    pub fn exit_code(&self) -> Option<i32> {
        self.exit.as_deref().and_then(exit_code_of)
    }

    pub fn has_ended(&self) -> bool {
        self.state.is_finished()
    }

    /// It ended without its batch script ever running: Slurm allocated it (and so gives it a
    /// start time) but could not launch it, or could not boot its nodes.
    pub fn never_ran(&self) -> bool {
        self.reason.as_deref() == Some("JobLaunchFailure")
            || self.slurm_state.starts_with("BOOT_FAIL")
    }
}

/// `squeue --noheader --format=%T|%r|%N|%M|%S -j ID`: the job while queued; `None` once it left
/// the queue (empty output).
pub fn parse_squeue(stdout: &str) -> Option<JobView> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut fields = line.split('|').map(str::trim);
    let mut view = view_of(fields.next()?)?;
    view.reason = fields.next().and_then(reason_of);
    view.nodes = fields.next().and_then(known);
    view.elapsed = fields.next().and_then(known);
    // For a pending job %S is the scheduler's guess of when it will start.
    if view.state == RunState::Running {
        view.started_s = fields.next().and_then(epoch);
    }
    Some(view)
}

/// The `--format` `parse_sacct` reads.
pub const SACCT_FORMAT: &str = "--format=State,ExitCode,Elapsed,NodeList,Start,End,Reason";

/// `sacct -X -n -P -j ID` with [`SACCT_FORMAT`] (from accounting, or with `-c` from the
/// job-completion log): the job's end; `None` while it has not ended or sacct knows nothing.
pub fn parse_sacct(stdout: &str) -> Option<JobView> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut fields = line.split('|').map(str::trim);
    let mut view = view_of(fields.next()?)?;
    if !view.has_ended() {
        return None;
    }
    view.exit = fields.next().and_then(known);
    view.elapsed = fields.next().and_then(known);
    view.nodes = fields.next().and_then(known);
    view.started_s = fields.next().and_then(epoch);
    view.ended_s = fields.next().and_then(epoch);
    view.reason = fields.next().and_then(reason_of);
    Some(view)
}

/// `scontrol show job ID` of a job the controller still holds; `None` when it has no state (an
/// invalid job id).
pub fn parse_scontrol(stdout: &str) -> Option<JobView> {
    let field = |key: &str| {
        stdout
            .split_whitespace()
            .find_map(|word| word.strip_prefix(key))
    };
    let mut view = view_of(field("JobState=")?)?;
    view.reason = field("Reason=").and_then(reason_of);
    view.nodes = field("NodeList=").and_then(known);
    view.elapsed = field("RunTime=").and_then(known);
    if view.state != RunState::Starting {
        view.started_s = field("StartTime=").and_then(epoch);
    }
    if view.has_ended() {
        view.exit = field("ExitCode=").and_then(known);
        view.ended_s = field("EndTime=").and_then(epoch);
    }
    Some(view)
}

/// Slurm's `CODE:SIGNAL` as one exit code: the code, or 128 + the signal that killed it;
/// `None` for a signal that is no signal number (negative, or past 255).
pub fn exit_code_of(text: &str) -> Option<i32> {
    let (code, signal) = text.trim().split_once(':')?;
    let code: i32 = code.parse().ok()?;
    let signal = i32::from(signal.parse::<u8>().ok()?);
    Some(if code == 0 && signal != 0 {
        128 + signal
    } else {
        code
    })
}

/// A field Slurm filled in: not empty, not one of its words for "nothing".
fn known(text: &str) -> Option<String> {
    match text.trim() {
        "" | "(null)" | "None" | "None assigned" | "N/A" | "Unknown" | "INVALID" => None,
        t => Some(t.to_string()),
    }
}

fn reason_of(text: &str) -> Option<String> {
    known(text.trim_matches(|c| c == '(' || c == ')'))
}

fn epoch(text: &str) -> Option<u64> {
    text.trim().parse().ok().filter(|s| *s > 0)
}

/// One of Slurm's job states as a run's; `None` for a word that is no job state (an error text).
fn view_of(slurm_state: &str) -> Option<JobView> {
    // sacct writes "CANCELLED by UID"; fixed-width tools add a "+".
    let word = slurm_state
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches('+');
    let state = match word {
        "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED"
        | "RESV_DEL_HOLD" => RunState::Starting,
        "RUNNING" | "COMPLETING" | "SUSPENDED" | "STAGE_OUT" | "SIGNALING" | "RESIZING" => {
            RunState::Running
        }
        "COMPLETED" => RunState::Succeeded,
        "CANCELLED" | "PREEMPTED" => RunState::Stopped,
        "FAILED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY" | "BOOT_FAIL" | "DEADLINE"
        | "REVOKED" | "SPECIAL_EXIT" => RunState::Failed,
        _ => return None,
    };
    Some(JobView {
        state,
        slurm_state: slurm_state.trim().to_string(),
        ..JobView::default()
    })
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
