use super::*;
use crate::doctor::run_checks;
use crate::doctor::testkit::{find, healthy, nvml_failed, status_of};
use crate::gpu::{RemappedRows, RetiredPages};

fn detail(f: &HostFacts, id: &str) -> String {
    find(&run_checks(f), id).detail.clone()
}

#[test]
fn visible_gpus_are_counted_and_named() {
    let d = detail(&healthy(), VISIBLE);
    assert_eq!(d, "2 GPUs: 2 × NVIDIA H100 80GB HBM3");
    let (status, fix) = status_of(&nvml_failed(&GpuError::NoGpus), VISIBLE);
    assert_eq!(status, Status::Fail);
    assert!(fix.is_some_and(|x| x.contains("lspci")));
    let f = nvml_failed(&GpuError::DriverNotLoaded);
    for id in [
        VISIBLE,
        PERSISTENCE,
        PCIE_LINK,
        THROTTLE,
        ECC,
        MEMORY_REPAIR,
    ] {
        assert_eq!(status_of(&f, id).0, Status::Skip, "{id}");
    }
}

#[test]
fn a_lost_gpu_fails() {
    let mut f = healthy();
    f.gpu.gpus[1].sample = crate::gpu::GpuSample::lost();
    let (status, fix) = status_of(&f, VISIBLE);
    assert_eq!(status, Status::Fail);
    assert!(detail(&f, VISIBLE).contains("GPU 1 has fallen off the bus"));
    assert!(fix.is_some_and(|x| x.contains("Xid 79")));
    // The other GPU is still judged.
    assert_eq!(status_of(&f, ECC).0, Status::Pass);
}

#[test]
fn persistence_off_warns_on_linux_only() {
    let mut f = healthy();
    f.gpu.gpus[1].info.persistence_mode = Some(false);
    let (status, fix) = status_of(&f, PERSISTENCE);
    assert_eq!(status, Status::Warn);
    assert!(detail(&f, PERSISTENCE).starts_with("off on GPU 1:"));
    assert!(
        fix.is_some_and(|x| x.contains("nvidia-persistenced") && x.contains("nvidia-smi -pm 1"))
    );
    f.os = "macos".into();
    assert_eq!(status_of(&f, PERSISTENCE).0, Status::Skip);
    let mut unknown = healthy();
    for g in &mut unknown.gpu.gpus {
        g.info.persistence_mode = None;
    }
    assert_eq!(status_of(&unknown, PERSISTENCE).0, Status::Skip);
}

#[test]
fn a_downgraded_link_warns_with_both_speeds() {
    let mut f = healthy();
    let g = &mut f.gpu.gpus[0];
    g.pcie_downgraded = true;
    g.sample.pcie_gen = Some(3);
    g.sample.pcie_width = Some(8);
    let (status, fix) = status_of(&f, PCIE_LINK);
    assert_eq!(status, Status::Warn);
    let d = detail(&f, PCIE_LINK);
    assert!(
        d.contains("GPU 0 runs") && d.contains('3') && d.contains("x8") && d.contains("x16"),
        "{d}"
    );
    assert!(fix.is_some_and(|x| x.contains("LnkSta")));
}

#[test]
fn thermal_throttling_warns_but_a_power_cap_passes() {
    let mut f = healthy();
    f.gpu.gpus[1].sample.throttle_reasons = Some(vec!["software power cap".into()]);
    assert_eq!(status_of(&f, THROTTLE).0, Status::Pass);
    assert!(detail(&f, THROTTLE).contains("GPU 1 at the power limit"));
    f.gpu.gpus[0].sample.throttle_reasons = Some(vec![
        "hardware slowdown".into(),
        "hardware thermal slowdown".into(),
    ]);
    f.gpu.gpus[0].sample.temp_c = Some(89);
    let (status, fix) = status_of(&f, THROTTLE);
    assert_eq!(status, Status::Warn);
    assert!(
        detail(&f, THROTTLE).contains("GPU 0 (hardware slowdown, hardware thermal slowdown, 89°C)"),
        "{}",
        detail(&f, THROTTLE)
    );
    assert!(fix.is_some_and(|x| x.contains("cooling")));
}

