//! `gpudeck doctor`: a quick diagnosis of the driver, the GPUs, Docker and CUDA, each check
//! PASS / WARN / FAIL / SKIP with its cause and the commands that fix it.
//!
//! Facts are gathered once (`facts::gather`, behind the `HostEnv` seam), then judged by pure
//! check functions (`run_checks`), one file per family.

pub mod cli;
pub mod counters;
pub mod cuda;
pub mod docker;
pub mod facts;
pub mod frameworks;
pub mod gpus;
pub mod host_env;
pub mod kernel_log;
mod memory;
pub mod nvidia;
pub mod parse;
mod per_gpu;
pub mod report;
pub mod xid;

#[cfg(test)]
pub(crate) mod testkit;

use std::path::Path;

use crate::compat::CompatData;
use crate::pull::CatalogEntry;

pub use facts::{gather, gather_with, HostFacts};
pub use host_env::{FakeEnv, HostEnv, SystemEnv};
pub use report::{Check, DoctorReport, Family, Status, Summary, SCHEMA};

/// Judges the facts: every check of every family, in report order.
pub fn run_checks(facts: &HostFacts) -> DoctorReport {
    let system = facts.gpu.system.as_ref();
    let mut report = DoctorReport {
        schema: SCHEMA,
        host: facts.gpu.host.clone(),
        source: system.map(|s| s.source),
        driver_version: system.and_then(|s| s.driver_version.clone()),
        cuda_driver_version: system.and_then(|s| s.cuda_driver_version),
        kernel_module_version: facts
            .kernel_module
            .as_ref()
            .and_then(|k| k.version.as_ref())
            .map(|v| v.version.clone()),
        gpu_count: facts.gpu.gpu_count,
        checks: Vec::new(),
    };
    let families = [
        nvidia::checks,
        gpus::checks,
        xid::checks,
        docker::checks,
        cuda::checks,
    ];
    for family in families {
        for check in family(facts) {
            report.push(check);
        }
    }
    report
}

/// What a diagnosis judges besides the machine's facts: the same for `gpudeck doctor` and the
/// Doctor tab, so that both list the same checks.
pub struct Extras<'a> {
    /// Checks made elsewhere (the idle notebooks), each after the others of its family.
    pub checks: Vec<Check>,
    /// What the framework images' check judges with (as the Compatibility tab does).
    pub compat: &'a CompatData,
    pub catalog: &'a [CatalogEntry],
    /// Where the health counters' last look is kept.
    pub state_dir: &'a Path,
}

/// The whole diagnosis: every family's checks, the health counters against the last look
/// (this look then kept), the extra checks, and the framework images judged with the container
/// runtime the facts found. The second value says why the look could not be kept, if it could
/// not: the caller says it where it can (stderr for the CLI, the log file for the tab).
pub fn diagnose(facts: &HostFacts, extras: Extras<'_>) -> (DoctorReport, Option<String>) {
    let mut report = run_checks(facts);
    let problem = counters::add_health_counters(&mut report, &facts.gpu.gpus, extras.state_dir);
    // Each with its family (the idle notebooks under GPUs), so the text lists a family once.
    for check in extras.checks {
        let at = report
            .checks
            .iter()
            .rposition(|c| c.family == check.family)
            .map_or(report.checks.len(), |i| i + 1);
        report.checks.insert(at, check);
    }
    report.push(frameworks::framework_check(
        &facts.gpu,
        facts.docker.gpu_runtime(),
        extras.compat,
        extras.catalog,
    ));
    (report, problem)
}
