//! GPUs: domain types, the NVML and simulated sources, the collector thread and metric history.

pub mod choice;
pub mod collector;
pub mod container_use;
pub mod counters;
pub mod history;
pub mod nvlinks;
pub mod nvml;
pub mod process_watch;
pub mod report;
pub mod report_text;

pub mod sim;
pub mod source;
pub mod types;
pub mod xid_nvml;
pub mod xid_sim;
pub mod xid_watch;

pub use choice::GpuSourceChoice;
pub use source::{GpuError, GpuSource};
pub use types::*;
