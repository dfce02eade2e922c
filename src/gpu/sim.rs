//! The demo GPU source: the simulation that also backs the NVML simulator library, used in-process.

use std::sync::Arc;

use gpudeck_sim_model::{
    Metric, NvLinkRemote, SimProcess, SimSpec, Simulation, TopoLevel, Violation,
};

use super::counters::{HealthCounters, NvLinkErrors};
use super::nvlinks::{self, LinkEnd};
use super::source::{GpuError, GpuSource};
use super::types::{
    throttle_reason_names, CudaVersion, GpuProcess, GpuSample, GpuStatic, Inventory,
    ProcessGpuUtil, ProcessKind, ProcessUtilSample, RemappedRows, SourceKind, SystemInfo, TopoPath,
    Topology,
};
use super::xid_watch::XidBackend;
use crate::host::{
    ContainerRef, ContainerRuntime, HostError, KillSignal, ProcFs, ProcessDetails, ProcessIdentity,
    ProcessTable, ProcessTarget, ProcessUsage,
};

/// Simulated GPUs; killing a simulated process ends it in the simulation, which frees its
/// memory and its share of the GPU from then on.
pub struct SimSource {
    sim: Arc<Simulation>,
}

impl SimSource {
    pub fn new(spec: SimSpec) -> Self {
        Self {
            sim: Arc::new(Simulation::new(spec)),
        }
    }

    /// Reads the spec from `GPUDECK_SIM`, as the simulator library does.
    pub fn from_env() -> Result<Self, GpuError> {
        SimSpec::from_env()
            .map(Self::new)
            .map_err(GpuError::Simulation)
    }

    /// The process table that answers for simulated PIDs (which never exist on the host).
    pub fn process_table(&self) -> SimProcessTable {
        SimProcessTable {
            sim: Arc::clone(&self.sim),
            host: ProcFs::new(),
        }
    }

    fn supported<T>(&self, metric: Metric, value: T) -> Option<T> {
        self.sim.is_supported(metric).then_some(value)
    }

    fn topology(&self, n: u32) -> Topology {
        let nvlink = self.sim.is_supported(Metric::NvLink);
        let ends: Vec<Vec<LinkEnd>> = (0..n)
            .map(|a| {
                // A lost GPU answers no NVLink query, as through NVML.
                let links = if nvlink && !self.sim.is_lost(a) {
                    self.sim.nvlink_count()
                } else {
                    0
                };
                (0..links)
                    .filter_map(|l| match self.sim.nvlink_remote(a, l)? {
                        NvLinkRemote::Gpu(peer) => Some(LinkEnd::Gpu(peer as usize)),
                        NvLinkRemote::Switch(_) => Some(LinkEnd::Switch),
                    })
                    .collect()
            })
            .collect();
        nvlinks::topology(n as usize, &ends, |a, b| {
            let (a, b) = (a as u32, b as u32);
            // NVML cannot place a lost GPU either.
            if self.sim.is_lost(a) || self.sim.is_lost(b) {
                TopoPath::Unknown
            } else {
                topo_path(self.sim.topology(a, b))
            }
        })
    }
}

fn topo_path(level: TopoLevel) -> TopoPath {
    match level {
        TopoLevel::Internal => TopoPath::Board,
        TopoLevel::Single => TopoPath::PcieSwitch,
        TopoLevel::Multiple => TopoPath::PcieSwitches,
        TopoLevel::HostBridge => TopoPath::HostBridge,
        TopoLevel::Node => TopoPath::NumaNode,
        TopoLevel::System => TopoPath::CrossSocket,
    }
}

