//! The run settings the config and a run spec share: which backend a run goes to (`[runs]
//! backend`, a spec's `backend`) and the `[slurm]` table; the runs take them from here.

use serde::{Deserialize, Serialize};

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
