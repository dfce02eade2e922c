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
        status_of(&nvml_failed(&GpuError::NoGpus), NVML).0,
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
