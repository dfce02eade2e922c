//! How a local run's ranks are launched, whichever way: checked before the start (pre-flight),
//! planned (one process per rank, or torchrun's workers and their logs), as processes identified
//! by pid and start time, or in containers (`container/`: planned, checked, started, followed,
//! their output copied, settled when the supervisor is gone). The local backend (`local/`) uses
//! these; the Slurm batch script reuses torchrun's command line.

pub(super) mod container;
pub(super) mod plan;
pub(super) mod preflight;
pub(super) mod procs;
pub(super) mod torchrun;
pub(super) mod worker_logs;
