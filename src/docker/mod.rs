//! Docker: the engine connection (bollard), containers, images, events, logs, stats and pulls.

pub mod types;
pub mod update;

pub use types::*;
