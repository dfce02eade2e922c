//! Why a run spec cannot become a Slurm batch script, and what to do about it.

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
