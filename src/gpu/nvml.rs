//! The real GPU source: NVML through nvml-wrapper, reading static facts once and cheap metrics per tick.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};

use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PerformancePolicy, RetirementCause, TemperatureSensor,
    TemperatureThreshold, TopologyLevel,
};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::error::{nvml_sym, nvml_try, NvmlError};
use nvml_wrapper::{Device, Nvml};

use super::counters::{HealthCounters, NvLinkErrors};
use super::nvlinks::{self, LinkEnd};
use super::source::{GpuError, GpuSource};
use super::types::{
    throttle_reason_names, CudaVersion, GpuProcess, GpuSample, GpuStatic, Inventory, MetricError,
    ProcessGpuUtil, ProcessKind, ProcessUtilSample, RemappedRows, RetiredPages, SourceKind,
    SystemInfo, TopoPath, Topology,
};
use super::xid_watch::XidBackend;

/// NVML's most NVLink links per GPU across generations (NVML_NVLINK_MAX_LINKS).
const MAX_NVLINKS: u32 = 18;
/// The library NVML is loaded from unless the user says otherwise.
pub const DEFAULT_LIBRARY: &str = "libnvidia-ml.so.1";

/// An initialised NVML library.
pub struct NvmlSource {
    nvml: Nvml,
    /// The library it was opened from (`--nvml-lib`), for the Xid watcher's own handle.
    library: Option<OsString>,
}

impl NvmlSource {
    /// Loads and initialises NVML, from `library` when given (`--nvml-lib`).
    pub fn open(library: Option<&OsStr>) -> Result<Self, GpuError> {
        let mut builder = Nvml::builder();
        if let Some(path) = library {
            builder.lib_path(path);
        }
        let nvml = builder.init().map_err(|e| init_error(e, library))?;
        Ok(Self {
            nvml,
            library: library.map(OsStr::to_os_string),
        })
    }

    fn device(&self, index: u32) -> Result<Device<'_>, NvmlError> {
        self.nvml.device_by_index(index)
    }

    /// One GPU's live values; its slow ones ([`GpuSample::SLOW_METRICS`]) only when `full`.
    fn read_sample(&self, gpu: &GpuStatic, full: bool) -> GpuSample {
        match self.device(gpu.index) {
            Ok(dev) => sample_device(&dev, gpu, full),
            Err(NvmlError::GpuLost) => GpuSample::lost(),
            Err(e) => GpuSample {
                errors: vec![MetricError {
                    metric: "device",
                    message: e.to_string(),
                }],
                ..GpuSample::default()
            },
        }
    }

    fn read_static(&self, index: u32) -> Result<GpuStatic, NvmlError> {
        let dev = self.device(index)?;
        let ecc = dev.is_ecc_enabled().ok().map(|e| e.currently_enabled);
        Ok(GpuStatic {
            index,
            name: dev.name().unwrap_or_else(|_| "unknown GPU".into()),
            uuid: dev.uuid().unwrap_or_default(),
            pci_bus_id: dev.pci_info().map(|p| p.bus_id).unwrap_or_default(),
            compute_capability: dev
                .cuda_compute_capability()
                .ok()
                .map(|c| format!("{}.{}", c.major, c.minor)),
            architecture: dev.architecture().ok().map(|a| a.to_string()),
            memory_total_bytes: dev.memory_info().ok().map(|m| m.total),
            temp_slowdown_c: dev
                .temperature_threshold(TemperatureThreshold::Slowdown)
                .ok(),
            temp_shutdown_c: dev
                .temperature_threshold(TemperatureThreshold::Shutdown)
                .ok(),
            sm_clock_max_mhz: dev.max_clock_info(Clock::SM).ok(),
            mem_clock_max_mhz: dev.max_clock_info(Clock::Memory).ok(),
            pcie_gen_max: dev.max_pcie_link_gen().ok(),
            pcie_width_max: dev.max_pcie_link_width().ok(),
            fan_count: dev.num_fans().ok(),
            ecc_enabled: ecc,
            mig_enabled: dev.mig_mode().ok().map(|m| m.current == 1),
            persistence_mode: dev.is_in_persistent_mode().ok(),
        })
    }

    fn topology(&self, gpus: &[GpuStatic]) -> Topology {
        let by_bus: HashMap<String, usize> = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| (normalise_bus_id(&g.pci_bus_id), i))
            .collect();
        let ends: Vec<Vec<LinkEnd>> = gpus
            .iter()
            .map(|g| self.nvlink_ends(g.index, &by_bus))
            .collect();
        nvlinks::topology(gpus.len(), &ends, |a, b| {
            self.common_ancestor(gpus[a].index, gpus[b].index)
        })
    }

    fn common_ancestor(&self, a: u32, b: u32) -> TopoPath {
        let (Ok(da), Ok(db)) = (self.device(a), self.device(b)) else {
            return TopoPath::Unknown;
        };
        match da.topology_common_ancestor(db) {
            Ok(TopologyLevel::Internal) => TopoPath::Board,
            Ok(TopologyLevel::Single) => TopoPath::PcieSwitch,
            Ok(TopologyLevel::Multiple) => TopoPath::PcieSwitches,
            Ok(TopologyLevel::HostBridge) => TopoPath::HostBridge,
            Ok(TopologyLevel::Node) => TopoPath::NumaNode,
            Ok(TopologyLevel::System) => TopoPath::CrossSocket,
            Err(_) => TopoPath::Unknown,
        }
    }

    /// The far end of each active NVLink of GPU `index`: an NVSwitch, or another GPU matched
    /// by the remote PCI bus id. Links to anything else (an IBM NPU, an unknown device) are
    /// left out.
    fn nvlink_ends(&self, index: u32, by_bus: &HashMap<String, usize>) -> Vec<LinkEnd> {
        let mut ends = Vec::new();
        let Ok(dev) = self.device(index) else {
            return ends;
        };
        for link in active_links(&dev) {
            let wrapper = dev.link_wrapper_for(link);
            if remote_device_type(&dev, link).is_ok_and(|t| t == NVLINK_DEVICE_TYPE_SWITCH) {
                ends.push(LinkEnd::Switch);
                continue;
            }
            if let Ok(remote) = wrapper.remote_pci_info() {
                if let Some(&peer) = by_bus.get(&normalise_bus_id(&remote.bus_id)) {
                    ends.push(LinkEnd::Gpu(peer));
                }
            }
        }
        ends
    }
}

