//! Static facts of one simulated GPU: identity, PCI location, limits, capabilities.

use crate::hash::{hash, tag};
use crate::knobs::Profile;
use crate::profile::{facts, MIB};
use crate::topology::{bus_of, socket_of};

/// What NVML reports about a GPU that never changes while it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SimDevice {
    /// NVML index (0-based).
    pub index: u32,
    /// GPU model this device simulates.
    pub profile: Profile,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", derived from the seed and index.
    pub uuid: String,
    /// NVML form, 8-digit domain: "00000000:18:00.0".
    pub pci_bus_id: String,
    /// Legacy form, 4-digit domain: "0000:18:00.0".
    pub pci_bus_id_legacy: String,
    pub pci_domain: u32,
    pub pci_bus: u32,
    pub pci_device: u32,
    /// Device id in NVML layout (device << 16 | vendor), e.g. 0x233010DE.
    pub pci_device_id: u32,
    /// Subsystem id in NVML layout, e.g. 0x16C110DE.
    pub pci_subsystem_id: u32,
    /// CUDA compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Architecture name, e.g. "Hopper".
    pub architecture: String,
    /// NVML `nvmlDeviceArchitecture_t` value (9 = Hopper).
    pub architecture_code: u32,
    /// NVML `nvmlBrandType_t` value (14 = NVIDIA, 5 = GeForce).
    pub brand: u32,
    /// Board serial number; None where NVML reports NOT_SUPPORTED (GeForce).
    pub serial: Option<String>,
    pub vbios_version: String,
    /// Minor number of /dev/nvidiaN.
    pub minor_number: u32,
    pub memory_total_bytes: u64,
    /// Memory the driver reserves (NVML memory info v2 `reserved`).
    pub memory_reserved_bytes: u64,
    pub bar1_total_bytes: u64,
    /// Enforced (and default) power limit.
    pub power_limit_mw: u32,
    /// Lowest settable power limit.
    pub power_min_mw: u32,
    /// Highest settable power limit.
    pub power_max_mw: u32,
    pub temp_slowdown_c: u32,
    pub temp_shutdown_c: u32,
    pub temp_max_operating_c: u32,
    /// Memory max operating temperature; 0 where not reported.
    pub temp_mem_max_c: u32,
    pub max_sm_clock_mhz: u32,
    pub max_mem_clock_mhz: u32,
    pub max_video_clock_mhz: u32,
    pub pcie_max_gen: u32,
    pub pcie_max_width: u32,
    pub num_fans: u32,
    /// NVLinks per GPU (0 where the board has none).
    pub nvlink_count: u32,
    /// NVML `nvmlNvlinkVersion_t` value (6 = NVLink 4.0).
    pub nvlink_version: u32,
    /// ECC is enabled (false where unsupported).
    pub ecc_enabled: bool,
    /// The board can do MIG.
    pub mig_capable: bool,
    /// MIG mode is on now (`mig=`).
    pub mig_enabled: bool,
    pub persistence: bool,
    /// A display is attached (GPU 0 of a GeForce desktop).
    pub display_active: bool,
    /// Datacenter board (stays in P0) rather than GeForce.
    pub datacenter: bool,
    /// CPU socket / NUMA node the GPU is attached to.
    pub cpu_socket: u32,
}

impl SimDevice {
    pub(crate) fn build(index: u32, gpus: u32, seed: u64, profile: Profile) -> SimDevice {
        let f = facts(profile);
        let bus = bus_of(index, gpus, profile, f);
        let serial = f.datacenter.then(|| {
            let n = hash(seed, &[tag::SERIAL, u64::from(index)]) % 1_000_000;
            format!("1652823{n:06}")
        });
        SimDevice {
            index,
            profile,
            name: f.name.to_string(),
            uuid: uuid(seed, index),
            pci_bus_id: format!("00000000:{bus:02X}:00.0"),
            pci_bus_id_legacy: format!("0000:{bus:02X}:00.0"),
            pci_domain: 0,
            pci_bus: bus,
            pci_device: 0,
            pci_device_id: f.pci_device_id,
            pci_subsystem_id: f.pci_subsystem_id,
            compute_capability: f.compute_capability,
            architecture: f.architecture.to_string(),
            architecture_code: f.architecture_code,
            brand: f.brand,
            serial,
            vbios_version: f.vbios.to_string(),
            minor_number: index,
            memory_total_bytes: f.memory_mib * MIB,
            memory_reserved_bytes: f.reserved_mib * MIB,
            bar1_total_bytes: f.bar1_mib * MIB,
            power_limit_mw: f.power_limit_w * 1000,
            power_min_mw: f.power_min_w * 1000,
            power_max_mw: f.power_max_w * 1000,
            temp_slowdown_c: f.temp_slowdown_c,
            temp_shutdown_c: f.temp_shutdown_c,
            temp_max_operating_c: f.temp_max_operating_c,
            temp_mem_max_c: f.temp_mem_max_c,
            max_sm_clock_mhz: f.max_sm_mhz,
            max_mem_clock_mhz: f.max_mem_mhz,
            max_video_clock_mhz: f.max_video_mhz,
            pcie_max_gen: f.pcie_gen,
            pcie_max_width: f.pcie_width,
            num_fans: f.fans,
            nvlink_count: f.nvlinks,
            nvlink_version: f.nvlink_version,
            ecc_enabled: f.ecc,
            mig_capable: f.mig_capable,
            mig_enabled: false,
            persistence: f.persistence,
            display_active: !f.datacenter && index == 0,
            datacenter: f.datacenter,
            cpu_socket: socket_of(index, gpus, f),
        }
    }
}

/// A UUID in NVIDIA's "GPU-8-4-4-4-12" form from 128 seeded bits.
fn uuid(seed: u64, index: u32) -> String {
    let hi = hash(seed, &[tag::UUID_HI, u64::from(index)]);
    let lo = hash(seed, &[tag::UUID_LO, u64::from(index)]);
    format!(
        "GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFFF,
        lo >> 48,
        lo & 0xFFFF_FFFF_FFFF
    )
}
