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
        (Some(_), sys) if gpu_error_is(f, &GpuError::NoGpus { system: None }) => check(
            NVML,
            title,
            Status::Pass,
            format!(
                "NVML starts (driver {}), but reports no GPUs (see GPUs below)",
                unknown(sys.as_ref().and_then(|s| s.driver_version.clone()))
            ),
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
mod tests {
    use super::*;
    use crate::doctor::parse::ModuleVersion;
    use crate::doctor::testkit::{healthy, nvml_failed, status_of};

    fn with_module(version: &str) -> HostFacts {
        let mut f = healthy();
        if let Some(km) = f.kernel_module.as_mut() {
            km.version = Some(ModuleVersion {
                version: version.into(),
                open: None,
            });
        }
        f
    }

    #[test]
    fn a_loaded_module_passes_with_its_version_and_flavour() {
        let r = crate::doctor::run_checks(&healthy());
        let c = crate::doctor::testkit::find(&r, KERNEL_MODULE);
        assert_eq!(c.status, Status::Pass);
        assert!(
            c.detail.contains("580.65.06 (open kernel module)"),
            "{}",
            c.detail
        );
        assert_eq!(r.kernel_module_version.as_deref(), Some("580.65.06"));
    }

    #[test]
    fn a_missing_module_fails_with_modprobe_when_nvml_fails_too() {
        let mut f = nvml_failed(&GpuError::DriverNotLoaded);
        f.kernel_module = None;
        let (status, fix) = status_of(&f, KERNEL_MODULE);
        assert_eq!(status, Status::Fail);
        assert!(fix.is_some_and(|x| x.contains("sudo modprobe nvidia")));
    }

    #[test]
    fn a_hidden_proc_with_working_nvml_only_warns() {
        let mut f = healthy();
        f.kernel_module = None;
        assert_eq!(status_of(&f, KERNEL_MODULE).0, Status::Warn);
        assert_eq!(status_of(&f, VERSION_MATCH).0, Status::Skip);
    }

    #[test]
    fn an_unreadable_version_file_warns() {
        let mut f = healthy();
        if let Some(km) = f.kernel_module.as_mut() {
            km.version = None;
        }
        let (status, fix) = status_of(&f, KERNEL_MODULE);
        assert_eq!(status, Status::Warn);
        assert!(fix.is_some_and(|x| x.contains("cat /proc/driver/nvidia/version")));
    }

    #[test]
    fn nvml_failures_fail_with_their_own_fix() {
        for (e, words) in [
            (GpuError::DriverNotLoaded, "modprobe"),
            (GpuError::NoPermission, "/dev/nvidia"),
            (
                GpuError::LibraryNotFound {
                    library: "libnvidia-ml.so.1".into(),
                    detail: "not found".into(),
                },
                "--nvml-lib",
            ),
        ] {
            let (status, fix) = status_of(&nvml_failed(&e), NVML);
            assert_eq!(status, Status::Fail, "{e}");
            assert!(fix.is_some_and(|x| x.contains(words)), "{e}");
        }
        assert_eq!(status_of(&healthy(), NVML).0, Status::Pass);
        assert_eq!(
            status_of(&nvml_failed(&GpuError::NoGpus { system: None }), NVML).0,
            Status::Pass
        );
    }

    #[test]
    fn an_rm_mismatch_fails_the_version_check_with_reboot_advice() {
        let f = nvml_failed(&GpuError::VersionMismatch);
        let (status, fix) = status_of(&f, VERSION_MATCH);
        assert_eq!(status, Status::Fail);
        assert!(fix.is_some_and(|x| x.contains("Reboot") && x.contains("rmmod")));
        assert_eq!(status_of(&f, NVML).0, Status::Fail);
    }

    #[test]
    fn module_and_library_versions_are_compared() {
        assert_eq!(
            status_of(&with_module("580.65.06"), VERSION_MATCH).0,
            Status::Pass
        );
        let f = with_module("575.51.03");
        let r = crate::doctor::run_checks(&f);
        let c = crate::doctor::testkit::find(&r, VERSION_MATCH);
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.detail.contains("575.51.03") && c.detail.contains("580.65.06"),
            "{}",
            c.detail
        );
        assert!(c.fix.as_deref().is_some_and(|x| x.contains("Reboot")));
    }

    #[test]
    fn the_demo_skips_what_only_a_real_driver_has() {
        let mut f = with_module("575.51.03");
        if let Some(s) = f.gpu.system.as_mut() {
            s.source = SourceKind::Demo;
        }
        assert_eq!(status_of(&f, KERNEL_MODULE).0, Status::Skip);
        assert_eq!(status_of(&f, VERSION_MATCH).0, Status::Skip);
        assert_eq!(status_of(&f, NVML).0, Status::Pass);
    }
}
