//! Reading runs back: the runs collector behind the dashboard's Runs tab, the store's index,
//! following logs, what a run recorded (per-second GPU samples, training progress parsed from
//! logs, the summaries and alerts they add up to, the Xids that hit it), and the runs as a
//! table or an export.

mod collector;
pub(super) mod export;
pub(super) mod index;
pub(super) mod logs;
mod pace;
pub mod progress;
pub(super) mod recorded;
pub mod samples;
pub(super) mod saved_summary;
pub mod series;
pub mod summary;
pub(super) mod table;
pub mod tail;
mod update;
pub mod xid_log;
pub mod xids;

pub use collector::{spawn, RunsHandle, Watcher};
pub use update::{GpuTrace, LogChunk, ProgressView, RunDetail, RunRow, RunsCommand, RunsUpdate};
