//! A run its backend holds as a job somewhere else (a Slurm batch job), as the rest of the
//! program shows it: the same facts whatever the backend, so the Runs tab, `gpudeck runs`, the
//! status line and the metrics never look into a backend's own part of `run.json`. Each backend
//! with such jobs fills it in (`slurm/job.rs`); `backend.rs` picks the one a run is on.

/// What there is to show of a run held as a job elsewhere. A run supervised on this machine has
/// none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteJob {
    /// The backend's id for it, as a fact to show: "123".
    pub id: String,
    /// How people call it: "Slurm job 123".
    pub name: String,
    /// Where it runs, in a few words: "2 GPUs/node on gpu[01-02]".
    pub placement: String,
    /// Its GPUs in a narrow column: "4/node", or the backend's name when it asked for none.
    pub gpus: String,
    /// Why it waits, in its scheduler's words ("Resources").
    pub reason: Option<String>,
    /// How stopping it goes, for a status line: "cancelling Slurm job 123 (scancel)…".
    pub stopping: String,
}
