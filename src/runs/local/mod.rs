//! Runs supervised on this host, as processes or in containers: starting one (pre-flight, the
//! launcher's ranks, the detached supervisor), the supervisor and its GPU sampler, the processes
//! it leaves and how they are told apart from other users', the run's lock, stopping it, and the
//! Xids its GPUs report while it runs (`xids.jsonl`).

pub(super) mod detach;
pub(super) mod launch;
pub mod leftovers;
pub(super) mod preflight;
pub(crate) mod procs;
pub(super) mod run_lock;
pub(super) mod sampler;
pub(super) mod stop;
pub(super) mod supervisor;
pub(super) mod torchrun;
pub(super) mod worker_logs;
pub(super) mod xid_record;