impl GpuSource for NvmlSource {
    fn inventory(&mut self) -> Result<Inventory, GpuError> {
        let count = self.nvml.device_count().map_err(runtime_error)?;
        let system = SystemInfo {
            source: SourceKind::Nvml,
            driver_version: self.nvml.sys_driver_version().ok(),
            nvml_version: self.nvml.sys_nvml_version().ok(),
            cuda_driver_version: self
                .nvml
                .sys_cuda_driver_version()
                .ok()
                .and_then(CudaVersion::from_nvml),
        };
        if count == 0 {
            return Err(GpuError::NoGpus {
                system: Some(Box::new(system)),
            });
        }
        let mut gpus = Vec::with_capacity(count as usize);
        for index in 0..count {
            match self.read_static(index) {
                Ok(gpu) => gpus.push(gpu),
                Err(e) => {
                    tracing::warn!(index, error = %e, "GPU could not be opened");
                    gpus.push(unreachable_gpu(index, &e));
                }
            }
        }
        let topology = self.topology(&gpus);
        Ok(Inventory {
            system,
            gpus,
            topology,
        })
    }

    fn sample(&mut self, gpu: &GpuStatic) -> GpuSample {
        self.read_sample(gpu, true)
    }

    fn sample_quick(&mut self, gpu: &GpuStatic) -> GpuSample {
        self.read_sample(gpu, false)
    }

    fn process_name(&mut self, pid: u32) -> Option<String> {
        self.nvml.sys_process_name(pid, 256).ok()
    }

    fn health(&mut self, gpu: &GpuStatic) -> HealthCounters {
        self.device(gpu.index)
            .map(|dev| health_counters(&dev))
            .unwrap_or_default()
    }

    fn xid_backend(&self) -> Option<XidBackend> {
        Some(super::xid_nvml::backend(self.library.clone()))
    }

