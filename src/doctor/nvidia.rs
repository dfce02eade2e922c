//! Checks of the NVIDIA driver itself: the kernel module, NVML, and whether the two agree.

use super::facts::{HostFacts, KernelModule};
use super::report::{Check, Family, Status};
use crate::gpu::{GpuError, SourceKind};

pub const KERNEL_MODULE: &str = "nvidia.kernel_module";
pub const NVML: &str = "nvidia.nvml";
pub const VERSION_MATCH: &str = "nvidia.version_match";

fn check(id: &'static str, title: &'static str, status: Status, detail: String) -> Check {
    Check::new(id, Family::Nvidia, title, status, detail)
}

pub fn checks(f: &HostFacts) -> Vec<Check> {
    vec![kernel_module(f), nvml(f), version_match(f)]
}

/// Whether the GPUs are simulated (`--demo`): then the host's driver is not what is being shown.
pub(crate) fn is_demo(f: &HostFacts) -> bool {
    f.gpu.system.as_ref().map(|s| s.source) == Some(SourceKind::Demo)
}

/// Whether NVML's failure was this particular error (the report keeps only its words).
pub(crate) fn gpu_error_is(f: &HostFacts, e: &GpuError) -> bool {
    f.gpu.error.as_ref().is_some_and(|r| r.title == e.title())
}

fn kernel_module(f: &HostFacts) -> Check {
    let title = "Kernel module";
    if is_demo(f) {
        return check(
            KERNEL_MODULE,
            title,
            Status::Skip,
            "simulated GPUs (--demo): no kernel module is behind them".into(),
        );
    }
    match &f.kernel_module {
        Some(km) => module_found(km),
        // NVML can only answer through a loaded module: /proc is hidden (a container), not empty.
        None if f.gpu.error.is_none() => check(
            KERNEL_MODULE,
            title,
            Status::Warn,
            "neither /proc/driver/nvidia/version nor /sys/module/nvidia/version is readable, \
             yet NVML answers: /proc or /sys is probably hidden (in a container?)"
                .into(),
        )
        .with_fix(
            "On the host, `cat /proc/driver/nvidia/version` shows the loaded module; inside a \
             container nothing needs doing.",
        ),
        None => check(
            KERNEL_MODULE,
            title,
            Status::Fail,
            "the nvidia kernel module is not loaded (no /proc/driver/nvidia/version or \
             /sys/module/nvidia/version)"
                .into(),
        )
        .with_fix(GpuError::DriverNotLoaded.fix()),
    }
}

fn module_found(km: &KernelModule) -> Check {
    let title = "Kernel module";
    let Some(v) = &km.version else {
        return check(
            KERNEL_MODULE,
            title,
            Status::Warn,
            format!("{} exists but names no version gpudeck can read", km.file),
        )
        .with_fix(format!(
            "Look at it: `cat {}`; `modinfo nvidia` shows the installed module.",
            km.file
        ));
    };
    let flavour = match v.open {
        Some(true) => " (open kernel module)",
        Some(false) => " (proprietary kernel module)",
        None => "",
    };
    check(
        KERNEL_MODULE,
        title,
        Status::Pass,
        format!("nvidia {}{flavour} is loaded ({})", v.version, km.file),
    )
}

fn nvml(f: &HostFacts) -> Check {
    let title = "NVML";
    match (&f.gpu.error, &f.gpu.system) {
        (None, Some(sys)) if sys.source == SourceKind::Demo => check(
            NVML,
            title,
            Status::Pass,
            "simulated GPUs (--demo): NVML is not used".into(),
        ),
        (None, sys) => {
            let sys = sys.as_ref();
            check(
                NVML,
                title,
                Status::Pass,
                format!(
                    "libnvidia-ml {} answers (driver {})",
                    unknown(sys.and_then(|s| s.nvml_version.clone())),
                    unknown(sys.and_then(|s| s.driver_version.clone()))
                ),
            )
        }
        (Some(_), _) if gpu_error_is(f, &GpuError::NoGpus) => check(
            NVML,
            title,
            Status::Pass,
            "NVML starts, but reports no GPUs (see GPUs below)".into(),
        ),
        (Some(e), _) => check(
            NVML,
            title,
            Status::Fail,
            format!("{}: {}", e.title, e.message),
        )
        .with_fix(e.fix),
    }
}

const VERSIONS_TITLE: &str = "Driver/library versions";
const NO_REBOOT: &str = "usual after a driver upgrade without a reboot";

fn version_match(f: &HostFacts) -> Check {
    let module = f
        .kernel_module
        .as_ref()
        .and_then(|k| k.version.as_ref())
        .map(|v| v.version.clone());
    if gpu_error_is(f, &GpuError::VersionMismatch) {
        let loaded = module.map_or(String::new(), |m| {
            format!(" (the loaded kernel module is {m})")
        });
        return check(
            VERSION_MATCH,
            VERSIONS_TITLE,
            Status::Fail,
            format!("NVML refuses to start: libnvidia-ml and the kernel module differ{loaded}; {NO_REBOOT}"),
        )
        .with_fix(GpuError::VersionMismatch.fix());
    }
    if is_demo(f) {
        return check(
            VERSION_MATCH,
            VERSIONS_TITLE,
            Status::Skip,
            "simulated GPUs (--demo): the simulated driver has no kernel module to compare with"
                .into(),
        );
    }
    let library = f.gpu.system.as_ref().and_then(|s| s.driver_version.clone());
    compare_versions(module, library)
}

fn compare_versions(module: Option<String>, library: Option<String>) -> Check {
    let (status, detail) = match (module, library) {
        (Some(m), Some(l)) if m == l => (
            Status::Pass,
            format!("kernel module and libnvidia-ml are both {m}"),
        ),
        (Some(m), Some(l)) => (
            Status::Fail,
            format!("the kernel module is {m} but libnvidia-ml is {l}: {NO_REBOOT}"),
        ),
        (None, _) => (
            Status::Skip,
            "the kernel module's version is unknown: nothing to compare".into(),
        ),
        (Some(_), None) => (
            Status::Skip,
            "NVML gave no driver version: nothing to compare".into(),
        ),
    };
    let c = check(VERSION_MATCH, VERSIONS_TITLE, status, detail);
    if status == Status::Fail {
        c.with_fix(GpuError::VersionMismatch.fix())
    } else {
        c
    }
}

pub(crate) fn unknown(v: Option<String>) -> String {
    v.unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
#[path = "nvidia_tests.rs"]
mod tests;
