//! Container runs: the containers of a run's ranks (planned, checked before the start, started and
//! followed under the supervisor, their output copied to the run's logs), what a service's
//! container adds, the engine they are on and the supervisor's link to it, and settling a run
//! whose supervisor is gone. The `container` part of `run.json` is in `record.rs` with the rest
//! of it.

pub(super) mod check;
pub(super) mod engine;
pub(super) mod engine_link;
pub(super) mod logs;
pub(super) mod lost;
pub(super) mod ranks;
pub(super) mod service;
pub(super) mod spec;
