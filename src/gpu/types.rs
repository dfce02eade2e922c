//! The GPU domain types every other part of gpudeck speaks: static facts, live samples, processes, topology.

use serde::Serialize;

use super::counters::HealthCounters;
use crate::host::{ContainerRef, ProcessIdentity, ProcessTarget};

/// Which backend produced the data, shown on screen and in JSON so a demo can never pass for real.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Nvml,
    Demo,
}

/// A CUDA version as NVML encodes it (12080 = 12.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl CudaVersion {
    pub fn from_nvml(encoded: i32) -> Option<Self> {
        let encoded = u32::try_from(encoded).ok()?;
        Some(Self {
            major: encoded / 1000,
            minor: (encoded % 1000) / 10,
        })
    }
}

impl std::fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Host-wide facts read once when the source opens.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SystemInfo {
    pub source: SourceKind,
    pub driver_version: Option<String>,
    pub nvml_version: Option<String>,
    pub cuda_driver_version: Option<CudaVersion>,
}

/// Facts about one GPU that do not change while it is plugged in; read once because some cost milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GpuStatic {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub pci_bus_id: String,
    pub compute_capability: Option<String>,
    pub architecture: Option<String>,
    pub memory_total_bytes: Option<u64>,
    pub temp_slowdown_c: Option<u32>,
    pub temp_shutdown_c: Option<u32>,
    pub sm_clock_max_mhz: Option<u32>,
    pub mem_clock_max_mhz: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub fan_count: Option<u32>,
    pub ecc_enabled: Option<bool>,
    pub mig_enabled: Option<bool>,
    pub persistence_mode: Option<bool>,
}

/// Whether the kind of a process's GPU context is compute (CUDA) or graphics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessKind {
    Compute,
    Graphics,
}

/// One process holding a context on one GPU, with what the host knows about it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuProcess {
    pub gpu_index: u32,
    pub pid: u32,
    pub kind: ProcessKind,
    pub used_memory_bytes: Option<u64>,
    pub user: Option<String>,
    pub command: Option<String>,
    pub container: Option<ContainerRef>,
    /// Start time, owner, group and session from the host (not in the JSON: host-specific).
    #[serde(skip)]
    pub identity: Option<ProcessIdentity>,
    /// Its share of the GPU, read every few seconds only while the Processes tab is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_util: Option<ProcessGpuUtil>,
    /// CPU time over the last interval, in percent of one core (200 = two cores busy); read
    /// only while the Processes tab is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pct: Option<f64>,
    /// Resident host memory (RSS); read only while the Processes tab is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_memory_bytes: Option<u64>,
}

/// One process's share of its GPU, as `nvmlDeviceGetProcessUtilization` gives it: percent of
/// the sample period a kernel (SM), a memory copy, the encoder or the decoder ran for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProcessGpuUtil {
    pub sm_pct: u32,
    pub mem_pct: u32,
    pub enc_pct: u32,
    pub dec_pct: u32,
}

/// One per-process utilisation sample of one GPU, stamped in NVML's microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessUtilSample {
    pub pid: u32,
    pub timestamp_us: u64,
    pub util: ProcessGpuUtil,
}

impl GpuProcess {
    /// The process to signal: its PID and the start time it was seen with.
    pub fn target(&self) -> ProcessTarget {
        ProcessTarget {
            pid: self.pid,
            start_ticks: self.identity.map(|i| i.start_ticks),
        }
    }
}

/// A metric that could not be read for a reason other than "not supported".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricError {
    pub metric: &'static str,
    pub message: String,
}

/// The row remapper's counters (Ampere and later repair failing memory rows with spare ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RemappedRows {
    /// Rows remapped because of correctable errors.
    pub correctable: u32,
    /// Rows remapped because of uncorrectable errors.
    pub uncorrectable: u32,
    /// A remapping waits for the next GPU reset.
    pub pending: bool,
    /// A remapping failed: the bank has no spare row left.
    pub failure: bool,
}

/// Pages retired by dynamic page retirement (Kepler to Volta; later boards remap rows instead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RetiredPages {
    /// Retired after multiple single-bit (corrected) errors.
    pub single_bit_ecc: u32,
    /// Retired after a double-bit (uncorrected) error.
    pub double_bit_ecc: u32,
    /// Some retirements wait for the next driver reload or reboot.
    pub pending: bool,
}

/// Live values of one GPU at one instant; every field is optional because any may be unsupported.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GpuSample {
    pub lost: bool,
    pub util_gpu_pct: Option<u32>,
    pub util_mem_pct: Option<u32>,
    pub memory_used_bytes: Option<u64>,
    pub temp_c: Option<u32>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub fan_pct: Option<u32>,
    pub pstate: Option<u32>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    pub throttle_reasons: Option<Vec<String>>,
    pub ecc_corrected: Option<u64>,
    pub ecc_uncorrected: Option<u64>,
    pub remapped_rows: Option<RemappedRows>,
    pub retired_pages: Option<RetiredPages>,
    /// Read only while served or shown (`GpuSource::health`); all `None` otherwise.
    pub health: HealthCounters,
    pub processes: Vec<GpuProcess>,
    pub errors: Vec<MetricError>,
}