impl GpuSource for SimSource {
    fn inventory(&mut self) -> Result<Inventory, GpuError> {
        let spec = self.sim.spec();
        if let Some(failure) = &spec.init_failure {
            return Err(match failure {
                gpudeck_sim_model::InitFailure::DriverNotLoaded => GpuError::DriverNotLoaded,
                gpudeck_sim_model::InitFailure::LibRmVersionMismatch => GpuError::VersionMismatch,
                gpudeck_sim_model::InitFailure::NoPermission => GpuError::NoPermission,
            });
        }
        let n = self.sim.device_count();
        let system = SystemInfo {
            source: SourceKind::Demo,
            driver_version: Some(spec.driver.clone()),
            nvml_version: Some(spec.nvml_version.clone()),
            cuda_driver_version: CudaVersion::from_nvml(spec.cuda),
        };
        if n == 0 {
            return Err(GpuError::NoGpus {
                system: Some(Box::new(system)),
            });
        }
        let gpus = (0..n)
            .filter_map(|i| self.sim.device(i).map(|d| (i, d)))
            .map(|(i, d)| GpuStatic {
                index: i,
                name: d.name.clone(),
                uuid: d.uuid.clone(),
                pci_bus_id: d.pci_bus_id.clone(),
                compute_capability: Some(format!(
                    "{}.{}",
                    d.compute_capability.0, d.compute_capability.1
                )),
                architecture: Some(d.architecture.clone()),
                memory_total_bytes: Some(d.memory_total_bytes),
                temp_slowdown_c: self.supported(Metric::Temperature, d.temp_slowdown_c),
                temp_shutdown_c: self.supported(Metric::Temperature, d.temp_shutdown_c),
                sm_clock_max_mhz: self.supported(Metric::Clocks, d.max_sm_clock_mhz),
                mem_clock_max_mhz: self.supported(Metric::Clocks, d.max_mem_clock_mhz),
                pcie_gen_max: self.supported(Metric::Pcie, d.pcie_max_gen),
                pcie_width_max: self.supported(Metric::Pcie, d.pcie_max_width),
                // Fanless boards report zero fans rather than "not supported", as real NVML does.
                fan_count: (!spec.unsupported.contains(&Metric::Fan)).then_some(d.num_fans),
                ecc_enabled: self.supported(Metric::Ecc, d.ecc_enabled),
                mig_enabled: self.supported(Metric::Mig, d.mig_enabled),
                persistence_mode: self.supported(Metric::Persistence, d.persistence),
            })
            .collect();
        Ok(Inventory {
            system,
            gpus,
            topology: self.topology(n),
        })
    }

    fn sample(&mut self, gpu: &GpuStatic) -> GpuSample {
        if self.sim.is_lost(gpu.index) {
            return GpuSample::lost();
        }
        let t = self.sim.now();
        let s = self.sim.sample(gpu.index, t);
        let processes = if self.sim.is_supported(Metric::Processes) {
            self.sim
                .processes(gpu.index, t)
                .into_iter()
                .map(|p| GpuProcess {
                    gpu_index: gpu.index,
                    pid: p.pid,
                    kind: if p.graphics {
                        ProcessKind::Graphics
                    } else {
                        ProcessKind::Compute
                    },
                    used_memory_bytes: Some(p.used_memory_bytes),
                    user: None,
                    command: None,
                    container: None,
                    identity: None,
                    gpu_util: None,
                    cpu_pct: None,
                    host_memory_bytes: None,
                })
                .collect()
        } else {
            Vec::new()
        };
        let util = self.sim.is_supported(Metric::Utilization);
        let power = self.sim.is_supported(Metric::Power);
        let clocks = self.sim.is_supported(Metric::Clocks);
        let pcie = self.sim.is_supported(Metric::Pcie);
        let ecc = gpu.ecc_enabled == Some(true);
        GpuSample {
            lost: false,
            util_gpu_pct: util.then_some(s.util_gpu),
            util_mem_pct: util.then_some(s.util_mem),
            memory_used_bytes: Some(s.mem_used_bytes),
            temp_c: self.supported(Metric::Temperature, s.temp_c),
            power_w: power.then_some(f64::from(s.power_mw) / 1000.0),
            power_limit_w: self
                .sim
                .device(gpu.index)
                .filter(|_| power)
                .map(|d| f64::from(d.power_limit_mw) / 1000.0),
            sm_clock_mhz: clocks.then_some(s.sm_clock_mhz),
            mem_clock_mhz: clocks.then_some(s.mem_clock_mhz),
            fan_pct: gpu.fan_count.filter(|&n| n > 0).map(|_| s.fan_percent),
            pstate: self.supported(Metric::Pstate, s.pstate),
            pcie_gen: pcie.then_some(s.pcie_gen),
            pcie_width: pcie.then_some(s.pcie_width),
            throttle_reasons: self
                .supported(Metric::Throttle, s.throttle_reasons)
                .map(throttle_reason_names),
            ecc_corrected: ecc.then_some(s.ecc_corrected),
            ecc_uncorrected: ecc.then_some(s.ecc_uncorrected),
            remapped_rows: ecc.then(|| {
                let r = self.sim.remapped_rows(gpu.index);
                RemappedRows {
                    correctable: r.correctable,
                    uncorrectable: r.uncorrectable,
                    pending: r.pending,
                    failure: r.failure,
                }
            }),
            // Every simulated board is Ampere or later (or GeForce): page retirement is NOT_SUPPORTED.
            retired_pages: None,
            health: HealthCounters::default(),
            processes,
            errors: Vec::new(),
        }
    }

