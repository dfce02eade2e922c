//! MIG, GPM and MPS through nvml-wrapper: a GPU split like mig-parted's all-balanced, a GPU
//! in MIG mode with no instances and a pending change back, an MPS server, and GPM per GPU,
//! per MIG device and per GPU instance.

// nvml-wrapper has no wrapper for the instance-id calls: they are called through its symbols.
#![allow(unsafe_code)]

mod common;

use gpudeck_sim_model::{SimSpec, Simulation};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::gpm_metrics_get;
use nvml_wrapper::{Device, Nvml};

// GPUs 0-1 train, 2 shares (under MPS), 3 serves, 4 is idle (roles of a 5-GPU machine).
const SPEC: &str = "gpus=5,frozen=200,\
    mig=0:1g.10gb@serve/3g.40gb@train/2g.20gb@shared/1g.10gb;1:,\
    mig-pending=1:off;4:on,mps=2";
const MIB: u64 = 1024 * 1024;

fn nvml() -> &'static Nvml {
    common::shared(SPEC)
}

fn device(i: u32) -> Device<'static> {
    nvml().device_by_index(i).expect("device")
}

fn mig(gpu: u32, index: u32) -> Device<'static> {
    device(gpu).mig_device_by_index(index).expect("MIG device")
}

fn model() -> Simulation {
    Simulation::new(SimSpec::parse(SPEC).expect("spec"))
}

#[test]
fn modes_current_and_pending() {
    let modes: Vec<(u32, u32)> = (0..5)
        .map(|i| {
            device(i)
                .mig_mode()
                .map(|m| (m.current, m.pending))
                .expect("mode")
        })
        .collect();
    assert_eq!(modes, vec![(1, 1), (1, 0), (0, 0), (0, 0), (0, 1)]);
    let counts: Vec<u32> = (0..5)
        .map(|i| device(i).mig_device_count().expect("count"))
        .collect();
    assert_eq!(counts, vec![7, 7, 0, 0, 0]);
}

#[test]
fn handles_by_index_with_empty_slots_not_found() {
    let d = device(0);
    for k in 0..4 {
        assert!(d.mig_device_by_index(k).is_ok(), "slot {k}");
    }
    for k in 4..7 {
        assert!(
            matches!(d.mig_device_by_index(k), Err(NvmlError::NotFound)),
            "slot {k}"
        );
    }
    assert!(matches!(
        d.mig_device_by_index(7),
        Err(NvmlError::InvalidArg)
    ));
    assert!(matches!(
        device(1).mig_device_by_index(0),
        Err(NvmlError::NotFound)
    ));
    assert!(matches!(
        device(2).mig_device_by_index(0),
        Err(NvmlError::NotSupported)
    ));
}

