//! Every device query through nvml-wrapper against the default simulated 8x H100 SXM machine.

// The C ABI under test: raw NVML symbols called through pointers this test owns.
#![allow(unsafe_code)]

mod common;

use gpudeck_sim_model::{SimSpec, SIM_PID_BASE};
use nvml_wrapper::enum_wrappers::device::{
    Brand, Clock, ClockId, ComputeMode, EccCounter, MemoryError, MemoryLocation, PcieUtilCounter,
    PerformanceState, TemperatureSensor, TemperatureThreshold, TopologyLevel,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

const MIB: u64 = 1024 * 1024;

fn nvml() -> &'static Nvml {
    common::shared("")
}

#[test]
fn system_versions() {
    let n = nvml();
    assert_eq!(n.sys_driver_version().expect("driver"), "580.65.06");
    assert_eq!(n.sys_nvml_version().expect("nvml"), "13.580.65.06");
    assert_eq!(n.sys_cuda_driver_version().expect("cuda"), 13000);
    assert_eq!(n.device_count().expect("count"), 8);
}

#[test]
fn identity_of_every_gpu() {
    let n = nvml();
    let model = gpudeck_sim_model::Simulation::new(SimSpec::default());
    for i in 0..8 {
        let d = n.device_by_index(i).expect("device");
        let facts = model.device(i).expect("model device");
        assert_eq!(d.index().expect("index"), i);
        assert_eq!(d.name().expect("name"), "NVIDIA H100 80GB HBM3");
        assert_eq!(d.uuid().expect("uuid"), facts.uuid);
        let pci = d.pci_info().expect("pci");
        assert_eq!(pci.bus_id, facts.pci_bus_id);
        assert_eq!((pci.domain, pci.bus, pci.device), (0, facts.pci_bus, 0));
        assert_eq!(pci.pci_device_id, 0x2330_10DE);
        assert_eq!(pci.pci_sub_system_id, Some(0x16C1_10DE));
        assert_eq!(d.minor_number().expect("minor"), i);
        assert_eq!(d.serial().expect("serial").len(), 13);
        assert_eq!(d.brand().expect("brand"), Brand::Nvidia);
        assert_eq!(d.cuda_compute_capability().expect("cc").major, 9);
        assert_eq!(format!("{:?}", d.architecture().expect("arch")), "Hopper");
        assert_eq!(d.vbios_version().expect("vbios"), "96.00.DA.00.0C");
        let by_uuid = n.device_by_uuid(facts.uuid.as_str()).expect("by uuid");
        assert_eq!(by_uuid.index().expect("index"), i);
        let by_bus = n
            .device_by_pci_bus_id(facts.pci_bus_id.as_str())
            .expect("by bus");
        assert_eq!(by_bus.index().expect("index"), i);
    }
    assert!(matches!(n.device_by_index(8), Err(NvmlError::InvalidArg)));
    assert!(matches!(
        n.device_by_uuid("GPU-nope"),
        Err(NvmlError::NotFound)
    ));
}

#[test]
fn memory_and_utilization() {
    let n = nvml();
    for i in 0..8 {
        let d = n.device_by_index(i).expect("device");
        let m = d.memory_info().expect("memory v2");
        assert_eq!(m.total, 81559 * MIB);
        assert_eq!(m.reserved, 480 * MIB);
        assert_eq!(m.total, m.reserved + m.used + m.free);
        let u = d.utilization_rates().expect("util");
        assert!(u.gpu <= 100 && u.memory <= 100);
        let enc = d.encoder_utilization().expect("encoder");
        assert_eq!((enc.utilization, enc.sampling_period), (0, 100_000));
        let bar1 = d.bar1_memory_info().expect("bar1");
        assert_eq!(bar1.total, 128 * 1024 * MIB);
        assert_eq!(bar1.total, bar1.used + bar1.free);
    }
}

#[test]
fn thermals_power_and_clocks() {
    let n = nvml();
    let d = n.device_by_index(0).expect("device");
    let t = d.temperature(TemperatureSensor::Gpu).expect("temp");
    assert!((20..89).contains(&t), "{t}");
    assert_eq!(
        d.temperature_threshold(TemperatureThreshold::Slowdown)
            .expect("slowdown"),
        89
    );
    assert_eq!(
        d.temperature_threshold(TemperatureThreshold::Shutdown)
            .expect("shutdown"),
        92
    );
    assert_eq!(
        d.temperature_threshold(TemperatureThreshold::GpuMax)
            .expect("gpu max"),
        87
    );
    let p = d.power_usage().expect("power");
    assert!((50_000..=700_000).contains(&p), "{p}");
    assert_eq!(d.enforced_power_limit().expect("limit"), 700_000);
    assert_eq!(d.power_management_limit().expect("pm limit"), 700_000);
    assert_eq!(
        d.power_management_limit_default().expect("default limit"),
        700_000
    );
    let c = d.power_management_limit_constraints().expect("constraints");
    assert_eq!((c.min_limit, c.max_limit), (200_000, 700_000));
    let e1 = d.total_energy_consumption().expect("energy");
    let e2 = d.total_energy_consumption().expect("energy");
    assert!(e2 >= e1);
    assert_eq!(d.max_clock_info(Clock::SM).expect("max sm"), 1980);
    assert_eq!(d.max_clock_info(Clock::Graphics).expect("max gr"), 1980);
    assert_eq!(d.max_clock_info(Clock::Memory).expect("max mem"), 2619);
    assert_eq!(d.max_clock_info(Clock::Video).expect("max video"), 1545);
    let sm = d.clock_info(Clock::SM).expect("sm");
    assert!((300..=1980).contains(&sm), "{sm}");
    assert_eq!(d.clock_info(Clock::Memory).expect("mem"), 2619);
    assert_eq!(
        d.clock(Clock::SM, ClockId::CustomerMaxBoost)
            .expect("boost"),
        1980
    );
    assert_eq!(
        d.performance_state().expect("pstate"),
        PerformanceState::Zero
    );
}

