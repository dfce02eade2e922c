//! Fault-injection knobs seen through nvml-wrapper, and exact agreement with the in-process
//! model at a frozen time.

// The C ABI under test: raw NVML symbols called through pointers this test owns.
#![allow(unsafe_code)]

mod common;

use gpudeck_sim_model::{reason, SimSpec, Simulation};
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, MemoryLocation, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

fn spec() -> &'static str {
    static SPEC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SPEC.get_or_init(|| {
        format!(
            "frozen=300,unsupported=power;temperature,lost=3,downgrade=1,\
             throttle=0:thermal;2:sw-slowdown,ecc=2:5:1,remap=4:failed;5:remapped,pids=6:{}",
            std::process::id()
        )
    })
}

fn nvml() -> &'static Nvml {
    common::shared(spec())
}

fn device(i: u32) -> Device<'static> {
    nvml().device_by_index(i).expect("device")
}

fn model() -> Simulation {
    Simulation::new(SimSpec::parse(spec()).expect("spec"))
}

#[test]
fn frozen_readings_equal_the_model() {
    let model = model();
    for i in [0, 1, 2, 4, 5, 6, 7] {
        let want = model.sample(i, 300.0);
        let d = device(i);
        let util = d.utilization_rates().expect("util");
        assert_eq!(
            (util.gpu, util.memory),
            (want.util_gpu, want.util_mem),
            "gpu {i}"
        );
        assert_eq!(d.memory_info().expect("memory").used, want.mem_used_bytes);
        assert_eq!(d.clock_info(Clock::SM).expect("sm"), want.sm_clock_mhz);
        assert_eq!(
            d.pcie_throughput(nvml_wrapper::enum_wrappers::device::PcieUtilCounter::Receive)
                .expect("rx"),
            want.pcie_rx_kbps
        );
        let reasons = d.current_throttle_reasons().expect("reasons").bits();
        assert_eq!(reasons, want.throttle_reasons);
        let procs: Vec<(u32, u64)> = d
            .running_compute_processes()
            .expect("procs")
            .into_iter()
            .map(|p| match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => (p.pid, b),
                UsedGpuMemory::Unavailable => (p.pid, 0),
            })
            .collect();
        let expected: Vec<(u32, u64)> = model
            .processes(i, 300.0)
            .iter()
            .map(|p| (p.pid, p.used_memory_bytes))
            .collect();
        assert_eq!(procs, expected, "gpu {i}");
    }
}

#[test]
fn unsupported_metrics_fail_and_others_still_work() {
    let d = device(0);
    assert!(matches!(d.power_usage(), Err(NvmlError::NotSupported)));
    assert!(matches!(
        d.enforced_power_limit(),
        Err(NvmlError::NotSupported)
    ));
    assert!(matches!(
        d.total_energy_consumption(),
        Err(NvmlError::NotSupported)
    ));
    assert!(matches!(
        d.temperature(TemperatureSensor::Gpu),
        Err(NvmlError::NotSupported)
    ));
    assert!(matches!(
        d.temperature_threshold(TemperatureThreshold::Slowdown),
        Err(NvmlError::NotSupported)
    ));
    assert!(d.utilization_rates().is_ok());
    assert!(d.memory_info().is_ok());
    assert!(d.max_clock_info(Clock::SM).is_ok());
    assert!(d.running_compute_processes().is_ok());
}

#[test]
fn a_lost_gpu_keeps_its_identity_but_answers_nothing_else() {
    let d = device(3);
    assert_eq!(d.name().expect("name"), "NVIDIA H100 80GB HBM3");
    assert!(d.uuid().is_ok() && d.pci_info().is_ok());
    assert!(matches!(d.utilization_rates(), Err(NvmlError::GpuLost)));
    assert!(matches!(d.memory_info(), Err(NvmlError::GpuLost)));
    assert!(matches!(d.clock_info(Clock::SM), Err(NvmlError::GpuLost)));
    assert!(matches!(
        d.running_compute_processes(),
        Err(NvmlError::GpuLost)
    ));
    assert!(matches!(d.is_ecc_enabled(), Err(NvmlError::GpuLost)));
    assert!(matches!(
        d.topology_common_ancestor(device(0)),
        Err(NvmlError::GpuLost)
    ));
    assert!(matches!(
        d.link_wrapper_for(0).is_active(),
        Err(NvmlError::GpuLost)
    ));
    assert!(device(2).utilization_rates().is_ok());
}

