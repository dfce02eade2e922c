//! Following runs as they go: the runs collector behind the dashboard's Runs tab (and the
//! messages it speaks), the store's index, tails of a run's logs, and `gpudeck logs`.

mod collector;
pub(super) mod index;
pub(super) mod logs;
pub mod pace;
pub mod tail;
mod update;

pub use collector::{spawn, RunsHandle, Watcher};
pub use update::{GpuTrace, LogChunk, ProgressView, RunDetail, RunRow, RunsCommand, RunsUpdate};
