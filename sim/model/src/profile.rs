//! Static facts of each simulated GPU model (datasheet and real `nvidia-smi -q` values).

use crate::knobs::Profile;

/// What does not change over time on one GPU model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Facts {
    pub name: &'static str,
    pub architecture: &'static str,
    /// NVML `nvmlDeviceArchitecture_t`: 7 Ampere, 8 Ada, 9 Hopper.
    pub architecture_code: u32,
    pub compute_capability: (u32, u32),
    /// NVML `nvmlBrandType_t`: 5 GeForce, 14 NVIDIA.
    pub brand: u32,
    pub pci_device_id: u32,
    pub pci_subsystem_id: u32,
    pub vbios: &'static str,
    pub memory_mib: u64,
    pub reserved_mib: u64,
    pub bar1_mib: u64,
    pub power_limit_w: u32,
    pub power_min_w: u32,
    pub power_max_w: u32,
    pub idle_w: f64,
    pub temp_shutdown_c: u32,
    pub temp_slowdown_c: u32,
    pub temp_max_operating_c: u32,
    pub temp_mem_max_c: u32,
    /// Temperature a busy GPU settles at, with the room at 25 °C.
    pub load_temp_c: f64,
    pub max_sm_mhz: u32,
    pub max_mem_mhz: u32,
    pub max_video_mhz: u32,
    pub idle_sm_mhz: u32,
    pub idle_mem_mhz: u32,
    pub idle_video_mhz: u32,
    pub pcie_gen: u32,
    pub pcie_width: u32,
    pub fans: u32,
    pub nvlinks: u32,
    /// NVML `nvmlNvlinkVersion_t`: 6 = NVLink 4.0.
    pub nvlink_version: u32,
    pub ecc: bool,
    pub mig_capable: bool,
    pub persistence: bool,
    /// Datacenter boards stay in P0 and keep their PCIe link up; GeForce drops to P8 and gen 1.
    pub datacenter: bool,
    /// First PCI bus number and the step between GPUs on one CPU socket.
    pub bus_base: [u32; 2],
    /// Physical cores per CPU socket of the typical host (SMT doubles the CPU count).
    pub cores_per_socket: u32,
}

const H100_SXM: Facts = Facts {
    name: "NVIDIA H100 80GB HBM3",
    architecture: "Hopper",
    architecture_code: 9,
    compute_capability: (9, 0),
    brand: 14,
    pci_device_id: 0x2330_10DE,
    pci_subsystem_id: 0x16C1_10DE,
    vbios: "96.00.DA.00.0C",
    memory_mib: 81559,
    reserved_mib: 480,
    bar1_mib: 131_072,
    power_limit_w: 700,
    power_min_w: 200,
    power_max_w: 700,
    idle_w: 71.0,
    temp_shutdown_c: 92,
    temp_slowdown_c: 89,
    temp_max_operating_c: 87,
    temp_mem_max_c: 95,
    load_temp_c: 63.0,
    max_sm_mhz: 1980,
    max_mem_mhz: 2619,
    max_video_mhz: 1545,
    idle_sm_mhz: 375,
    idle_mem_mhz: 2619,
    idle_video_mhz: 765,
    pcie_gen: 5,
    pcie_width: 16,
    fans: 0,
    nvlinks: 18,
    nvlink_version: 6,
    ecc: true,
    mig_capable: true,
    persistence: true,
    datacenter: true,
    bus_base: [0x18, 0x9A],
    cores_per_socket: 56,
};

const H100_PCIE: Facts = Facts {
    name: "NVIDIA H100 PCIe",
    pci_device_id: 0x2331_10DE,
    pci_subsystem_id: 0x1626_10DE,
    vbios: "96.00.30.00.01",
    power_limit_w: 350,
    power_min_w: 200,
    power_max_w: 350,
    idle_w: 48.0,
    load_temp_c: 68.0,
    max_sm_mhz: 1755,
    max_mem_mhz: 1593,
    max_video_mhz: 1455,
    idle_mem_mhz: 1593,
    nvlinks: 0,
    // NVLink 4.0 through the optional bridges (`bridge=`).
    nvlink_version: 6,
    bus_base: [0x17, 0x98],
    cores_per_socket: 32,
    ..H100_SXM
};

const A100_PCIE: Facts = Facts {
    name: "NVIDIA A100 80GB PCIe",
    architecture: "Ampere",
    architecture_code: 7,
    compute_capability: (8, 0),
    pci_device_id: 0x20B5_10DE,
    pci_subsystem_id: 0x1533_10DE,
    vbios: "92.00.45.00.04",
    memory_mib: 81920,
    reserved_mib: 563,
    power_limit_w: 300,
    power_min_w: 150,
    power_max_w: 300,
    idle_w: 44.0,
    temp_shutdown_c: 92,
    temp_slowdown_c: 89,
    temp_max_operating_c: 85,
    temp_mem_max_c: 95,
    load_temp_c: 66.0,
    max_sm_mhz: 1410,
    max_mem_mhz: 1512,
    max_video_mhz: 1290,
    idle_sm_mhz: 210,
    idle_mem_mhz: 1512,
    idle_video_mhz: 585,
    pcie_gen: 4,
    // NVLink 3.0 through the optional bridges (`bridge=`).
    nvlink_version: 4,
    ..H100_PCIE
};

/// H200 (SXM5, HGX H200): an H100 SXM with 141 GB of HBM3e (4.8 TB/s).
const H200: Facts = Facts {
    name: "NVIDIA H200",
    pci_device_id: 0x2335_10DE,
    vbios: "96.00.A5.00.01",
    memory_mib: 143_771,
    reserved_mib: 566,
    max_mem_mhz: 3201,
    idle_mem_mhz: 3201,
    load_temp_c: 61.0,
    ..H100_SXM
};

const RTX_4090: Facts = Facts {
    name: "NVIDIA GeForce RTX 4090",
    architecture: "Ada Lovelace",
    architecture_code: 8,
    compute_capability: (8, 9),
    brand: 5,
    pci_device_id: 0x2684_10DE,
    pci_subsystem_id: 0x16F3_10DE,
    vbios: "95.02.18.80.5F",
    memory_mib: 24564,
    reserved_mib: 302,
    bar1_mib: 256,
    power_limit_w: 450,
    power_min_w: 150,
    power_max_w: 600,
    idle_w: 21.0,
    temp_shutdown_c: 98,
    temp_slowdown_c: 95,
    temp_max_operating_c: 90,
    temp_mem_max_c: 0,
    load_temp_c: 71.0,
    max_sm_mhz: 3105,
    max_mem_mhz: 10501,
    max_video_mhz: 2415,
    idle_sm_mhz: 210,
    idle_mem_mhz: 405,
    idle_video_mhz: 1185,
    pcie_gen: 4,
    pcie_width: 16,
    fans: 2,
    nvlinks: 0,
    nvlink_version: 0,
    ecc: false,
    mig_capable: false,
    persistence: false,
    datacenter: false,
    bus_base: [0x01, 0x41],
    cores_per_socket: 16,
};

/// The facts of one profile.
pub(crate) fn facts(profile: Profile) -> &'static Facts {
    match profile {
        Profile::H100Sxm => &H100_SXM,
        Profile::H100Pcie => &H100_PCIE,
        Profile::A100Pcie => &A100_PCIE,
        Profile::H200 => &H200,
        Profile::Rtx4090 => &RTX_4090,
    }
}

/// Bytes in one MiB.
pub(crate) const MIB: u64 = 1024 * 1024;
