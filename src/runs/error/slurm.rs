//! The Slurm backend's errors, each with what to do about it: why a run spec cannot become a
//! batch script, and why `sbatch` did not take it. Below `RunError`, which carries them, so the
//! errors import no backend.

use thiserror::Error;

/// Why a run spec cannot become a Slurm batch script.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SlurmError {
    #[error(
        "gpus = \"{selection}\" names GPUs, but on Slurm the scheduler picks them; \
         ask for `count:N` (N per node) or set slurm.gpus_per_node"
    )]
    NamedGpus { selection: String },
    #[error("gpus = \"all\" has no meaning on a cluster; set slurm.gpus_per_node (or gpus = \"count:N\")")]
    AllGpus,
    #[error("the {launcher} launcher needs at least one GPU per node")]
    NeedsGpus { launcher: &'static str },
    #[error("the single launcher starts one task, so it runs on one node, not {nodes}")]
    SingleOnManyNodes { nodes: u32 },
    #[error("slurm.nodes must be at least 1")]
    NoNodes,
    #[error("the {field} `{value}` cannot be used: {why}")]
    BadValue {
        field: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("the extra #SBATCH line `{line}` cannot be used: {why}")]
    BadExtra { line: String, why: &'static str },
    #[error("the run has an image but slurm.container is not set (pyxis or apptainer)")]
    NoContainerSupport,
    #[error("the run has no command")]
    NoCommand,
    #[error("torchrun cannot run this command: {why}")]
    TorchrunCommand { why: String, instead: String },
}

impl SlurmError {
    /// What to do about it.
    pub fn fix(&self) -> String {
        match self {
            SlurmError::NamedGpus { .. } | SlurmError::AllGpus => {
                "Write `--gpus count:N` or `gpus_per_node = N` under [slurm].".into()
            }
            SlurmError::NeedsGpus { .. } => {
                "Ask for GPUs (`--gpus count:N`) or use `--launcher single`.".into()
            }
            SlurmError::SingleOnManyNodes { .. } => {
                "Use `--launcher torchrun` or `per-gpu` for several nodes, or `--nodes 1`.".into()
            }
            SlurmError::NoContainerSupport => "Set `container = \"pyxis\"` or \
                `container = \"apptainer\"` under [slurm], as the cluster supports."
                .into(),
            SlurmError::TorchrunCommand { instead, .. } => format!("Run it as `{instead}`."),
            _ => "Correct the value; docs/slurm.md lists what each field takes.".into(),
        }
    }
}

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