    fn process_utilization(
        &mut self,
        gpu: &GpuStatic,
        since_us: u64,
    ) -> Option<Vec<ProcessUtilSample>> {
        let dev = self.device(gpu.index).ok()?;
        match dev.process_utilization_stats(since_us) {
            Ok(samples) => Some(
                samples
                    .into_iter()
                    .map(|s| ProcessUtilSample {
                        pid: s.pid,
                        timestamp_us: s.timestamp,
                        util: ProcessGpuUtil {
                            sm_pct: s.sm_util,
                            mem_pct: s.mem_util,
                            enc_pct: s.enc_util,
                            dec_pct: s.dec_util,
                        },
                    })
                    .collect(),
            ),
            // The driver keeps no sample newer than `since_us`: nothing ran since.
            Err(NvmlError::NotFound) => Some(Vec::new()),
            Err(e) => {
                tracing::debug!(index = gpu.index, error = %e, "no per-process utilisation");
                None
            }
        }
    }
}

/// Collects one metric, keeping "not supported" silent and any other failure visible.
struct Reader {
    sample: GpuSample,
}

impl Reader {
    fn read<T>(&mut self, metric: &'static str, result: Result<T, NvmlError>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => None,
            Err(NvmlError::GpuLost) => {
                self.sample.lost = true;
                None
            }
            Err(e) => {
                self.sample.errors.push(MetricError {
                    metric,
                    message: e.to_string(),
                });
                None
            }
        }
    }
}

fn sample_device(dev: &Device<'_>, gpu: &GpuStatic, full: bool) -> GpuSample {
    let mut r = Reader {
        sample: GpuSample::default(),
    };
    let util = r.read("utilization", dev.utilization_rates());
    let memory = r.read("memory", dev.memory_info());
    let temp = r.read("temperature", dev.temperature(TemperatureSensor::Gpu));
    let power = r.read("power", dev.power_usage());
    let limit = full
        .then(|| r.read("power limit", dev.enforced_power_limit()))
        .flatten();
    let sm = r.read("sm clock", dev.clock_info(Clock::SM));
    let mem_clock = r.read("memory clock", dev.clock_info(Clock::Memory));
    let fan = match gpu.fan_count {
        Some(n) if n > 0 => r.read("fan", dev.fan_speed(0)),
        _ => None,
    };
    let pstate = r.read("performance state", dev.performance_state());
    let pcie_gen = full
        .then(|| r.read("pcie generation", dev.current_pcie_link_gen()))
        .flatten();
    let pcie_width = full
        .then(|| r.read("pcie width", dev.current_pcie_link_width()))
        .flatten();
    let throttle = r.read("throttle reasons", dev.current_throttle_reasons());
    let memory_health = memory_health(&mut r, dev, full && gpu.ecc_enabled == Some(true));
    let compute = r.read("processes", dev.running_compute_processes());
    let graphics = r.read("graphics processes", dev.running_graphics_processes());
    let mut s = r.sample;
    s.util_gpu_pct = util.as_ref().map(|u| u.gpu);
    s.util_mem_pct = util.map(|u| u.memory);
    s.memory_used_bytes = memory.map(|m| m.used);
    s.temp_c = temp;
    s.power_w = power.map(|mw| f64::from(mw) / 1000.0);
    s.power_limit_w = limit.map(|mw| f64::from(mw) / 1000.0);
    s.sm_clock_mhz = sm;
    s.mem_clock_mhz = mem_clock;
    s.fan_pct = fan;
    s.pstate = pstate.map(|p| p.as_c()).filter(|&p| p < 16);
    s.pcie_gen = pcie_gen;
    s.pcie_width = pcie_width;
    s.throttle_reasons = throttle.map(|t| throttle_reason_names(t.bits()));
    (
        s.ecc_corrected,
        s.ecc_uncorrected,
        s.remapped_rows,
        s.retired_pages,
    ) = memory_health;
    s.processes = processes(gpu.index, compute, graphics);
    s
}

type MemoryHealth = (
    Option<u64>,
    Option<u64>,
    Option<RemappedRows>,
    Option<RetiredPages>,
);

/// ECC counters and memory repair state; none of it exists with ECC off. Every call costs
/// microseconds, and NOT_SUPPORTED (retired pages from Ampere on) is silent.
fn memory_health(r: &mut Reader, dev: &Device<'_>, ecc: bool) -> MemoryHealth {
    if !ecc {
        return (None, None, None, None);
    }
    (
        r.read(
            "ecc corrected",
            dev.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile),
        ),
        r.read(
            "ecc uncorrected",
            dev.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile),
        ),
        r.read("remapped rows", remapped_rows(dev)),
        r.read("retired pages", retired_pages(dev)),
    )
}

