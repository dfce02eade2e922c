//! The `slurm` section of a Slurm run's `run.json`: the job as submitted and what the queue last
//! said of it. Kept with the record, so the record imports no backend; the Slurm backend
//! (`slurm/`) writes it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The `slurm` section of a Slurm run's `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmJob {
    pub job_id: String,
    /// The batch script as submitted, in the run directory.
    pub script: PathBuf,
    #[serde(default)]
    pub partition: Option<String>,
    pub submitted_ms: u64,
    /// Nodes asked for (0 in records written before it was kept).
    #[serde(default)]
    pub node_count: u32,
    /// GPUs asked for on each node.
    #[serde(default)]
    pub gpus_per_node: u32,
    /// Why the job waits in the queue (squeue's reason: "Resources", "Priority").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Slurm's own word for how it ended ("TIMEOUT", "CANCELLED by 0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_state: Option<String>,
    /// Its exit as Slurm reported it (`CODE:SIGNAL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
    /// The nodes it ran on, as Slurm writes them ("gpu[01-02]").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    /// Its run time as Slurm counted it ("00:01:05").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed: Option<String>,
    /// Which tool told its end: "sacct" (accounting), "sacct -c" (job-completion log) or
    /// "scontrol" (the controller, for a few minutes after the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_by: Option<String>,
}

impl SlurmJob {
    /// Where it runs, in a few words: "2 GPUs/node on gpu[01-02]", "1 GPU on vm", "no GPU".
    pub fn placement(&self) -> String {
        let gpus = match (self.gpus_per_node, self.node_count) {
            (0, _) => "no GPU".to_string(),
            (1, 0 | 1) => "1 GPU".to_string(),
            (n, 0 | 1) => format!("{n} GPUs"),
            (n, _) => format!("{n} GPU{}/node", if n == 1 { "" } else { "s" }),
        };
        match (&self.nodes, self.node_count) {
            (Some(nodes), _) => format!("{gpus} on {nodes}"),
            (None, 0 | 1) => gpus,
            (None, n) => format!("{gpus} on {n} nodes"),
        }
    }

    /// A job just submitted.
    pub fn submitted(job_id: String, script: PathBuf, partition: Option<String>, now: u64) -> Self {
        SlurmJob {
            job_id,
            script,
            partition,
            submitted_ms: now,
            node_count: 0,
            gpus_per_node: 0,
            reason: None,
            slurm_state: None,
            exit: None,
            nodes: None,
            elapsed: None,
            reported_by: None,
        }
    }
}