#[test]
fn a_mig_device_knows_itself_and_its_parent() {
    let m = mig(0, 0);
    assert!(m.mig_is_mig_device_handle().expect("is mig"));
    assert!(!device(0).mig_is_mig_device_handle().expect("is mig"));
    assert_eq!(
        m.mig_parent_device()
            .expect("parent")
            .index()
            .expect("index"),
        0
    );
    assert!(matches!(
        device(0).mig_parent_device(),
        Err(NvmlError::NotSupported)
    ));
    assert_eq!(m.name().expect("name"), "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    let uuid = m.uuid().expect("uuid");
    assert!(uuid.starts_with("MIG-") && uuid.len() == 40, "{uuid}");
    assert_eq!(uuid, model().mig(0).expect("mig").instances[0].uuid);
    let again = nvml().device_by_uuid(uuid.as_str()).expect("by MIG UUID");
    assert!(again.mig_is_mig_device_handle().expect("is mig"));
    assert_eq!(again.name().expect("name"), m.name().expect("name"));
    // What belongs to the parent is not the MIG device's to answer.
    assert!(matches!(
        m.temperature(nvml_wrapper::enum_wrappers::device::TemperatureSensor::Gpu),
        Err(NvmlError::NotSupported)
    ));
    assert!(device(0)
        .temperature(nvml_wrapper::enum_wrappers::device::TemperatureSensor::Gpu)
        .is_ok());
}

#[test]
fn instance_ids_from_the_raw_calls() {
    let lib = nvml().lib();
    let ids: Vec<(u32, u32)> = (0..4)
        .map(|k| {
            let (mut gi, mut ci) = (0u32, 0u32);
            // SAFETY: a live MIG handle and valid out-pointers.
            let (a, b) = unsafe {
                let h = mig(0, k).handle();
                (
                    lib.nvmlDeviceGetGpuInstanceId(h, &mut gi),
                    lib.nvmlDeviceGetComputeInstanceId(h, &mut ci),
                )
            };
            assert_eq!((a, b), (0, 0));
            (gi, ci)
        })
        .collect();
    assert_eq!(ids, vec![(2, 0), (3, 0), (9, 0), (10, 0)]);
    let mut gi = 0u32;
    // SAFETY: a GPU handle; the call must refuse it.
    let r = unsafe { lib.nvmlDeviceGetGpuInstanceId(device(0).handle(), &mut gi) };
    assert_eq!(r, 3, "NOT_SUPPORTED on a GPU handle");
}

#[test]
fn attributes_of_a_slice() {
    let a = mig(0, 0).attributes().expect("attributes");
    assert_eq!(a.multiprocessor_count, 60);
    assert_eq!(a.shared_copy_engine_count, 3);
    assert_eq!(a.shared_decoder_count, 3);
    assert_eq!(
        (a.gpu_instance_slice_count, a.compute_instance_slice_count),
        (3, 3)
    );
    assert_eq!(a.memory_size_mb, 40448);
    let small = mig(0, 3).attributes().expect("attributes");
    assert_eq!(
        (small.multiprocessor_count, small.memory_size_mb),
        (16, 9984)
    );
    assert!(matches!(
        device(0).attributes(),
        Err(NvmlError::NotSupported)
    ));
}

#[test]
fn memory_per_instance_adds_up_on_the_parent() {
    let big = mig(0, 0).memory_info().expect("memory");
    assert_eq!(big.total, 40448 * MIB);
    assert!(
        big.used > 30 * 1024 * MIB && big.used + big.free == big.total,
        "{big:?}"
    );
    let idle = mig(0, 3).memory_info().expect("memory");
    assert_eq!((idle.total, idle.used), (9984 * MIB, 15 * MIB));
    let m = model();
    let used: u64 = (0..4).map(|k| m.instance_memory_used(0, k, 200.0)).sum();
    // nvml-wrapper reads memory info v2, whose `used` leaves out the driver's reservation.
    let parent = device(0).memory_info().expect("memory");
    assert_eq!(parent.used, used);
    assert_eq!(parent.reserved, m.sample(0, 200.0).mem_reserved_bytes);
    assert_eq!(mig(0, 0).memory_info().expect("memory").reserved, 0);
}

#[test]
fn processes_carry_their_instance_ids() {
    let all = device(0).running_compute_processes().expect("processes");
    assert_eq!(all.len(), 4);
    assert!(all
        .iter()
        .all(|p| p.gpu_instance_id.is_some() && p.compute_instance_id == Some(0)));
    let big = mig(0, 0).running_compute_processes().expect("processes");
    assert_eq!(big.len(), 1);
    assert_eq!(big[0].gpu_instance_id, Some(2));
    let shared = mig(0, 1).running_compute_processes().expect("processes");
    assert_eq!(shared.len(), 2);
    assert!(mig(0, 3)
        .running_compute_processes()
        .expect("processes")
        .is_empty());
    assert!(device(1)
        .running_compute_processes()
        .expect("processes")
        .is_empty());
    let name = nvml().sys_process_name(big[0].pid, 64).expect("name");
    assert_eq!(name, "python");
    // Without MIG the ids are absent (0xFFFFFFFF on the wire).
    let whole = device(3).running_compute_processes().expect("processes");
    assert!(whole.iter().all(|p| p.gpu_instance_id.is_none()));
}

#[test]
fn utilisation_is_not_supported_under_mig() {
    for d in [device(0), device(1), mig(0, 0), mig(0, 3)] {
        assert!(matches!(
            d.utilization_rates(),
            Err(NvmlError::NotSupported)
        ));
        assert!(matches!(
            d.encoder_utilization(),
            Err(NvmlError::NotSupported)
        ));
    }
    assert!(matches!(
        device(0).process_utilization_stats(None),
        Err(NvmlError::NotSupported)
    ));
    assert!(device(3).utilization_rates().is_ok());
    assert!(
        device(4).utilization_rates().is_ok(),
        "pending on, still whole"
    );
}

#[test]
fn gpm_per_gpu_mig_device_and_gpu_instance() {
    let ids = [
        GpmMetricId::SmUtil,
        GpmMetricId::SmOccupancy,
        GpmMetricId::AnyTensorUtil,
        GpmMetricId::DramBwUtil,
        GpmMetricId::NvlinkTotalRxPerSec,
    ];
    let n = nvml();
    assert!(device(0).gpm_support().expect("support"));
    assert!(mig(0, 0).gpm_support().expect("support"));
    let read = |a, b| {
        let values = gpm_metrics_get(n, &a, &b, &ids).expect("metrics");
        assert!(
            matches!(values[4], Err(NvmlError::NotSupported)),
            "NVLink is not modelled"
        );
        values[..4]
            .iter()
            .map(|v| v.as_ref().expect("metric").value)
            .collect::<Vec<f64>>()
    };
    let s = model();
    let expect = |gi| {
        let g = s.gpm(0, gi, 200.0, 200.0).expect("model");
        vec![g.sm_util, g.sm_occupancy, g.any_tensor_util, g.dram_bw_util]
    };
    let whole = read(
        device(0).gpm_sample().expect("s1"),
        device(0).gpm_sample().expect("s2"),
    );
    assert_eq!(whole, expect(None));
    let by_handle = read(
        mig(0, 0).gpm_sample().expect("s1"),
        mig(0, 0).gpm_sample().expect("s2"),
    );
    let by_id = read(
        device(0).gpm_mig_sample(2).expect("s1"),
        device(0).gpm_mig_sample(2).expect("s2"),
    );
    assert_eq!(by_handle, by_id);
    assert_eq!(by_id, expect(Some(2)));
    assert!(by_id[0] > 0.0 && by_id[0] <= 100.0, "{by_id:?}");
    assert!(matches!(
        device(0).gpm_mig_sample(5),
        Err(NvmlError::InvalidArg)
    ));
    assert!(matches!(
        device(3).gpm_mig_sample(0),
        Err(NvmlError::NotSupported)
    ));
    // Samples of different targets do not make a metric.
    let a = device(0).gpm_sample().expect("a");
    let b = device(3).gpm_sample().expect("b");
    assert!(matches!(
        gpm_metrics_get(n, &a, &b, &ids),
        Err(NvmlError::InvalidArg)
    ));
    a.free().expect("free");
}

#[test]
fn mps_clients_and_their_server() {
    let d = device(2);
    let clients = d.mps_running_compute_processes().expect("mps");
    assert_eq!(clients.len(), 2);
    let compute = d.running_compute_processes().expect("compute");
    assert_eq!(
        compute.len(),
        1,
        "the server; its clients are listed by the MPS call"
    );
    assert_eq!(
        nvml().sys_process_name(compute[0].pid, 64).expect("name"),
        "nvidia-cuda-mps-server"
    );
    assert!(clients.iter().all(|c| c.pid != compute[0].pid));
    assert!(device(3)
        .mps_running_compute_processes()
        .expect("mps")
        .is_empty());
}
