use super::*;
use crate::doctor::run_checks;
use crate::doctor::testkit::{find, healthy, nvml_failed, status_of};
use crate::gpu::GpuError;

fn with_nvcc(release: Option<(u32, u32)>) -> HostFacts {
    let mut f = healthy();
    if let Some(n) = f.nvcc.as_mut() {
        n.release = release;
        n.note = release.is_none().then(|| "garbage".to_string());
    }
    f
}

fn with_driver_cuda(mut f: HostFacts, driver: &str, cuda: i32) -> HostFacts {
    if let Some(s) = f.gpu.system.as_mut() {
        s.driver_version = Some(driver.into());
        s.cuda_driver_version = CudaVersion::from_nvml(cuda);
    }
    f
}

fn with_visible(value: &str) -> HostFacts {
    let mut f = healthy();
    f.cuda_visible_devices = Some(value.into());
    f
}

#[test]
fn nvcc_no_newer_than_the_driver_passes() {
    assert_eq!(status_of(&with_nvcc(Some((13, 0))), NVCC).0, Status::Pass);
    assert_eq!(status_of(&with_nvcc(Some((12, 8))), NVCC).0, Status::Pass);
    let mut f = healthy();
    f.nvcc = None;
    assert_eq!(status_of(&f, NVCC).0, Status::Skip);
}

#[test]
fn nvcc_newer_than_the_driver_warns_with_the_driver_it_needs() {
    let f = with_driver_cuda(with_nvcc(Some((12, 4))), "470.57.02", 11040);
    let r = run_checks(&f);
    let c = find(&r, NVCC);
    assert_eq!(c.status, Status::Warn);
    assert!(
        c.detail.contains("nvcc 12.4")
            && c.detail.contains("CUDA 11.4")
            && c.detail.contains("470.57.02"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("insufficient"), "{}", c.detail);
    let fix = c.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("550.54.14 or newer") && fix.contains("cuda-compat-12-4"),
        "{fix}"
    );
    // Same major version: minor-version compatibility softens it.
    let f = with_driver_cuda(with_nvcc(Some((12, 8))), "535.54.03", 12020);
    let c = find(&run_checks(&f), NVCC).clone();
    assert_eq!(c.status, Status::Warn);
    assert!(
        c.detail.contains("minor-version compatibility"),
        "{}",
        c.detail
    );
}

#[test]
fn unreadable_nvcc_warns_and_unknown_driver_skips() {
    assert_eq!(status_of(&with_nvcc(None), NVCC).0, Status::Warn);
    let mut f = nvml_failed(&GpuError::DriverNotLoaded);
    f.nvcc = with_nvcc(Some((12, 4))).nvcc;
    assert_eq!(status_of(&f, NVCC).0, Status::Skip);
}

#[test]
fn unset_visible_devices_passes() {
    assert_eq!(status_of(&healthy(), VISIBLE_DEVICES).0, Status::Pass);
}

#[test]
fn valid_visible_devices_warn_about_hiding_and_numbering() {
    let r = run_checks(&with_visible("1"));
    let c = find(&r, VISIBLE_DEVICES);
    assert_eq!(c.status, Status::Warn);
    assert!(
        c.detail.contains("see 1 of 2 GPUs") && c.detail.contains("CUDA_DEVICE_ORDER"),
        "{}",
        c.detail
    );
    let mut f = with_visible("GPU-1a2b");
    f.cuda_device_order = Some("PCI_BUS_ID".into());
    let c = find(&run_checks(&f), VISIBLE_DEVICES).clone();
    assert_eq!(c.status, Status::Warn);
    assert!(!c.detail.contains("CUDA_DEVICE_ORDER"), "{}", c.detail);
}

#[test]
fn a_visible_device_that_does_not_exist_fails_when_nothing_is_left() {
    let r = run_checks(&with_visible("7"));
    let c = find(&r, VISIBLE_DEVICES);
    assert_eq!(c.status, Status::Fail);
    assert!(
        c.detail.contains("7 is not one of the 2 GPUs") && c.detail.contains("see 0 GPUs"),
        "{}",
        c.detail
    );
    let fix = c.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("unset CUDA_VISIBLE_DEVICES") && fix.contains("=0,1"),
        "{fix}"
    );
    // CUDA keeps what precedes the bad entry.
    let c = find(&run_checks(&with_visible("1,7,0")), VISIBLE_DEVICES).clone();
    assert_eq!(c.status, Status::Warn);
    assert!(c.detail.contains("see 1 GPU"), "{}", c.detail);
    // A UUID prefix must name exactly one GPU.
    assert_eq!(
        status_of(&with_visible("GPU-"), VISIBLE_DEVICES).0,
        Status::Fail
    );
    assert_eq!(
        status_of(&with_visible("GPU-ffff"), VISIBLE_DEVICES).0,
        Status::Fail
    );
}

#[test]
fn hiding_every_gpu_or_unknown_gpus_warn() {
    assert_eq!(
        status_of(&with_visible(""), VISIBLE_DEVICES).0,
        Status::Warn
    );
    assert_eq!(
        status_of(&with_visible("-1"), VISIBLE_DEVICES).0,
        Status::Warn
    );
    assert_eq!(
        status_of(&with_visible("x"), VISIBLE_DEVICES).0,
        Status::Fail
    );
    let mut f = nvml_failed(&GpuError::DriverNotLoaded);
    f.cuda_visible_devices = Some("0".into());
    assert_eq!(status_of(&f, VISIBLE_DEVICES).0, Status::Warn);
}
