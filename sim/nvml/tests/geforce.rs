//! A GeForce desktop (2x RTX 4090): fans, a display with graphics processes, and the
//! datacenter features that are missing (ECC, MIG, serial, NVLink, peer-to-peer).

mod common;

use nvml_wrapper::enum_wrappers::device::{
    Brand, P2pCapabilitiesIndex, P2pStatus, PerformanceState, TopologyLevel,
};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

fn nvml() -> &'static Nvml {
    common::shared("profile=rtx4090,gpus=2,frozen=200")
}

fn device(i: u32) -> Device<'static> {
    nvml().device_by_index(i).expect("device")
}

#[test]
fn identity_and_limits() {
    let d = device(0);
    assert_eq!(d.name().expect("name"), "NVIDIA GeForce RTX 4090");
    assert_eq!(d.brand().expect("brand"), Brand::GeForce);
    assert_eq!(d.memory_info().expect("memory").total, 24564 * 1024 * 1024);
    assert_eq!(d.enforced_power_limit().expect("limit"), 450_000);
    assert_eq!(d.cuda_compute_capability().expect("cc").minor, 9);
    assert!(matches!(d.serial(), Err(NvmlError::NotSupported)));
    assert!(!d.is_in_persistent_mode().expect("persistence"));
}

#[test]
fn fans_spin_under_load() {
    let d = device(0);
    assert_eq!(d.num_fans().expect("fans"), 2);
    let speed = d.fan_speed(1).expect("fan 1");
    assert!((30..=100).contains(&speed), "{speed}");
    assert!(matches!(d.fan_speed(2), Err(NvmlError::InvalidArg)));
    assert_eq!(
        d.performance_state().expect("pstate"),
        PerformanceState::Two
    );
}

#[test]
fn datacenter_features_are_not_supported() {
    let d = device(1);
    assert!(matches!(d.is_ecc_enabled(), Err(NvmlError::NotSupported)));
    assert!(matches!(d.mig_mode(), Err(NvmlError::NotSupported)));
    assert!(matches!(
        d.link_wrapper_for(0).is_active(),
        Err(NvmlError::NotSupported)
    ));
    let p2p = d
        .p2p_status(&device(0), P2pCapabilitiesIndex::Read)
        .expect("p2p");
    assert_eq!(p2p, P2pStatus::GpuNotSupported);
    assert_eq!(
        d.topology_common_ancestor(device(0)).expect("topo"),
        TopologyLevel::HostBridge
    );
}

#[test]
fn the_display_gpu_runs_graphics_processes() {
    let d = device(0);
    assert!(d.is_display_active().expect("display"));
    let graphics = d.running_graphics_processes().expect("graphics");
    assert_eq!(graphics.len(), 2);
    let name = nvml().sys_process_name(graphics[0].pid, 64).expect("name");
    assert_eq!(name, "/usr/lib/xorg/Xorg");
    assert_eq!(d.running_compute_processes().expect("compute").len(), 1);
    assert!(device(1)
        .running_graphics_processes()
        .expect("graphics")
        .is_empty());
}
