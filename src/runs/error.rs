//! Why a run could not be specified, started, found or stopped, each with what to do about it.

pub(super) mod slurm;

use std::path::PathBuf;

use thiserror::Error;

use crate::docker::DockerError;
use crate::launch_check::{LaunchError, Workload};
use crate::shell::ShellError;
use slurm::{SlurmError, SubmitError};

/// A failure of `gpudeck run`, `runs`, `logs` or `stop` (or the TUI's twins of them).
#[derive(Debug, Error)]
pub enum RunError {
    #[error("{location}: {reason}")]
    BadSpec { location: String, reason: String },
    #[error("`{value}` is not a GPU selection: {why}")]
    BadGpuList { value: String, why: String },
    #[error("`{value}` is not an environment variable assignment: {why}")]
    BadEnv { value: String, why: String },
    #[error("`{program}` is not a run spec file, and a command goes after `--`")]
    CommandBeforeDashes { program: String, suggestion: String },
    #[error("{spec} is a run spec, so `{extra}` after it means nothing")]
    ExtraAfterSpec { spec: String, extra: String },
    #[error("the script {script} does not exist here")]
    ScriptMissing { script: String },
    #[error("both a script ({script}) and a command after `--` were given")]
    ScriptAndCommand { script: String },
    #[error("the run has no command")]
    NoCommand,
    #[error(
        "the {launcher} launcher without GPUs (gpus = \"none\") needs to be told how many \
         workers to start"
    )]
    NeedsGpus { launcher: &'static str },
    #[error("{workers} workers cannot be started: {why}")]
    BadWorkers { workers: usize, why: String },
    #[error("a {kind} service is one process, so the {launcher} launcher cannot start it")]
    ServiceLauncher {
        kind: &'static str,
        launcher: &'static str,
    },
    #[error(
        "a {kind} service in a container cannot be on the host's network (host_network = true): \
         Docker publishes no ports from it, and a service is reached only through its ports on \
         the host's 127.0.0.1"
    )]
    ServiceOnHostNetwork { kind: &'static str },
    #[error("the {kind} service's ports are not usable: {why}")]
    ServicePorts { kind: &'static str, why: String },
    #[error("{short} (the run asks for {need} free on each GPU)")]
    NotEnoughGpuMemory {
        need: String,
        short: String,
        /// GPUs that do have that much free, to name in the fix.
        roomy: String,
    },
    /// What pre-flight shares with shells: GPUs, toolkit, image, verdict, workspace.
    #[error("{0}")]
    Launch(LaunchError),
    #[error("{0}")]
    Docker(DockerError),
    #[error("{0}")]
    Container(ShellError),
    #[error(
        "GPU {lost} has fallen off the bus (NVML: GPU is lost); a run on it would fail at its \
         first CUDA call"
    )]
    LostGpu { lost: String, healthy: String },
    #[error("{wanted} GPUs wanted, but this machine has only {count}: {present}")]
    TooFewGpus {
        wanted: usize,
        count: usize,
        present: String,
    },
    #[error("{wanted} free GPU{} wanted, but {free}", if *wanted == 1 { "" } else { "s" })]
    NotEnoughFreeGpus { wanted: usize, free: String },
    #[error("the command `{program}` was not found: {why}")]
    CommandNotFound { program: String, why: String },
    #[error("torchrun cannot run this command: {why}")]
    TorchrunCommand { why: String, instead: String },
    #[error("the work directory {path} cannot be used: {why}")]
    BadWorkdir { path: PathBuf, why: String },
    #[error("no free TCP port on 127.0.0.1 for the ranks to meet on: {why}")]
    NoFreePort { why: String },
    #[error("the run store {path} cannot be used: {why}")]
    Store { path: PathBuf, why: String },
    #[error("the run store {path} cannot be read: {why}")]
    StoreUnreadable { path: PathBuf, why: String },
    #[error("the run record {path} is damaged: {why}")]
    DamagedRun { path: PathBuf, why: String },
    #[error("the log {path} is gone: {why}")]
    LogGone { path: PathBuf, why: String },
    #[error("no run matches `{query}`")]
    UnknownRun { query: String, recent: Vec<String> },
    #[error("`{query}` matches several runs: {matches}")]
    AmbiguousRun { query: String, matches: String },
    #[error("the supervisor of {id} could not be started: {why}")]
    SupervisorFailed { id: String, why: String },
    #[error("the run {id} could not be stopped: {why}")]
    StopFailed { id: String, why: String },
    #[error(
        "the Docker Engine at {host} is away,\nso the containers of {id} cannot be stopped now;\nits supervisor was told to stop them once the engine is back"
    )]
    StopDeferred { id: String, host: String },
    #[error("rank {rank} has no {stream} log in {id}")]
    NoSuchLog {
        id: String,
        rank: usize,
        stream: &'static str,
    },
    #[error("the metrics file {path} cannot be read: {why}")]
    BadMetrics { path: PathBuf, why: String },
    #[error("{id} has no GPU metrics: {why}")]
    NoMetrics { id: String, why: String },
    #[error("the export could not be written to {path}: {why}")]
    ExportNotWritten { path: PathBuf, why: String },
    #[error("{0}")]
    Slurm(SlurmError),
    #[error("the job was not submitted: {0}")]
    SlurmSubmit(#[from] SubmitError),
    #[error("{flag} only applies to the slurm backend (--on slurm)")]
    SlurmOnly { flag: &'static str },
    #[error("{0}")]
    Claims(#[from] crate::claims::ClaimError),
}

impl RunError {
    /// What to do about it, in concrete steps.
    /// Whether it is a mistake in the command line or the spec file (exit code 2), not a
    /// failure to do what was asked.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RunError::BadSpec { .. }
                | RunError::BadGpuList { .. }
                | RunError::BadEnv { .. }
                | RunError::NoCommand
                | RunError::BadWorkers { .. }
                | RunError::ServiceLauncher { .. }
                | RunError::ServiceOnHostNetwork { .. }
                | RunError::ServicePorts { .. }
                | RunError::CommandBeforeDashes { .. }
                | RunError::ExtraAfterSpec { .. }
                | RunError::ScriptAndCommand { .. }
                | RunError::ScriptMissing { .. }
                | RunError::Slurm(_)
                | RunError::SlurmOnly { .. }
        )
    }

    pub fn fix(&self) -> String {
        match self {
            RunError::BadSpec { .. } => "Correct the spec file; docs/runs.md lists every field.".into(),
            RunError::BadGpuList { .. } => {
                "Write GPU indices such as `0,1`, GPU UUIDs (`gpudeck gpus` shows them), `count:2` for two free GPUs, or `all`.".into()
            }
            RunError::BadEnv { .. } => "Write `--env NAME=VALUE`, one variable per flag.".into(),
            RunError::CommandBeforeDashes { suggestion, .. } => format!(
                "To run it, type:\n  {suggestion}\n(arguments after `--` are the program's own, never gpudeck's)."
            ),
            RunError::ExtraAfterSpec { spec, .. } => format!(
                "Give the spec alone (gpudeck run {spec}); the command goes in the spec or after `--`."
            ),
            RunError::ScriptMissing { .. } => {
                "Check its name, cd to the directory that has it, or give its path.".into()
            }
            RunError::ScriptAndCommand { .. } => {
                "Give one: the script (gpudeck run train.py) or the command after `--` (gpudeck run -- python train.py).".into()
            }
            RunError::NoCommand => {
                "Give the command after `--` (gpudeck run --gpus 0,1 -- python train.py) or as `command = [...]` in the spec.".into()
            }
            RunError::NotEnoughGpuMemory { roomy, .. } if roomy.is_empty() => "No GPU has that \
                much free now: free memory (the Processes tab shows what holds it; `gpudeck runs` \
                lists runs to stop), or ask for less with --gpu-memory."
                .into(),
            RunError::NotEnoughGpuMemory { roomy, .. } => format!(
                "Choose GPUs with enough free memory (--gpus {roomy}), free memory on these (the \
                 Processes tab shows what holds it), or ask for less with --gpu-memory."
            ),
            RunError::NeedsGpus { .. } => {
                "Give the number of CPU workers (`--workers 2`, or `workers = 2` in the spec; they meet over gloo), or GPUs (`--gpus 0,1`: one worker per GPU).".into()
            }
            RunError::BadWorkers { .. } => {
                "Give `--workers N` only with `--gpus none` and the torchrun or per-gpu launcher, on the host; with GPUs there is one worker per GPU, so leave it out.".into()
            }
            RunError::ServiceLauncher { .. } => {
                "Leave out the launcher (or write `launcher = \"single\"`): the service's one process sees every GPU it is given.".into()
            }
            RunError::ServicePorts { .. } => {
                "Give each port a name and a number from 1 to 65535, no number twice: ports = [{ name = \"http\", port = 8888 }]; gpudeck notebook picks free ones for you.".into()
            }
            RunError::ServiceOnHostNetwork { .. } => {
                "Leave out `host_network = true`: the service's ports are published on the host's 127.0.0.1 from Docker's bridge network.".into()
            }
            RunError::Launch(e) => e.fix(),
            RunError::Docker(e) => e.fix().into(),
            RunError::Container(e) => e.fix(),
            RunError::TooFewGpus { count, .. } => format!(
                "Ask for at most count:{count}, or `--gpus all` for every GPU."
            ),
            RunError::LostGpu { healthy, .. } if healthy.is_empty() => {
                "No GPU answers: reset it (`nvidia-smi -r`) or reboot; `gpudeck doctor` and `dmesg` (Xid 79) say more.".into()
            }
            RunError::LostGpu { healthy, .. } => format!(
                "Pick GPUs that answer (--gpus {healthy}), or reset it (`nvidia-smi -r`) or reboot; `gpudeck doctor` and `dmesg` (Xid 79) say more."
            ),
            RunError::NotEnoughFreeGpus { .. } => {
                "Ask for fewer, wait for the busy ones, or name GPUs by index (`--gpus 0,1`) to share them.".into()
            }
            RunError::CommandNotFound { .. } => {
                "Check the spelling, activate the environment that has it (conda/venv), or give its full path.".into()
            }
            RunError::TorchrunCommand { instead, .. } => format!("Run it as `{instead}`."),
            RunError::BadWorkdir { .. } => "Pass an existing directory with --workdir (or cd into one).".into(),
            RunError::NoFreePort { .. } => {
                "Check that the loopback interface is up (`ip addr show lo`) and that ports are not exhausted.".into()
            }
            RunError::Store { path, .. } => format!(
                "Check that {} is yours and writable, or point GPUDECK_DATA_DIR elsewhere.",
                path.display()
            ),
            RunError::StoreUnreadable { path, .. } => format!(
                "Check that {} is a directory you can read (ls -ld it), or point\n\
                 GPUDECK_DATA_DIR at the data directory that holds it.",
                path.display()
            ),
            RunError::DamagedRun { path, .. } => format!(
                "The run's logs and metrics are still in {}.\n\
                 Restore run.json from a backup, or move the directory out of the store\n\
                 to hide the run.",
                path.parent().unwrap_or(path).display()
            ),
            RunError::LogGone { path, .. } => format!(
                "The run's other files (metrics.csv, run.json) are still in {}.",
                path.parent().unwrap_or(path).display()
            ),
            RunError::UnknownRun { recent, .. } if recent.is_empty() => {
                "There are no runs yet; start one with `gpudeck run`.".into()
            }
            RunError::UnknownRun { recent, .. } => format!(
                "Recent runs (`gpudeck runs` lists all): {}",
                recent.join(", ")
            ),
            RunError::AmbiguousRun { .. } => "Give more of the run id.".into(),
            RunError::SupervisorFailed { .. } => {
                "Its supervisor.log in the run directory says more; `gpudeck runs` shows the run's state.".into()
            }
            RunError::StopDeferred { .. } => {
                "Start the engine (`sudo systemctl start docker`); `gpudeck runs` then shows the\nrun as stopped.".into()
            }
            RunError::StopFailed { .. } => {
                "Check `gpudeck runs` and the processes (`ps -o pid,pgid,cmd -g PGID`); kill them by hand if needed.".into()
            }
            RunError::NoSuchLog { .. } => "`gpudeck runs --json` shows how many ranks the run has.".into(),
            RunError::BadMetrics { .. } => {
                "The run's supervisor writes it; restore it if it was edited, or move it aside to export the rest.".into()
            }
            RunError::NoMetrics { .. } => {
                "The supervisor samples a run's GPUs once a second from its start; `metrics_error` in `gpudeck runs --json` says why it could not.".into()
            }
            RunError::ExportNotWritten { .. } => {
                "Check that the directory exists and is writable, or leave out --output to print to stdout.".into()
            }
            RunError::Slurm(e) => e.fix(),
            RunError::SlurmSubmit(e) => e.fix(),
            RunError::Claims(e) => e.fix(),
            RunError::SlurmOnly { flag } => format!(
                "Leave out {flag} to start the run here, or add --on slurm for a batch job."
            ),
        }
    }

    /// The run directory a damaged record belongs to.
    pub(crate) fn run_dir(&self) -> Option<&std::path::Path> {
        match self {
            RunError::DamagedRun { path, .. } => path.parent(),
            _ => None,
        }
    }

    pub(crate) fn store(path: &std::path::Path, why: impl std::fmt::Display) -> Self {
        RunError::Store {
            path: path.to_path_buf(),
            why: why.to_string(),
        }
    }
}

