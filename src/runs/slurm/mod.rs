//! The Slurm backend: the `[slurm]` settings of a run spec, why a spec cannot become a batch
//! job, the batch script itself (pure), and what Slurm's tools say of a submitted job.

mod explain;
mod job;
pub(super) mod run;
mod script;
mod status;
mod validate;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use explain::{ended as explain_end, waiting as explain_wait};
pub use job::{cancel, observe, submit_script, SlurmJob};
pub use script::{batch_script, job_shape, log_files};
pub use status::{
    classify_refusal, exit_code_of, parse_sacct, parse_scontrol, parse_squeue, submitted_job_id,
    JobView, SubmitError, SACCT_FORMAT,
};

/// Where a run's processes run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// On this machine, as processes or in containers.
    #[default]
    Local,
    /// As a Slurm batch job (`gpudeck run --on slurm --dry-run` prints its script).
    Slurm,
}

impl Backend {
    pub fn is_local(&self) -> bool {
        *self == Backend::Local
    }
}

/// What the config gives runs that do not say: the backend, and the Slurm settings a spec's
/// `[slurm]` table is laid over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmDefaults {
    pub backend: Backend,
    pub settings: SlurmSettings,
}

/// How a run with an `image` is containerised on the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlurmContainer {
    /// NVIDIA pyxis/enroot: `srun --container-image=...`.
    Pyxis,
    /// `apptainer exec --nv docker://IMAGE ...` around the command.
    Apptainer,
}

/// The `[slurm]` table of a run spec; every field is optional and a flag replaces it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmSettings {
    /// Nodes to run on (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// GPUs on each node (default: the count `gpus` asks for; `count:N` means N per node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<u32>,
    /// Time limit in a form sbatch takes: "02:00:00", "1-00:00:00", "90".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// How an `image` run is containerised; required for a run with an image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<SlurmContainer>,
    /// More `#SBATCH` options, each starting with `--` ("--mem=64G"), written as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<String>,
}

impl SlurmSettings {
    /// These settings with every field `over` sets laid over them (`extra` adds).
    pub fn overlaid(mut self, over: SlurmSettings) -> SlurmSettings {
        self.nodes = over.nodes.or(self.nodes);
        self.gpus_per_node = over.gpus_per_node.or(self.gpus_per_node);
        self.time = over.time.or(self.time);
        self.partition = over.partition.or(self.partition);
        self.account = over.account.or(self.account);
        self.container = over.container.or(self.container);
        self.extra.extend(over.extra);
        self
    }
}

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
            _ => "Correct the value; README.md (Training runs, Slurm) lists what each field takes."
                .into(),
        }
    }
}