#[test]
fn uncorrected_ecc_errors_fail_and_corrected_ones_pass_with_the_count() {
    let mut f = healthy();
    f.gpu.gpus[1].sample.ecc_corrected = Some(5);
    assert_eq!(status_of(&f, ECC).0, Status::Pass);
    assert!(detail(&f, ECC).contains("GPU 1: 5"));
    f.gpu.gpus[1].sample.ecc_uncorrected = Some(1);
    let (status, fix) = status_of(&f, ECC);
    assert_eq!(status, Status::Fail);
    assert!(detail(&f, ECC).contains("GPU 1: 1 uncorrected, 5 corrected"));
    assert!(fix.is_some_and(|x| x.contains("ROW_REMAPPER") && x.contains("nvidia-smi -r")));
}

#[test]
fn ecc_off_warns_and_no_ecc_skips() {
    let mut f = healthy();
    f.gpu.gpus[0].info.ecc_enabled = Some(false);
    f.gpu.gpus[0].sample.ecc_corrected = None;
    f.gpu.gpus[0].sample.ecc_uncorrected = None;
    let (status, fix) = status_of(&f, ECC);
    assert_eq!(status, Status::Warn);
    assert!(fix.is_some_and(|x| x.contains("-e 1")));
    for g in &mut f.gpu.gpus {
        g.info.ecc_enabled = None;
        g.sample.ecc_corrected = None;
        g.sample.ecc_uncorrected = None;
    }
    assert_eq!(status_of(&f, ECC).0, Status::Skip);
}

#[test]
fn row_remapping_pending_warns_and_failed_fails() {
    let mut f = healthy();
    f.gpu.gpus[0].sample.remapped_rows = Some(RemappedRows {
        uncorrectable: 1,
        ..RemappedRows::default()
    });
    assert_eq!(status_of(&f, MEMORY_REPAIR).0, Status::Pass);
    assert!(detail(&f, MEMORY_REPAIR).contains("GPU 0: 1 rows remapped"));
    f.gpu.gpus[0].sample.remapped_rows = Some(RemappedRows {
        uncorrectable: 1,
        pending: true,
        ..RemappedRows::default()
    });
    let (status, fix) = status_of(&f, MEMORY_REPAIR);
    assert_eq!(status, Status::Warn);
    assert!(fix.is_some_and(|x| x.contains("nvidia-smi -r -i")));
    f.gpu.gpus[1].sample.remapped_rows = Some(RemappedRows {
        uncorrectable: 4,
        failure: true,
        ..RemappedRows::default()
    });
    let (status, fix) = status_of(&f, MEMORY_REPAIR);
    assert_eq!(status, Status::Fail);
    let d = detail(&f, MEMORY_REPAIR);
    assert!(
        d.contains("GPU 0: a row remap waits") && d.contains("GPU 1: a row remapping failed"),
        "{d}"
    );
    assert!(fix.is_some_and(|x| x.contains("RMA")));
}

#[test]
fn retired_pages_pending_warns_and_nothing_reported_skips() {
    let mut f = healthy();
    f.gpu.gpus[0].sample.remapped_rows = None;
    f.gpu.gpus[1].sample.remapped_rows = None;
    assert_eq!(status_of(&f, MEMORY_REPAIR).0, Status::Skip);
    f.gpu.gpus[1].sample.retired_pages = Some(RetiredPages {
        single_bit_ecc: 2,
        double_bit_ecc: 1,
        pending: true,
    });
    assert_eq!(status_of(&f, MEMORY_REPAIR).0, Status::Warn);
    assert!(detail(&f, MEMORY_REPAIR).contains("1 double-bit, 2 single-bit"));
}