#[test]
fn fans_on_an_sxm_board() {
    let d = nvml().device_by_index(0).expect("device");
    assert_eq!(d.num_fans().expect("fans"), 0);
    assert!(matches!(d.fan_speed(0), Err(NvmlError::NotSupported)));
}

#[test]
fn pcie_link_and_throughput() {
    let d = nvml().device_by_index(2).expect("device");
    assert_eq!(d.current_pcie_link_gen().expect("gen"), 5);
    assert_eq!(d.current_pcie_link_width().expect("width"), 16);
    assert_eq!(d.max_pcie_link_gen().expect("max gen"), 5);
    assert_eq!(d.max_pcie_link_width().expect("max width"), 16);
    d.pcie_throughput(PcieUtilCounter::Send).expect("tx");
    d.pcie_throughput(PcieUtilCounter::Receive).expect("rx");
}

#[test]
fn throttle_reasons() {
    let n = nvml();
    let idle = n.device_by_index(7).expect("device");
    let reasons = idle.current_throttle_reasons().expect("reasons");
    assert!(
        reasons.bits() & 1 == 1,
        "an idle GPU reports GpuIdle: {reasons:?}"
    );
    assert_eq!(
        idle.supported_throttle_reasons().expect("supported").bits(),
        0x1FF
    );
}

#[test]
fn health_and_modes() {
    let d = nvml().device_by_index(1).expect("device");
    let ecc = d.is_ecc_enabled().expect("ecc");
    assert!(ecc.currently_enabled && ecc.pending_enabled);
    assert_eq!(
        d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
            .expect("ecc"),
        0
    );
    let dram = d.memory_error_counter(
        MemoryError::Corrected,
        EccCounter::Aggregate,
        MemoryLocation::Device,
    );
    assert_eq!(dram.expect("dram counter"), 0);
    assert!(matches!(
        d.retired_pages(nvml_wrapper::enum_wrappers::device::RetirementCause::DoubleBitEccError),
        Err(NvmlError::NotSupported)
    ));
    let mig = d.mig_mode().expect("mig");
    assert_eq!((mig.current, mig.pending), (0, 0));
    assert!(d.is_in_persistent_mode().expect("persistence"));
    assert_eq!(
        d.compute_mode().expect("compute mode"),
        ComputeMode::Default
    );
    assert!(!d.is_display_connected().expect("display mode"));
    assert!(!d.is_display_active().expect("display active"));
    assert_eq!(d.numa_node_id().expect("numa"), 0);
    assert_eq!(n_device(5).numa_node_id().expect("numa"), 1);
    let cpus = d.cpu_affinity(4).expect("affinity");
    assert_eq!(cpus[0], (1 << 56) - 1, "socket 0 owns cpus 0-55");
    assert_eq!(cpus[1] >> 48, 0xFFFF, "and their SMT siblings from 112");
}

fn n_device(i: u32) -> nvml_wrapper::Device<'static> {
    nvml().device_by_index(i).expect("device")
}

#[test]
fn compute_processes_v3() {
    let counts: Vec<usize> = (0..8)
        .map(|i| {
            n_device(i)
                .running_compute_processes()
                .expect("procs")
                .len()
        })
        .collect();
    assert_eq!(counts, vec![1, 1, 1, 1, 2, 1, 0, 0]);
    for p in n_device(4).running_compute_processes().expect("procs") {
        assert!(p.pid >= SIM_PID_BASE);
        assert!(matches!(p.used_gpu_memory, UsedGpuMemory::Used(b) if b > 0));
        assert_eq!((p.gpu_instance_id, p.compute_instance_id), (None, None));
    }
    assert!(n_device(0)
        .running_graphics_processes()
        .expect("graphics")
        .is_empty());
    assert!(n_device(0)
        .mps_running_compute_processes()
        .expect("mps")
        .is_empty());
    let pid = n_device(5).running_compute_processes().expect("procs")[0].pid;
    assert_eq!(nvml().sys_process_name(pid, 64).expect("name"), "python3");
    let own = std::process::id();
    assert!(!nvml()
        .sys_process_name(own, 256)
        .expect("own name")
        .is_empty());
}

