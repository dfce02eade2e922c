//! A submitted job: what `run.json` keeps of it, and the Slurm client commands that submit,
//! look at and cancel it (each run with an argv, never through a shell).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::{Deserialize, Serialize};

use super::status::{parse_sacct, parse_scontrol, parse_squeue, submitted_job_id};
use super::{JobView, SubmitError};

/// The `slurm` section of a Slurm run's `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmJob {
    pub job_id: String,
    /// The batch script as submitted, in the run directory.
    pub script: PathBuf,
    #[serde(default)]
    pub partition: Option<String>,
    pub submitted_ms: u64,
    /// Why the job waits in the queue (squeue's reason: "Resources", "Priority").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Slurm's own word for how it ended ("TIMEOUT", "CANCELLED by 0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_state: Option<String>,
}

/// `sbatch --parsable SCRIPT`: the job id.
pub fn submit_script(script: &Path) -> Result<String, SubmitError> {
    let output = Command::new("sbatch")
        .arg("--parsable")
        .arg(script)
        .output()
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => SubmitError::NotInstalled,
            _ => SubmitError::NotStarted { why: e.to_string() },
        })?;
    submitted_job_id(
        output.status.success(),
        &String::from_utf8_lossy(&output.stdout),
        &String::from_utf8_lossy(&output.stderr),
    )
}

/// What Slurm says of the job: squeue while it is queued, then sacct (when accounting is on),
/// then scontrol (while the controller still holds it). `None` when none of them knows it.
pub fn observe(job_id: &str) -> Result<Option<JobView>, String> {
    let squeue = tool("squeue", &["--noheader", "--format=%T|%r", "-j", job_id])?;
    if squeue.status.success() {
        if let Some(view) = parse_squeue(&String::from_utf8_lossy(&squeue.stdout)) {
            return Ok(Some(view));
        }
    } else if !stderr_of(&squeue).contains("Invalid job id") {
        return Err(format!("squeue failed: {}", stderr_of(&squeue)));
    }
    let fields = "--format=State,ExitCode,Elapsed";
    let sacct = tool("sacct", &["-n", "-P", "-j", job_id, fields]);
    if let Some(sacct) = sacct.ok().filter(|o| o.status.success()) {
        if let Some(end) = parse_sacct(&String::from_utf8_lossy(&sacct.stdout)) {
            return Ok(Some(JobView::Ended(end)));
        }
    }
    let scontrol = tool("scontrol", &["show", "job", job_id])?;
    Ok(parse_scontrol(&String::from_utf8_lossy(&scontrol.stdout)))
}

/// `scancel ID`.
pub fn cancel(job_id: &str) -> Result<(), String> {
    let output = tool("scancel", &[job_id])?;
    match output.status.success() {
        true => Ok(()),
        false => Err(format!("scancel failed: {}", stderr_of(&output))),
    }
}

fn tool(program: &str, args: &[&str]) -> Result<Output, String> {
    Command::new(program)
        .args(args)
        .output()
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => format!("{program} is not installed (not found on PATH)"),
            _ => format!("{program} could not be started: {e}"),
        })
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_string()
}