/// `nvmlIntNvLinkDeviceType_t` of an NVSwitch.
const NVLINK_DEVICE_TYPE_SWITCH: u32 = 2;

/// `nvmlDeviceGetNvLinkRemoteDeviceType` through the raw symbol: nvml-wrapper 0.13's
/// `remote_device_type` passes a temporary to NVML and so always answers `Unknown`.
#[allow(unsafe_code)]
fn remote_device_type(dev: &Device<'_>, link: u32) -> Result<u32, NvmlError> {
    let sym = nvml_sym(
        dev.nvml()
            .lib()
            .nvmlDeviceGetNvLinkRemoteDeviceType
            .as_ref(),
    )?;
    let mut kind = 0;
    // SAFETY: the handle belongs to a live `Device` of this library and the out-pointer is a
    // valid `nvmlIntNvLinkDeviceType_t` (a `c_uint`), which is all nvml.h asks of the caller.
    nvml_try(unsafe { sym(dev.handle(), link, &mut kind) })?;
    Ok(kind)
}

/// `nvmlDeviceGetRemappedRows` through the raw symbol: nvml-wrapper 0.13 does not wrap it.
#[allow(unsafe_code)]
fn remapped_rows(dev: &Device<'_>) -> Result<RemappedRows, NvmlError> {
    let sym = nvml_sym(dev.nvml().lib().nvmlDeviceGetRemappedRows.as_ref())?;
    let (mut corr, mut unc, mut pending, mut failure) = (0, 0, 0, 0);
    // SAFETY: the handle belongs to a live `Device` of this library, and the four out-pointers
    // are valid `c_uint`s, which is all nvml.h asks of the caller.
    nvml_try(unsafe {
        sym(
            dev.handle(),
            &mut corr,
            &mut unc,
            &mut pending,
            &mut failure,
        )
    })?;
    Ok(RemappedRows {
        correctable: corr,
        uncorrectable: unc,
        pending: pending != 0,
        failure: failure != 0,
    })
}

/// Retired page counts by cause and the pending flag; NOT_SUPPORTED from Ampere on.
fn retired_pages(dev: &Device<'_>) -> Result<RetiredPages, NvmlError> {
    let count = |cause| {
        dev.retired_pages(cause)
            .map(|pages| u32::try_from(pages.len()).unwrap_or(u32::MAX))
    };
    Ok(RetiredPages {
        single_bit_ecc: count(RetirementCause::MultipleSingleBitEccErrors)?,
        double_bit_ecc: count(RetirementCause::DoubleBitEccError)?,
        pending: dev.are_pages_pending_retired()?,
    })
}

/// The numbers of the GPU's active NVLinks. The first unsupported link means the GPU has no
/// NVLink at all (PCIe cards), so the walk stops there.
fn active_links(dev: &Device<'_>) -> Vec<u32> {
    let mut active = Vec::new();
    for link in 0..MAX_NVLINKS {
        match dev.link_wrapper_for(link).is_active() {
            Ok(true) => active.push(link),
            Ok(false) => {}
            Err(_) => break,
        }
    }
    active
}

/// Reads the health counters of one NVML device.
fn health_counters(dev: &Device<'_>) -> HealthCounters {
    let violation = |policy| known_counter(dev.violation_status(policy)).map(|v| v.violation_time);
    HealthCounters {
        pcie_replays: known_counter(dev.pcie_replay_counter()).map(u64::from),
        nvlink: nvlink_errors(dev),
        power_violation_ns: violation(PerformancePolicy::Power),
        thermal_violation_ns: violation(PerformancePolicy::Thermal),
    }
}

