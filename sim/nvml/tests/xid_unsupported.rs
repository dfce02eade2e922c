//! Where the event API and the health counters are missing: a GeForce board (no NVLink, no
//! violation status) whose driver offers no events (as in some VMs and containers).

mod common;

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::PerformancePolicy;
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

fn nvml() -> &'static Nvml {
    common::shared("profile=rtx4090,gpus=2,unsupported=events,replay=1:7")
}

#[test]
fn events_are_not_supported_and_registering_frees_the_set() {
    let gpu = nvml().device_by_index(0).expect("device");
    assert!(matches!(
        gpu.supported_event_types(),
        Err(NvmlError::NotSupported)
    ));
    let set = nvml().create_event_set().expect("a set can still be made");
    let err = gpu
        .register_events(EventTypes::CRITICAL_XID_ERROR, set)
        .expect_err("no events");
    assert!(matches!(err.error, NvmlError::NotSupported), "{err:?}");
}

#[test]
fn geforce_has_pcie_replays_but_no_nvlink_or_violation_counters() {
    let gpu = nvml().device_by_index(1).expect("device");
    assert_eq!(gpu.pcie_replay_counter().expect("replays"), 7);
    assert!(matches!(
        gpu.link_wrapper_for(0)
            .error_counter(ErrorCounter::DlReplay),
        Err(NvmlError::NotSupported)
    ));
    assert!(matches!(
        gpu.violation_status(PerformancePolicy::Power),
        Err(NvmlError::NotSupported)
    ));
}
