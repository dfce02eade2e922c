//! Training runs: parsing their progress from logs, recording their GPU metrics and summarising them.

pub mod metrics;
pub mod progress;
pub mod summary;