    fn process_name(&mut self, pid: u32) -> Option<String> {
        let t = self.sim.now();
        (0..self.sim.device_count())
            .flat_map(|i| self.sim.processes(i, t))
            .find(|p| p.pid == pid && !p.name.is_empty())
            .map(|p| p.name)
    }

    /// The simulation's shares, stamped with its current second as the NVML simulator
    /// library stamps them, so both faces of the demo agree.
    fn process_utilization(
        &mut self,
        gpu: &GpuStatic,
        since_us: u64,
    ) -> Option<Vec<ProcessUtilSample>> {
        if !self.sim.is_supported(Metric::Utilization) || self.sim.is_lost(gpu.index) {
            return None;
        }
        let t = self.sim.now();
        let stamp = self.sim.start_unix_micros() + (t.max(0.0).floor() as u64) * 1_000_000;
        if stamp <= since_us {
            return Some(Vec::new());
        }
        let samples = self
            .sim
            .process_utilization(gpu.index, t)
            .into_iter()
            .map(|u| ProcessUtilSample {
                pid: u.pid,
                timestamp_us: stamp,
                util: ProcessGpuUtil {
                    sm_pct: u.sm,
                    mem_pct: u.mem,
                    enc_pct: u.enc,
                    dec_pct: u.dec,
                },
            })
            .collect();
        Some(samples)
    }

    fn health(&mut self, gpu: &GpuStatic) -> HealthCounters {
        let (sim, i) = (&self.sim, gpu.index);
        if sim.is_lost(i) {
            return HealthCounters::default();
        }
        let t = sim.now();
        let nvlink = sim.is_supported(Metric::NvLink).then(|| {
            let mut total = NvLinkErrors::default();
            for e in (0..sim.nvlink_count()).filter_map(|l| sim.nvlink_errors(i, l, t)) {
                total.add(&NvLinkErrors {
                    crc_flit: e.crc_flit,
                    crc_data: e.crc_data,
                    replay: e.replay,
                    recovery: e.recovery,
                });
            }
            total
        });
        // As the library: violation status is for datacenter boards only.
        let datacenter = sim.device(i).is_some_and(|d| d.datacenter);
        let violation = |v| {
            (datacenter && sim.is_supported(Metric::Throttle)).then(|| sim.violation_ns(i, v, t))
        };
        HealthCounters {
            pcie_replays: self.supported(Metric::Pcie, sim.pcie_replays(i)),
            nvlink,
            power_violation_ns: violation(Violation::Power),
            thermal_violation_ns: violation(Violation::Thermal),
        }
    }

    fn xid_backend(&self) -> Option<XidBackend> {
        Some(super::xid_sim::backend(Arc::clone(&self.sim)))
    }
}

