//! The GPUs a launch names, checked against the ones this host has.

use super::error::{LaunchError, Workload};
use crate::gpu::report::{GpuEntry, GpuReport};

/// Refuses GPUs the driver could not read, with its reason.
pub fn check_readable(report: &GpuReport, workload: Workload) -> Result<(), LaunchError> {
    match &report.error {
        Some(error) => Err(LaunchError::gpus_unreadable(
            workload,
            format!("{}: {}", error.title, error.message),
        )),
        None => Ok(()),
    }
}

/// The GPUs `wanted` names (by whatever `matches` compares), in the order given; refused naming
/// each one this host does not have, and the ones it has.
pub fn find_gpus<'r, T>(
    wanted: &[T],
    report: &'r GpuReport,
    matches: impl Fn(&GpuEntry, &T) -> bool,
    show: impl Fn(&T) -> String,
) -> Result<Vec<&'r GpuEntry>, LaunchError> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for w in wanted {
        match report.gpus.iter().find(|g| matches(g, w)) {
            Some(g) => found.push(g),
            None => missing.push(show(w)),
        }
    }
    if missing.is_empty() {
        Ok(found)
    } else {
        Err(LaunchError::NoSuchGpu {
            missing: missing.join(", "),
            // "GPUs 0-3 (4 × NVIDIA A100)": index and name, never the UUIDs.
            present: crate::gpu::report::brief_list(report),
        })
    }
}
