//! A healthy two-GPU machine as `HostFacts`, for the check tests to break one fact at a time.

use super::facts::{DockerFacts, DockerInstall, FreeSpace, HostFacts, KernelModule, Nvcc, Program};
use super::kernel_log::KernelLogFacts;
use super::parse::ModuleVersion;
use super::report::{DoctorReport, Status};
use crate::docker::EngineInfo;
use crate::gpu::report::{GpuEntry, GpuReport, SCHEMA};
use crate::gpu::{
    CudaVersion, GpuError, GpuSample, GpuStatic, RemappedRows, SourceKind, SystemInfo,
};

pub const GIB: u64 = 1 << 30;

pub fn gpu(index: u32) -> GpuEntry {
    GpuEntry::new(
        GpuStatic {
            index,
            name: "NVIDIA H100 80GB HBM3".into(),
            uuid: format!("GPU-{index}a2b3c4d-0000-1111-2222-333344445555"),
            pci_bus_id: format!("00000000:{:02X}:00.0", 0x18 + index),
            compute_capability: Some("9.0".into()),
            architecture: Some("Hopper".into()),
            memory_total_bytes: Some(80 * GIB),
            temp_slowdown_c: Some(87),
            temp_shutdown_c: Some(92),
            sm_clock_max_mhz: Some(1980),
            mem_clock_max_mhz: Some(2619),
            pcie_gen_max: Some(5),
            pcie_width_max: Some(16),
            fan_count: Some(0),
            ecc_enabled: Some(true),
            mig_enabled: Some(false),
            persistence_mode: Some(true),
        },
        GpuSample {
            util_gpu_pct: Some(0),
            temp_c: Some(31),
            pcie_gen: Some(5),
            pcie_width: Some(16),
            throttle_reasons: Some(vec!["idle".into()]),
            ecc_corrected: Some(0),
            ecc_uncorrected: Some(0),
            remapped_rows: Some(RemappedRows::default()),
            ..GpuSample::default()
        },
    )
}

pub fn engine_info() -> EngineInfo {
    EngineInfo {
        server_version: "27.3.1".into(),
        api_version: "1.47".into(),
        os: "Ubuntu 24.04".into(),
        docker_root_dir: "/var/lib/docker".into(),
        runtimes: vec![
            "io.containerd.runc.v2".into(),
            "nvidia".into(),
            "runc".into(),
        ],
        default_runtime: "runc".into(),
        cdi_spec_dirs: vec!["/etc/cdi".into(), "/var/run/cdi".into()],
        nvidia_cdi: false,
        nvidia_hook: false,
        cgroup_version: "2".into(),
    }
}

/// Every check passes on this machine.
pub fn healthy() -> HostFacts {
    let gpus = vec![gpu(0), gpu(1)];
    HostFacts {
        os: "linux".into(),
        kernel_module: Some(KernelModule {
            file: "/proc/driver/nvidia/version".into(),
            version: Some(ModuleVersion {
                version: "580.65.06".into(),
                open: Some(true),
            }),
        }),
        gpu: GpuReport {
            schema: SCHEMA,
            host: "gpubox".into(),
            system: Some(SystemInfo {
                source: SourceKind::Nvml,
                driver_version: Some("580.65.06".into()),
                nvml_version: Some("13.580.65.06".into()),
                cuda_driver_version: CudaVersion::from_nvml(13000),
            }),
            gpu_count: gpus.len(),
            gpus,
            topology: Vec::new(),
            error: None,
        },
        docker: DockerFacts::Reachable {
            host: "unix:///var/run/docker.sock".into(),
            info: engine_info(),
            root_free: FreeSpace::Known {
                path: "/var/lib/docker".into(),
                bytes: 200 * GIB,
            },
        },
        docker_install: DockerInstall {
            programs: vec![Program {
                name: "dockerd".into(),
                path: "/usr/bin/dockerd".into(),
            }],
            configured_host: None,
            configured_by: None,
            socket: Some("/var/run/docker.sock".into()),
        },
        cdi_dirs: vec!["/etc/cdi".into(), "/var/run/cdi".into()],
        cdi_specs: Vec::new(),
        toolkit: vec![Program {
            name: "nvidia-ctk".into(),
            path: "/usr/bin/nvidia-ctk".into(),
        }],
        nvcc: Some(Nvcc {
            path: "/usr/local/cuda/bin/nvcc".into(),
            release: Some((12, 8)),
            note: None,
        }),
        cuda_visible_devices: None,
        cuda_device_order: None,
        kernel_log: KernelLogFacts::Read {
            source: "/dev/kmsg".into(),
            live: true,
            boot_time_s: Some(1_764_000_000),
            xids: Vec::new(),
            earlier_xids: 0,
        },
        xid_catalog: crate::health::XidCatalog::builtin(),
    }
}

/// The machine with NVML failing as `e` does.
pub fn nvml_failed(e: &GpuError) -> HostFacts {
    let mut f = healthy();
    f.gpu = crate::gpu::report::failed("gpubox".into(), e);
    f
}

/// The one check with this id (panics in tests when it is missing).
pub fn find<'a>(r: &'a DoctorReport, id: &str) -> &'a super::report::Check {
    r.checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id} in {:#?}", r.checks))
}

/// The status of check `id` when the checks run on `f`, with its fix.
pub fn status_of(f: &HostFacts, id: &str) -> (Status, Option<String>) {
    let r = super::run_checks(f);
    let c = find(&r, id);
    (c.status, c.fix.clone())
}