/// A simulated process leads its own group and session; it started when the simulation says
/// (the jobs with the demo, the desktop days before), and its owner is only known by name.
fn simulated_identity(sim: &Simulation, p: &SimProcess) -> ProcessIdentity {
    let started_ms = (sim.start_unix_micros() / 1000) as i64 + p.started_s * 1000;
    let started_ms = u64::try_from(started_ms).unwrap_or(0);
    ProcessIdentity {
        // Hundredths of a second like USER_HZ, counted from the epoch rather than boot: the
        // value only has to name this process for the demo's life.
        start_ticks: started_ms / 10,
        started_unix_ms: Some(started_ms),
        uid: None,
        pgid: p.pid,
        session: p.pid,
    }
}

/// A steady, plausible load for a simulated process: a training job keeps a few dataloader
/// cores busy and holds tens of GiB, the desktop next to nothing.
fn simulated_usage(sim: &Simulation, p: &SimProcess) -> ProcessUsage {
    let spread = f64::from(p.pid.wrapping_mul(2_654_435_761) % 1000) / 1000.0;
    let (cores, rss_mib) = if p.graphics {
        (0.01 + 0.04 * spread, 180.0 + 220.0 * spread)
    } else {
        (0.9 + 2.6 * spread, 2048.0 + 22_528.0 * spread)
    };
    let alive_s = (sim.now() - p.started_s as f64).max(0.0);
    ProcessUsage {
        cpu_seconds: alive_s * cores,
        rss_bytes: Some((rss_mib * 1024.0 * 1024.0) as u64),
    }
}

/// Answers process questions for simulated PIDs from the simulation itself, and for real PIDs
/// placed on a simulated GPU (`pids=`) from /proc. A kill of a simulated PID is a request to
/// the simulation and never a signal: no host process can have such a PID (they start above
/// Linux's largest pid_max), and a real PID is signalled through the host's own checks.
pub struct SimProcessTable {
    sim: Arc<Simulation>,
    host: ProcFs,
}

impl SimProcessTable {
    fn simulated(&self, pid: u32) -> Option<SimProcess> {
        let t = self.sim.now();
        (0..self.sim.device_count())
            .flat_map(|i| self.sim.processes(i, t))
            .find(|p| p.pid == pid && !p.name.is_empty())
    }
}

impl ProcessTable for SimProcessTable {
    fn describe(&self, pid: u32) -> Option<ProcessDetails> {
        let Some(p) = self.simulated(pid) else {
            return self.host.describe(pid);
        };
        let identity = simulated_identity(&self.sim, &p);
        Some(ProcessDetails {
            pid,
            user: Some(p.user),
            command: Some(p.name),
            container: p.container.map(|id| ContainerRef {
                // Marked, so no view takes it for one the engine has.
                runtime: ContainerRuntime::Simulated,
                id,
            }),
            identity: Some(identity),
        })
    }

    fn usage(&self, pid: u32) -> Option<ProcessUsage> {
        match self.simulated(pid) {
            Some(p) => Some(simulated_usage(&self.sim, &p)),
            None => self.host.usage(pid),
        }
    }

    fn signal_exact(&self, target: ProcessTarget, signal: KillSignal) -> Result<(), HostError> {
        let Some(p) = self.simulated(target.pid) else {
            return self.host.signal_exact(target, signal);
        };
        if target.start_ticks != Some(simulated_identity(&self.sim, &p).start_ticks) {
            return Err(HostError::Replaced { pid: target.pid });
        }
        self.signal(target.pid, signal)
    }

    fn start_ticks(&self, pid: u32) -> Option<u64> {
        match self.simulated(pid) {
            Some(p) => Some(simulated_identity(&self.sim, &p).start_ticks),
            None => self.host.start_ticks(pid),
        }
    }

    fn signal(&self, pid: u32, signal: KillSignal) -> Result<(), HostError> {
        if self.simulated(pid).is_none() {
            return self.host.signal(pid, signal);
        }
        // SIGTERM and SIGKILL alike: a simulated process never ignores the request.
        if self.sim.end_process(pid) {
            Ok(())
        } else {
            Err(HostError::Exited { pid })
        }
    }
}