impl GpuSample {
    /// A sample for a GPU that fell off the bus: nothing but the fact.
    pub fn lost() -> Self {
        Self {
            lost: true,
            ..Self::default()
        }
    }

    /// The metrics (as `MetricError::metric` names them) that change seldom or only by an
    /// administrator's hand, yet cost as much to read as the rest: on a real H100 the PCIe
    /// width alone is 30 µs, a quarter of a GPU's whole dynamic set.
    pub const SLOW_METRICS: [&'static str; 7] = [
        "power limit",
        "pcie generation",
        "pcie width",
        "ecc corrected",
        "ecc uncorrected",
        "remapped rows",
        "retired pages",
    ];

    /// Takes the slow metrics, and any error reading them, from `full`: a quick sample
    /// (`GpuSource::sample_quick`) shows what the last full one read.
    pub fn keep_slow_from(&mut self, full: &GpuSample) {
        self.power_limit_w = full.power_limit_w;
        self.pcie_gen = full.pcie_gen;
        self.pcie_width = full.pcie_width;
        self.ecc_corrected = full.ecc_corrected;
        self.ecc_uncorrected = full.ecc_uncorrected;
        self.remapped_rows = full.remapped_rows;
        self.retired_pages = full.retired_pages;
        self.errors.extend(
            full.errors
                .iter()
                .filter(|e| Self::SLOW_METRICS.contains(&e.metric))
                .cloned(),
        );
    }
}

/// What to do about a GPU that fell off the bus (NVML: GPU_IS_LOST); `index` names it in the
/// reset command ("N" when several are lost).
pub fn lost_gpu_fix(index: &str) -> String {
    format!(
        "Look for Xid 79 in `sudo dmesg | grep -i xid`; reset the GPU when idle (`sudo nvidia-smi -r -i {index}`) \
         or reboot; if it recurs, check its power cables, seating and cooling."
    )
}

/// How two GPUs reach each other, in the order `nvidia-smi topo -m` ranks them (best first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TopoPath {
    /// The same board (e.g. a dual-GPU card).
    Board,
    /// At most one PCIe switch between them (`PIX`).
    PcieSwitch,
    /// Several PCIe switches but no host bridge (`PXB`).
    PcieSwitches,
    /// Through one PCIe host bridge (`PHB`).
    HostBridge,
    /// Across host bridges within one NUMA node (`NODE`).
    NumaNode,
    /// Across CPU sockets over the SMP interconnect (`SYS`).
    CrossSocket,
    /// NVML could not say.
    Unknown,
}

impl TopoPath {
    /// The short code nvidia-smi uses, so users can compare the two.
    pub fn code(self) -> &'static str {
        match self {
            TopoPath::Board => "BRD",
            TopoPath::PcieSwitch => "PIX",
            TopoPath::PcieSwitches => "PXB",
            TopoPath::HostBridge => "PHB",
            TopoPath::NumaNode => "NODE",
            TopoPath::CrossSocket => "SYS",
            TopoPath::Unknown => "?",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            TopoPath::Board => "same board",
            TopoPath::PcieSwitch => "through a single PCIe switch",
            TopoPath::PcieSwitches => "through several PCIe switches, no host bridge",
            TopoPath::HostBridge => "through a PCIe host bridge",
            TopoPath::NumaNode => "across PCIe host bridges within one NUMA node",
            TopoPath::CrossSocket => "across CPU sockets (SMP interconnect)",
            TopoPath::Unknown => "unknown",
        }
    }
}

/// The link between a pair of GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GpuLink {
    /// NVLinks the pair can use: direct links, or through NVSwitches the smaller of the two
    /// GPUs' switch-link counts (what `nvidia-smi topo -m` shows as NV#).
    pub nvlinks: u32,
    /// The NVLinks go through NVSwitches (HGX/DGX boards) rather than GPU to GPU.
    pub nvswitch: bool,
    pub path: TopoPath,
}

/// The GPU-to-GPU matrix; `links[a][b]` for a != b, the diagonal is unused. Symmetric: build
/// it with [`super::nvlinks::topology`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Topology {
    pub links: Vec<Vec<Option<GpuLink>>>,
}

impl Topology {
    pub fn link(&self, a: usize, b: usize) -> Option<GpuLink> {
        self.links.get(a)?.get(b).copied().flatten()
    }
}

/// Everything read once at start-up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Inventory {
    pub system: SystemInfo,
    pub gpus: Vec<GpuStatic>,
    pub topology: Topology,
}

/// Names for NVML's clock-event (throttle) reason bits, as nvidia-smi words them.
pub fn throttle_reason_names(bits: u64) -> Vec<String> {
    const NAMES: [(u64, &str); 9] = [
        (0x1, "idle"),
        (0x2, "applications clocks setting"),
        (0x4, "software power cap"),
        (0x8, "hardware slowdown"),
        (0x10, "sync boost"),
        (0x20, "software thermal slowdown"),
        (0x40, "hardware thermal slowdown"),
        (0x80, "hardware power brake"),
        (0x100, "display clock setting"),
    ];
    NAMES
        .iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, name)| (*name).to_string())
        .collect()
}

/// Whether any active reason actually slows the GPU down (idle and settings are not trouble).
pub fn is_slowdown(reason: &str) -> bool {
    reason.contains("slowdown") || reason.contains("power cap") || reason.contains("power brake")
}
