//! A submitted job: the Slurm client commands that submit, look at and cancel it (each run with
//! an argv, never through a shell). What `run.json` keeps of it is `record::SlurmJob`.

use std::io::ErrorKind;
use std::path::Path;
use std::process::{Command, Output};

use super::status::JobView;
use super::status::{parse_sacct, parse_scontrol, parse_squeue, submitted_job_id, SACCT_FORMAT};
use crate::runs::error::slurm::SubmitError;
use crate::runs::record::RemoteJob;
pub use crate::runs::record::SlurmJob;

impl SlurmJob {
    /// The job as the rest of the program shows a run held elsewhere.
    pub(in crate::runs) fn remote_job(&self) -> RemoteJob {
        RemoteJob {
            id: self.job_id.clone(),
            name: format!("Slurm job {}", self.job_id),
            placement: self.placement(),
            gpus: match self.gpus_per_node {
                0 => "slurm".into(),
                n => format!("{n}/node"),
            },
            reason: self.reason.clone(),
            stopping: format!("cancelling Slurm job {} (scancel)…", self.job_id),
        }
    }
}

/// `sbatch --parsable --chdir=WORKDIR SCRIPT`: the job id. Slurm starts the batch script in
/// `workdir` on the node, and fails the launch (JobLaunchFailure) where it does not exist,
/// instead of starting it in /tmp.
pub fn submit_script(script: &Path, workdir: &Path) -> Result<String, SubmitError> {
    let mut chdir = std::ffi::OsString::from("--chdir=");
    chdir.push(workdir);
    let output = Command::new("sbatch")
        .arg("--parsable")
        .arg(chdir)
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
    .map_err(|e| match e {
        SubmitError::NodeConfig { stderr, .. } => SubmitError::NodeConfig {
            stderr,
            offered: partitions_offer(),
        },
        e => e,
    })
}

/// What each partition's nodes offer ("debug: 1 node, gpu:2"), for a job asking for more.
fn partitions_offer() -> Option<String> {
    let out = tool("sinfo", &["--noheader", "--format=%P|%D|%G"]).ok()?;
    let offer = offer_of(&String::from_utf8_lossy(&out.stdout));
    out.status.success().then_some(offer)?
}

/// `sinfo --noheader --format=%P|%D|%G` in a few words; `None` when it lists no partition.
pub(crate) fn offer_of(sinfo_stdout: &str) -> Option<String> {
    let lines: Vec<String> = sinfo_stdout
        .lines()
        .filter_map(|line| {
            let mut f = line.split('|').map(str::trim);
            let (partition, nodes, gres) = (f.next()?, f.next()?, f.next()?);
            let plural = if nodes == "1" { "" } else { "s" };
            let gres = if gres == "(null)" { "no GPUs" } else { gres };
            Some(format!("{partition}: {nodes} node{plural}, {gres}"))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// What Slurm says of the job: squeue while it is queued; once it left the queue, sacct from
/// accounting, else scontrol (while the controller still holds it, a few minutes), else sacct
/// from the job-completion log. `None` when none of them knows it. The tool that told is named
/// with the view.
pub fn observe(job_id: &str) -> Result<Option<(JobView, &'static str)>, String> {
    let squeue = tool(
        "squeue",
        &["--noheader", "--format=%T|%r|%N|%M|%S", "-j", job_id],
    )?;
    if squeue.status.success() {
        if let Some(view) = parse_squeue(&String::from_utf8_lossy(&squeue.stdout)) {
            return Ok(Some((view, "squeue")));
        }
    } else if !stderr_of(&squeue).contains("Invalid job id") {
        return Err(format!("squeue failed: {}", stderr_of(&squeue)));
    }
    if let Some(view) = sacct(job_id, false) {
        return Ok(Some((view, "sacct")));
    }
    let scontrol = tool("scontrol", &["show", "job", job_id])?;
    if let Some(view) = parse_scontrol(&String::from_utf8_lossy(&scontrol.stdout)) {
        return Ok(Some((view, "scontrol")));
    }
    Ok(sacct(job_id, true).map(|view| (view, "sacct -c")))
}

/// The job's end from accounting, or (`completions`) from the job-completion log; `None` when
/// that source is off or does not know the job.
fn sacct(job_id: &str, completions: bool) -> Option<JobView> {
    let mut args = vec!["-X", "-n", "-P", "-j", job_id, SACCT_FORMAT];
    if completions {
        args.push("-c");
    }
    let out = tool("sacct", &args).ok().filter(|o| o.status.success())?;
    parse_sacct(&String::from_utf8_lossy(&out.stdout))
}

/// `scancel ID`.
pub fn cancel(job_id: &str) -> Result<(), String> {
    let output = tool("scancel", &[job_id])?;
    match output.status.success() {
        true => Ok(()),
        false => Err(format!("scancel failed: {}", stderr_of(&output))),
    }
}

/// Runs one of Slurm's client tools; times come as epoch seconds.
fn tool(program: &str, args: &[&str]) -> Result<Output, String> {
    Command::new(program)
        .args(args)
        .env("SLURM_TIME_FORMAT", "%s")
        .output()
        .map_err(|e| match e.kind() {
            ErrorKind::NotFound => format!("{program} is not installed (not found on PATH)"),
            _ => format!("{program} could not be started: {e}"),
        })
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_string()
}
