//! Xid events through nvml-wrapper's event API, and the health counters the Xids move.
//!
//! Time runs (events need it), so the Xids are raised a second or two after init.

// The C ABI under test: raw NVML symbols called through pointers this test owns.
#![allow(unsafe_code)]

mod common;

use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::PerformancePolicy;
use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::{nvml_sym, nvml_try, NvmlError};
use nvml_wrapper::{Device, EventSet, Nvml};
use nvml_wrapper_sys::bindings::{nvmlEventData_t, nvmlEventSet_t, nvmlEventTypeXidCriticalError};

const SPEC: &str =
    "gpus=4,xid=0:13@1;2:48@1.2;1:79@1.5;2:74@1.6;3:31@600,replay=2:40,throttle=3:power";

fn nvml() -> &'static Nvml {
    common::shared(SPEC)
}

fn device(i: u32) -> Device<'static> {
    nvml().device_by_index(i).expect("device")
}

/// A set with the critical Xid event of `gpus` registered.
fn xid_set(gpus: &[u32]) -> EventSet<'static> {
    let mut set = nvml().create_event_set().expect("event set");
    for &i in gpus {
        set = device(i)
            .register_events(EventTypes::CRITICAL_XID_ERROR, set)
            .expect("registers");
    }
    set
}

/// Every event `set` delivers until a wait of `quiet_ms` times out: (GPU index, Xid, when).
fn drain(set: &EventSet<'static>, quiet_ms: u32) -> Vec<(u32, u64, Instant)> {
    let mut seen = Vec::new();
    loop {
        match set.wait(quiet_ms) {
            Ok(e) => {
                assert_eq!(e.event_type, EventTypes::CRITICAL_XID_ERROR);
                let xid = match e.event_data {
                    Some(XidError::Value(v)) => v,
                    other => panic!("an Xid event carries its number: {other:?}"),
                };
                seen.push((e.device.index().expect("index"), xid, Instant::now()));
            }
            Err(NvmlError::Timeout) => return seen,
            Err(e) => panic!("wait failed: {e}"),
        }
    }
}

/// (correctable, uncorrectable, pending, failure) through the raw symbol: nvml-wrapper 0.13
/// has no wrapper for it.
fn remapped_rows(d: &Device) -> Result<[u32; 4], NvmlError> {
    let sym = nvml_sym(nvml().lib().nvmlDeviceGetRemappedRows.as_ref())?;
    let mut r = [0u32; 4];
    let [a, b, c, e] = &mut r;
    // SAFETY: a live handle and four valid out-pointers, as nvml.h documents.
    nvml_try(unsafe { sym(d.handle(), a, b, c, e) })?;
    Ok(r)
}

/// A set made and registered through the raw symbols, for the fields nvml-wrapper drops.
struct RawSet(nvmlEventSet_t);

impl RawSet {
    fn new(gpu: u32) -> RawSet {
        let lib = nvml().lib();
        let mut set: nvmlEventSet_t = std::ptr::null_mut();
        // SAFETY: valid out-pointer; a live device handle and the set just made.
        unsafe {
            assert_eq!(lib.nvmlEventSetCreate(&mut set), 0);
            let types = u64::from(nvmlEventTypeXidCriticalError);
            assert_eq!(
                lib.nvmlDeviceRegisterEvents(device(gpu).handle(), types, set),
                0
            );
        }
        RawSet(set)
    }

    fn wait(&self, timeout_ms: u32) -> Result<nvmlEventData_t, u32> {
        // SAFETY: all-zero is a valid nvmlEventData_t (a null handle and numbers).
        let mut data: nvmlEventData_t = unsafe { std::mem::zeroed() };
        // SAFETY: a live set and a valid out-pointer.
        match unsafe {
            nvml()
                .lib()
                .nvmlEventSetWait_v2(self.0, &mut data, timeout_ms)
        } {
            0 => Ok(data),
            code => Err(code),
        }
    }

    fn free(&self) -> u32 {
        // SAFETY: NVML checks the handle; a freed one is INVALID_ARGUMENT.
        unsafe { nvml().lib().nvmlEventSetFree(self.0) }
    }
}

