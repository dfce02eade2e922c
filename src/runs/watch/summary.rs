//! What a run's recorded GPU metrics add up to (GPU-seconds, busy ratio, peak memory, power and
//! energy per GPU) and the alerts they raise: a straggler, an idle run, memory held after the end.

mod alerts;
mod running;
mod totals;

pub use alerts::{
    all_idle, memory_held_after_end, straggler, Alert, AlertKind, ALL_IDLE_AFTER_MS,
    HELD_AFTER_END_MS, HELD_MEMORY_BYTES, STRAGGLER_AFTER_MS,
};
pub use running::SummaryBuilder;
pub use totals::{summarize, GpuSummary, RunSummary};

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