#[test]
fn process_utilization() {
    let samples = n_device(4)
        .process_utilization_stats(None)
        .expect("samples");
    assert_eq!(samples.len(), 2);
    let later = n_device(4).process_utilization_stats(u64::MAX);
    assert!(matches!(later, Err(NvmlError::NotFound)));
    assert!(matches!(
        n_device(6).process_utilization_stats(None),
        Err(NvmlError::NotFound)
    ));
}

#[test]
fn topology_matches_a_dgx() {
    let n = nvml();
    let level = |a: u32, b: u32| {
        n_device(a)
            .topology_common_ancestor(n_device(b))
            .expect("topology")
    };
    assert_eq!(level(0, 1), TopologyLevel::Single);
    assert_eq!(level(6, 7), TopologyLevel::Single);
    assert_eq!(level(0, 2), TopologyLevel::Node);
    assert_eq!(level(0, 4), TopologyLevel::System);
    assert_eq!(
        n.topology_common_ancestor(&n_device(3), &n_device(7))
            .expect("t"),
        TopologyLevel::System
    );
}

/// `nvmlDeviceGetNvLinkRemoteDeviceType` through the raw symbol (nvml-wrapper 0.13's wrapper
/// drops the answer).
fn remote_device_type(d: &nvml_wrapper::Device, link: u32) -> (u32, u32) {
    let sym = d
        .nvml()
        .lib()
        .nvmlDeviceGetNvLinkRemoteDeviceType
        .as_ref()
        .expect("exported");
    let mut kind = 99;
    let rc = unsafe { sym(d.handle(), link, &mut kind) };
    (rc, kind)
}

#[test]
fn every_nvlink_ends_at_an_nvswitch_as_on_an_hgx_board() {
    use nvml_wrapper::enum_wrappers::device::{P2pCapabilitiesIndex, P2pStatus};
    let d = n_device(2);
    let mut switches = Vec::new();
    for l in 0..18 {
        let link = d.link_wrapper_for(l);
        assert!(link.is_active().expect("state"));
        assert_eq!(
            link.version().expect("version"),
            6,
            "NVML_NVLINK_VERSION_4_0"
        );
        assert_eq!(
            remote_device_type(&d, l),
            (0, 2),
            "NVML_NVLINK_DEVICE_TYPE_SWITCH"
        );
        let remote = link.remote_pci_info().expect("remote");
        assert_eq!(remote.pci_device_id, 0x22A3_10DE, "an NVSwitch, not a GPU");
        switches.push(remote.bus_id);
    }
    switches.sort();
    switches.dedup();
    assert_eq!(
        switches,
        [
            "00000000:05:00.0",
            "00000000:06:00.0",
            "00000000:07:00.0",
            "00000000:08:00.0"
        ]
    );
    assert!(matches!(
        d.link_wrapper_for(18).is_active(),
        Err(NvmlError::InvalidArg)
    ));
    assert_eq!(remote_device_type(&d, 18).0, 2, "INVALID_ARGUMENT");
    let status = d
        .p2p_status(&n_device(5), P2pCapabilitiesIndex::NvLink)
        .expect("p2p");
    assert_eq!(
        status,
        P2pStatus::Ok,
        "switch-attached GPUs reach each other"
    );
}

#[test]
fn whole_gpus_without_mig_or_mps_but_with_gpm() {
    use nvml_wrapper::enums::gpm::GpmMetricId;
    let n = nvml();
    for i in 0..8 {
        let d = n_device(i);
        assert_eq!(d.mig_device_count().expect("max MIG devices"), 0);
        assert!(matches!(
            d.mig_device_by_index(0),
            Err(NvmlError::NotSupported)
        ));
        assert!(!d.mig_is_mig_device_handle().expect("is MIG"));
        assert!(d.utilization_rates().is_ok());
        assert!(d.mps_running_compute_processes().expect("mps").is_empty());
        let procs = d.running_compute_processes().expect("processes");
        assert!(procs.iter().all(|p| p.gpu_instance_id.is_none()));
        assert!(d.gpm_support().expect("GPM on Hopper"));
    }
    // GPM on a whole GPU: the training rank's SMs are busy, the idle GPU's are not.
    let ids = [GpmMetricId::SmUtil, GpmMetricId::GraphicsUtil];
    let sm = |i: u32| {
        let d = n_device(i);
        let (a, b) = (d.gpm_sample().expect("s1"), d.gpm_sample().expect("s2"));
        let v = nvml_wrapper::gpm::gpm_metrics_get(n, &a, &b, &ids).expect("metrics");
        let value = |k: usize| v[k].as_ref().expect("metric").value;
        (value(0), value(1))
    };
    let (busy, graphics) = sm(0);
    assert!(busy > 0.0 && busy <= graphics, "{busy} {graphics}");
    assert_eq!(sm(7), (0.0, 0.0));
}
