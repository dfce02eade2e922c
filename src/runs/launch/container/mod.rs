//! Container runs: the containers of a run's ranks (planned, checked before the start, started and
//! followed under the supervisor, their output copied to the run's logs), what a service's
//! container adds, the engine they are on and the supervisor's link to it, and settling a run
//! whose supervisor is gone. The `container` part of `run.json` is in `record.rs` with the rest
//! of it.

pub(in crate::runs) mod check;
pub(in crate::runs) mod engine;
pub(in crate::runs) mod engine_link;
pub(in crate::runs) mod labels;
pub(in crate::runs) mod logs;
pub(in crate::runs) mod lost;
pub(in crate::runs) mod ranks;
pub(in crate::runs) mod service;
pub(in crate::runs) mod spec;