#[test]
fn downgraded_pcie_link() {
    let d = device(1);
    assert_eq!(d.current_pcie_link_gen().expect("gen"), 3);
    assert_eq!(d.current_pcie_link_width().expect("width"), 8);
    assert_eq!(d.max_pcie_link_gen().expect("max gen"), 5);
    assert_eq!(d.max_pcie_link_width().expect("max width"), 16);
    assert_eq!(device(0).current_pcie_link_gen().expect("gen"), 5);
}

#[test]
fn throttle_reason_bits() {
    let hot = device(0)
        .current_throttle_reasons()
        .expect("reasons")
        .bits();
    assert_eq!(
        hot & reason::HW_THERMAL_SLOWDOWN,
        reason::HW_THERMAL_SLOWDOWN
    );
    let slow = device(2)
        .current_throttle_reasons()
        .expect("reasons")
        .bits();
    assert_eq!(
        slow & reason::SW_THERMAL_SLOWDOWN,
        reason::SW_THERMAL_SLOWDOWN
    );
}

#[test]
fn injected_ecc_errors() {
    let d = device(2);
    let count = |e, c| d.total_ecc_errors(e, c).expect("ecc");
    assert_eq!(count(MemoryError::Corrected, EccCounter::Volatile), 5);
    assert_eq!(count(MemoryError::Uncorrected, EccCounter::Volatile), 1);
    assert_eq!(count(MemoryError::Uncorrected, EccCounter::Aggregate), 1);
    let dram = d.memory_error_counter(
        MemoryError::Corrected,
        EccCounter::Volatile,
        MemoryLocation::Device,
    );
    assert_eq!(dram.expect("dram"), 5);
    let l2 = d.memory_error_counter(
        MemoryError::Corrected,
        EccCounter::Volatile,
        MemoryLocation::L2Cache,
    );
    assert_eq!(l2.expect("l2"), 0);
    assert_eq!(
        device(0)
            .total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)
            .expect("ecc"),
        0
    );
}

/// (correctable, uncorrectable, pending, failure) through the raw symbol: nvml-wrapper 0.13 has
/// no wrapper for it, so gpudeck calls it this way too.
fn remapped_rows(d: &Device) -> Result<[u32; 4], NvmlError> {
    let sym = nvml_wrapper::error::nvml_sym(nvml().lib().nvmlDeviceGetRemappedRows.as_ref())?;
    let mut r = [0u32; 4];
    let [a, b, c, e] = &mut r;
    // SAFETY: a live handle and four valid out-pointers, as nvml.h documents.
    nvml_wrapper::error::nvml_try(unsafe { sym(d.handle(), a, b, c, e) })?;
    Ok(r)
}

#[test]
fn row_remapping_and_page_retirement() {
    assert_eq!(remapped_rows(&device(0)).expect("rows"), [0, 0, 0, 0]);
    assert_eq!(remapped_rows(&device(2)).expect("rows"), [0, 1, 1, 0]);
    assert_eq!(remapped_rows(&device(4)).expect("rows"), [0, 1, 0, 1]);
    assert_eq!(remapped_rows(&device(5)).expect("rows"), [0, 1, 0, 0]);
    assert!(matches!(remapped_rows(&device(3)), Err(NvmlError::GpuLost)));
    use nvml_wrapper::enum_wrappers::device::RetirementCause;
    // Hopper remaps rows instead of retiring pages.
    assert!(matches!(
        device(0).retired_pages(RetirementCause::DoubleBitEccError),
        Err(NvmlError::NotSupported)
    ));
    assert!(matches!(
        device(0).are_pages_pending_retired(),
        Err(NvmlError::NotSupported)
    ));
}

#[test]
fn real_pid_is_listed_on_its_gpu() {
    let own = std::process::id();
    let procs = device(6).running_compute_processes().expect("procs");
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0].pid, own);
    let name = nvml().sys_process_name(own, 4096).expect("name");
    let exe = std::env::args().next().expect("argv0");
    assert_eq!(name, exe);
    assert!(matches!(
        nvml().sys_process_name(own, 2),
        Err(NvmlError::InsufficientSize(_))
    ));
}