#[test]
fn xids_arrive_once_per_set_in_time_order_and_leave_their_marks() {
    let init = Instant::now();
    for i in 0..4 {
        let types = device(i).supported_event_types().expect("event types");
        assert!(types.contains(EventTypes::CRITICAL_XID_ERROR), "{types:?}");
        assert!(
            types.contains(EventTypes::DOUBLE_BIT_ECC_ERROR),
            "{types:?}"
        );
    }
    let all = xid_set(&[0, 1, 2, 3]);
    let only_2 = xid_set(&[2]);
    let raw_0 = RawSet::new(0);
    assert!(
        device(1).utilization_rates().is_ok(),
        "GPU 1 is alive before its Xid 79"
    );

    let seen = drain(&all, 1500);
    let got: Vec<(u32, u64)> = seen.iter().map(|(g, x, _)| (*g, *x)).collect();
    assert_eq!(got, vec![(0, 13), (2, 48), (1, 79), (2, 74)]);
    // None arrives before it is raised (times are from before init, so this is lenient by
    // the init time only in the safe direction).
    for ((_, xid, at), due) in seen.iter().zip([1.0, 1.2, 1.5, 1.6]) {
        assert!(
            at.duration_since(init) >= Duration::from_secs_f64(due - 0.05),
            "Xid {xid} came {:?} after init, due at {due} s",
            at.duration_since(init)
        );
    }
    // Delivered once to each set: the other set still gets GPU 2's two.
    let got_2: Vec<u64> = drain(&only_2, 200).iter().map(|(_, x, _)| *x).collect();
    assert_eq!(got_2, vec![48, 74]);
    // The whole nvmlEventData_t: no MIG instance is named.
    let e = raw_0.wait(100).expect("GPU 0's Xid 13");
    assert_eq!(
        (e.eventData, e.eventType),
        (13, u64::from(nvmlEventTypeXidCriticalError))
    );
    // SAFETY: the handle is only compared, never used.
    assert_eq!(e.device, unsafe { device(0).handle() });
    assert_eq!((e.gpuInstanceId, e.computeInstanceId), (u32::MAX, u32::MAX));
    assert_eq!(raw_0.wait(0).map(|e| e.eventData), Err(10), "TIMEOUT");
    assert_eq!(raw_0.free(), 0);
    assert_eq!(raw_0.free(), 2, "a freed set is INVALID_ARGUMENT");

    // The timeout is honoured when nothing is due (GPU 3's Xid is 10 minutes away).
    let before = Instant::now();
    assert!(matches!(all.wait(300), Err(NvmlError::Timeout)));
    let waited = before.elapsed();
    assert!(
        waited >= Duration::from_millis(290) && waited < Duration::from_secs(3),
        "{waited:?}"
    );

    // Xid 79: the GPU has fallen off the bus, and answers only who it is.
    let lost = device(1);
    assert!(matches!(lost.utilization_rates(), Err(NvmlError::GpuLost)));
    assert!(matches!(
        lost.supported_event_types(),
        Err(NvmlError::GpuLost)
    ));
    assert!(lost.pci_info().is_ok() && lost.uuid().is_ok());

    // Xid 48: one uncorrectable ECC error and a row waiting for a reset.
    let dbe = device(2);
    assert_eq!(remapped_rows(&dbe).expect("rows"), [0, 1, 1, 0]);
    let uncorrected = dbe.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile);
    assert_eq!(uncorrected.expect("ecc"), 1);
    assert_eq!(remapped_rows(&device(0)).expect("rows"), [0, 0, 0, 0]);

    // Xid 74: one recovery and a burst of CRC errors on one of GPU 2's links.
    let (mut recoveries, mut crc, mut replays) = (0, 0, 0);
    for l in 0..18 {
        let link = dbe.link_wrapper_for(l);
        if !link.is_active().unwrap_or(false) {
            continue;
        }
        recoveries += link
            .error_counter(ErrorCounter::DlRecovery)
            .expect("recovery");
        crc += link
            .error_counter(ErrorCounter::DlCrcFlit)
            .expect("crc flit")
            + link
                .error_counter(ErrorCounter::DlCrcData)
                .expect("crc data");
        replays += link.error_counter(ErrorCounter::DlReplay).expect("replay");
    }
    assert_eq!(recoveries, 1);
    assert!(crc > 0 && replays > 0, "crc {crc}, replays {replays}");
}

#[test]
fn registering_an_unsupported_event_type_is_refused() {
    let set = nvml().create_event_set().expect("event set");
    // No simulated board reports power source changes.
    let err = device(0)
        .register_events(EventTypes::POWER_SOURCE_CHANGE, set)
        .expect_err("unsupported type");
    assert!(matches!(err.error, NvmlError::NotSupported), "{err:?}");
}

#[test]
fn pcie_replays_come_from_the_knob() {
    assert_eq!(device(2).pcie_replay_counter().expect("replays"), 40);
    assert_eq!(device(0).pcie_replay_counter().expect("replays"), 0);
}

#[test]
fn a_power_throttled_gpu_accumulates_power_violation_time() {
    let gpu = device(3);
    let first = gpu
        .violation_status(PerformancePolicy::Power)
        .expect("power");
    let thermal = gpu
        .violation_status(PerformancePolicy::Thermal)
        .expect("thermal");
    assert_eq!(thermal.violation_time, 0);
    let deadline = Instant::now() + Duration::from_secs(5);
    let later = loop {
        let v = gpu
            .violation_status(PerformancePolicy::Power)
            .expect("power");
        if v.violation_time > first.violation_time || Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        later.violation_time > first.violation_time,
        "{first:?} -> {later:?}"
    );
    assert_eq!(later.violation_time % 1_000_000_000, 0, "whole seconds");
    assert!(later.reference_time >= first.reference_time);
    // An idle GPU with no throttle has spent no time at the cap.
    let idle = device(0)
        .violation_status(PerformancePolicy::Power)
        .expect("power");
    assert!(idle.violation_time <= later.violation_time);
}
