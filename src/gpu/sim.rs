//! The demo GPU source: the simulation that also backs the NVML simulator library, used in-process.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use gpudeck_sim_model::{Metric, NvLinkRemote, SimSpec, Simulation, TopoLevel};

use super::nvlinks::{self, LinkEnd};
use super::source::{GpuError, GpuSource};
use super::types::{
    throttle_reason_names, CudaVersion, GpuProcess, GpuSample, GpuStatic, Inventory, ProcessKind,
    RemappedRows, SourceKind, SystemInfo, TopoPath, Topology,
};
use crate::host::{
    ContainerRef, ContainerRuntime, HostError, KillSignal, ProcFs, ProcessDetails, ProcessIdentity,
    ProcessTable, ProcessTarget,
};

/// Simulated GPUs; "killing" a simulated process removes it from later samples.
pub struct SimSource {
    sim: Arc<Simulation>,
    killed: Arc<Mutex<HashSet<u32>>>,
}

impl SimSource {
    pub fn new(spec: SimSpec) -> Self {
        Self {
            sim: Arc::new(Simulation::new(spec)),
            killed: Arc::default(),
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
            killed: Arc::clone(&self.killed),
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
        if n == 0 {
            return Err(GpuError::NoGpus);
        }
        let system = SystemInfo {
            source: SourceKind::Demo,
            driver_version: Some(spec.driver.clone()),
            nvml_version: Some(spec.nvml_version.clone()),
            cuda_driver_version: CudaVersion::from_nvml(spec.cuda),
        };
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
        let killed = self.killed.lock().unwrap_or_else(PoisonError::into_inner);
        let processes = if self.sim.is_supported(Metric::Processes) {
            self.sim
                .processes(gpu.index, t)
                .into_iter()
                .filter(|p| !killed.contains(&p.pid))
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
                })
                .collect()
        } else {
            Vec::new()
        };
        drop(killed);
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
}

/// A simulated process leads its own group and session and has been there since boot; its
/// owner is only known by name.
fn simulated_identity(pid: u32) -> ProcessIdentity {
    ProcessIdentity {
        start_ticks: 1,
        started_unix_ms: None,
        uid: None,
        pgid: pid,
        session: pid,
    }
}

/// Answers process questions for simulated PIDs from the simulation itself, and for real PIDs
/// placed on a simulated GPU (`pids=`) from /proc.
pub struct SimProcessTable {
    sim: Arc<Simulation>,
    killed: Arc<Mutex<HashSet<u32>>>,
    host: ProcFs,
}

impl SimProcessTable {
    fn simulated(&self, pid: u32) -> Option<gpudeck_sim_model::SimProcess> {
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
        Some(ProcessDetails {
            pid,
            user: Some(p.user),
            command: Some(p.name),
            container: p.container.map(|id| ContainerRef {
                runtime: ContainerRuntime::Docker,
                id,
            }),
            identity: Some(simulated_identity(pid)),
        })
    }

    fn signal_exact(&self, target: ProcessTarget, signal: KillSignal) -> Result<(), HostError> {
        if self.simulated(target.pid).is_none() {
            return self.host.signal_exact(target, signal);
        }
        if target.start_ticks != Some(simulated_identity(target.pid).start_ticks) {
            return Err(HostError::Replaced { pid: target.pid });
        }
        self.signal(target.pid, signal)
    }

    fn start_ticks(&self, pid: u32) -> Option<u64> {
        match self.simulated(pid) {
            Some(_) => Some(simulated_identity(pid).start_ticks),
            None => self.host.start_ticks(pid),
        }
    }

    fn signal(&self, pid: u32, signal: KillSignal) -> Result<(), HostError> {
        if self.simulated(pid).is_none() {
            return self.host.signal(pid, signal);
        }
        let mut killed = self.killed.lock().unwrap_or_else(PoisonError::into_inner);
        killed.insert(pid);
        Ok(())
    }
}