impl From<SlurmError> for RunError {
    fn from(e: SlurmError) -> Self {
        RunError::Slurm(e)
    }
}

impl From<DockerError> for RunError {
    /// The engine's own "no GPU driver" answer means what pre-flight would have said.
    fn from(e: DockerError) -> Self {
        match e {
            DockerError::NoGpuRuntime { detail } => RunError::Launch(LaunchError::NoToolkit {
                workload: Workload::Run,
                detail,
            }),
            other => RunError::Docker(other),
        }
    }
}

impl From<LaunchError> for RunError {
    fn from(e: LaunchError) -> Self {
        RunError::Launch(e)
    }
}

impl From<ShellError> for RunError {
    /// A shell's refusals worded for a run where the fix differs.
    fn from(e: ShellError) -> Self {
        let workload = Workload::Run;
        match e {
            ShellError::Launch(LaunchError::NoToolkit { detail, .. }) => {
                RunError::Launch(LaunchError::NoToolkit { workload, detail })
            }
            ShellError::Launch(LaunchError::WontRun { image, reasons, .. }) => {
                RunError::Launch(LaunchError::WontRun {
                    workload,
                    image,
                    reasons,
                })
            }
            ShellError::Launch(e) => RunError::Launch(e),
            ShellError::Docker(e) => RunError::from(e),
            other => RunError::Container(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shells_refusals_read_as_a_runs() {
        let toolkit = ShellError::from(DockerError::NoGpuRuntime {
            detail: "could not select device driver".into(),
        });
        assert!(toolkit.fix().contains("gives a shell without GPUs"));
        let run = RunError::from(toolkit);
        assert_eq!(run.to_string(), crate::launch_check::TOOLKIT_MESSAGE);
        assert!(run
            .fix()
            .ends_with("Until then `--gpus none` runs it without GPUs."));
        let wont_run = ShellError::Launch(LaunchError::WontRun {
            workload: Workload::Shell,
            image: "new:1".into(),
            reasons: "  - r".into(),
        });
        let run = RunError::from(wont_run);
        assert!(run.fix().contains("or run on the host"), "{}", run.fix());
        assert!(!run.fix().contains("--force"), "gpudeck run has no --force");
    }
}
