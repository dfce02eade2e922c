//! An A100 80GB PCIe machine: MIG with Ampere's slices, but no GPM (Hopper and later only).

mod common;

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

fn nvml() -> &'static Nvml {
    common::shared("profile=a100-pcie,gpus=2,frozen=200,mig=0:3g.40gb@train/4g.40gb")
}

fn device(i: u32) -> Device<'static> {
    nvml().device_by_index(i).expect("device")
}

#[test]
fn ampere_slices() {
    let d = device(0);
    let m = d.mig_mode().expect("mode");
    assert_eq!((m.current, m.pending), (1, 1));
    // The 4g.40gb sits at memory slice 0 (GPU instance 1), the 3g.40gb at 4 (instance 2).
    let first = d.mig_device_by_index(0).expect("MIG 0");
    assert_eq!(
        first.name().expect("name"),
        "NVIDIA A100 80GB PCIe MIG 4g.40gb"
    );
    let a = first.attributes().expect("attributes");
    assert_eq!((a.multiprocessor_count, a.memory_size_mb), (56, 40192));
    let second = d.mig_device_by_index(1).expect("MIG 1");
    assert_eq!(
        second
            .attributes()
            .expect("attributes")
            .multiprocessor_count,
        42
    );
    assert_eq!(
        second.running_compute_processes().expect("processes").len(),
        1
    );
    assert!(matches!(d.mig_device_by_index(2), Err(NvmlError::NotFound)));
}

#[test]
fn no_gpm_on_ampere() {
    let d = device(0);
    assert!(!d.gpm_support().expect("support query answers"));
    let m = d.mig_device_by_index(1).expect("MIG 1");
    assert!(!m.gpm_support().expect("support query answers"));
    assert!(matches!(d.gpm_sample(), Err(NvmlError::NotSupported)));
    assert!(matches!(m.gpm_sample(), Err(NvmlError::NotSupported)));
    assert!(matches!(d.gpm_mig_sample(2), Err(NvmlError::NotSupported)));
    assert!(matches!(
        d.utilization_rates(),
        Err(NvmlError::NotSupported)
    ));
    assert!(device(1).utilization_rates().is_ok());
}
