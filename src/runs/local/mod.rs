//! The local backend: runs supervised on this host, as processes or in containers. Starting one
//! (pre-flight and the detached supervisor), the supervisor itself, whether a run still holds
//! its GPUs, the processes it leaves and how they are told apart from other users', and stopping
//! it. How the ranks are launched is in `launch/`; what the supervisor records, in `recorded`.

pub(super) mod detach;
pub(super) mod liveness;
pub(super) mod stop;
pub(super) mod supervisor;

/// How stopping a local run goes, in a few words for a status line.
pub(super) const HOW_IT_STOPS: &str = "SIGINT, then SIGTERM, then SIGKILL…";