/// The error counters summed over the active links; None without NVLink.
fn nvlink_errors(dev: &Device<'_>) -> Option<NvLinkErrors> {
    let mut total: Option<NvLinkErrors> = None;
    for link in active_links(dev) {
        let wrapper = dev.link_wrapper_for(link);
        let read = |c| known_counter(wrapper.error_counter(c));
        let counts = (
            read(ErrorCounter::DlCrcFlit),
            read(ErrorCounter::DlCrcData),
            read(ErrorCounter::DlReplay),
            read(ErrorCounter::DlRecovery),
        );
        if let (Some(crc_flit), Some(crc_data), Some(replay), Some(recovery)) = counts {
            total.get_or_insert_default().add(&NvLinkErrors {
                crc_flit,
                crc_data,
                replay,
                recovery,
            });
        }
    }
    total
}

/// The value, or None: unsupported stays quiet, anything else is logged.
fn known_counter<T>(result: Result<T, NvmlError>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_) | NvmlError::GpuLost) => {
            None
        }
        Err(e) => {
            tracing::debug!(error = %e, "health counter unreadable");
            None
        }
    }
}

fn processes(
    gpu_index: u32,
    compute: Option<Vec<nvml_wrapper::struct_wrappers::device::ProcessInfo>>,
    graphics: Option<Vec<nvml_wrapper::struct_wrappers::device::ProcessInfo>>,
) -> Vec<GpuProcess> {
    use nvml_wrapper::enums::device::UsedGpuMemory;
    let tagged = compute
        .unwrap_or_default()
        .into_iter()
        .map(|p| (p, ProcessKind::Compute))
        .chain(
            graphics
                .unwrap_or_default()
                .into_iter()
                .map(|p| (p, ProcessKind::Graphics)),
        );
    let mut out: Vec<GpuProcess> = Vec::new();
    for (p, kind) in tagged {
        // A process with both contexts is listed by both calls; show it once.
        if out.iter().any(|o| o.pid == p.pid) {
            continue;
        }
        out.push(GpuProcess {
            gpu_index,
            pid: p.pid,
            kind,
            used_memory_bytes: match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            },
            user: None,
            command: None,
            container: None,
            identity: None,
            gpu_util: None,
            cpu_pct: None,
            host_memory_bytes: None,
        });
    }
    out
}

fn unreachable_gpu(index: u32, error: &NvmlError) -> GpuStatic {
    GpuStatic {
        index,
        name: format!("GPU {index} (unreachable: {error})"),
        uuid: String::new(),
        pci_bus_id: String::new(),
        ..Default::default()
    }
}

/// NVML writes bus ids with an 8- or 4-digit domain depending on the call; compare them without it.
fn normalise_bus_id(id: &str) -> String {
    let lower = id.to_ascii_lowercase();
    match lower.split_once(':') {
        Some((domain, rest)) if domain.len() >= 4 => {
            let domain = domain.trim_start_matches('0');
            format!("{domain}:{rest}")
        }
        _ => lower,
    }
}

fn init_error(e: NvmlError, library: Option<&OsStr>) -> GpuError {
    let library = library
        .map(|l| l.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_LIBRARY.to_string());
    match e {
        NvmlError::LibloadingError(detail) => GpuError::LibraryNotFound {
            library,
            detail: detail.to_string(),
        },
        NvmlError::LibraryNotFound => GpuError::LibraryNotFound {
            library,
            detail: "NVML reported that it could not find its library".into(),
        },
        NvmlError::FailedToLoadSymbol(sym) => GpuError::LibraryNotFound {
            library,
            detail: format!("it is not a usable NVML library (missing {sym})"),
        },
        other => runtime_error(other),
    }
}

fn runtime_error(e: NvmlError) -> GpuError {
    match e {
        NvmlError::DriverNotLoaded => GpuError::DriverNotLoaded,
        NvmlError::LibRmVersionMismatch => GpuError::VersionMismatch,
        NvmlError::NoPermission => GpuError::NoPermission,
        other => GpuError::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_compare_across_domain_widths() {
        assert_eq!(
            normalise_bus_id("00000000:18:00.0"),
            normalise_bus_id("0000:18:00.0")
        );
        assert_ne!(
            normalise_bus_id("00000000:18:00.0"),
            normalise_bus_id("00000000:19:00.0")
        );
    }

    #[test]
    fn a_missing_library_is_explained() {
        let err = NvmlSource::open(Some(OsStr::new("/nonexistent/libnvidia-ml.so.1")))
            .err()
            .map(|e| e.title());
        assert_eq!(err, Some("No NVIDIA driver found"));
    }
}
