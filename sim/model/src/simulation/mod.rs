//! The simulation: a spec turned into devices, and the clock-driven queries over them.

mod instances;

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::device::SimDevice;
use crate::hash::{hash, tag};
use crate::health::{
    remap_forced_by, SimNvLinkErrors, SimXid, Violation, NVLINK_BURST, XID_FALLEN_OFF_BUS,
    XID_NVLINK,
};
use crate::knobs::{Metric, Remap, Throttle};
use crate::mig::{instance_memory_used, instance_processes, SimMig};
use crate::process::{processes, shares, under_mps, SimProcess, SimProcessUtil, SIM_PID_BASE};
use crate::profile::{facts, Facts};
use crate::sample::{power_w, sample, Gpu, SimRemappedRows, SimSample};
use crate::spec::SimSpec;
use crate::topology::{
    common_ancestor, cpu_affinity, nvlink_remote, NvLinkRemote, TopoLevel, BRIDGE_LINKS,
};
use crate::workload::{roles, Role};

/// Seconds integrated exactly for the energy counter; beyond that it grows at the average rate.
const EXACT_ENERGY_S: i64 = 7 * 24 * 3600;

/// NVLinks per GPU of `spec`: the bridge connectors' when bridges are given, else the profile's.
fn nvlink_count(spec: &SimSpec) -> u32 {
    if spec.bridges.is_empty() {
        facts(spec.profile).nvlinks
    } else {
        BRIDGE_LINKS
    }
}

/// A running simulation. Every reading is a pure function of the spec, the GPU index and the
/// whole second of `t`, and of the processes ended so far; the other state is a cache that
/// makes the energy counter cheap.
#[derive(Debug)]
pub struct Simulation {
    spec: SimSpec,
    devices: Vec<SimDevice>,
    roles: Vec<Role>,
    /// Per GPU: its MIG state (None on boards without MIG).
    migs: Vec<Option<SimMig>>,
    start: Instant,
    start_unix_us: u64,
    /// The `xid=` errors in time order.
    xids: Vec<SimXid>,
    /// Per GPU: the second reached, and up to it the energy in mJ and the seconds spent at
    /// the power cap.
    energy: Mutex<Vec<Integral>>,
    /// Simulated processes that were killed: gone from every list, their memory and share of
    /// the utilisation freed.
    ended: Mutex<HashSet<u32>>,
}

impl Simulation {
    /// Build the devices of `spec`; the clock starts now.
    pub fn new(spec: SimSpec) -> Simulation {
        let links = nvlink_count(&spec);
        let devices: Vec<SimDevice> = (0..spec.gpus)
            .map(|i| SimDevice {
                nvlink_count: links,
                mig_enabled: spec.mig_of(i).is_some(),
                ..SimDevice::build(i, spec.gpus, spec.seed, spec.profile)
            })
            .collect();
        let migs = devices.iter().map(|d| SimMig::build(&spec, d)).collect();
        let start_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let mut xids = spec.xids.clone();
        xids.sort_by(|a, b| a.at.total_cmp(&b.at));
        Simulation {
            roles: roles(spec.gpus),
            migs,
            energy: Mutex::new(vec![Integral::default(); spec.gpus as usize]),
            xids,
            spec,
            devices,
            start: Instant::now(),
            start_unix_us,
            ended: Mutex::default(),
        }
    }

    /// The spec this simulation was built from.
    pub fn spec(&self) -> &SimSpec {
        &self.spec
    }

    /// Seconds since `new()`, or the frozen time.
    pub fn now(&self) -> f64 {
        self.spec
            .frozen
            .unwrap_or_else(|| self.start.elapsed().as_secs_f64())
    }

    /// Wall-clock time of `t = 0`, in microseconds since the Unix epoch (for NVML timestamps).
    pub fn start_unix_micros(&self) -> u64 {
        self.start_unix_us
    }

    /// Number of GPUs.
    pub fn device_count(&self) -> u32 {
        self.spec.gpus
    }

    /// Static facts of GPU `index`.
    pub fn device(&self, index: u32) -> Option<&SimDevice> {
        self.devices.get(index as usize)
    }

    /// What GPU `index` runs: a training rank, the shared GPU, the container, or nothing.
    pub fn role(&self, index: u32) -> Option<Role> {
        self.roles.get(index as usize).copied()
    }

    /// Dynamic readings of GPU `index` at `t` seconds (only the whole second matters).
    /// An unknown index gives an all-zero sample.
    pub fn sample(&self, index: u32, t: f64) -> SimSample {
        let Some(gpu) = self.gpu(index, t) else {
            return SimSample::default();
        };
        let s = second(t);
        let all = self.all_processes(index, t);
        let live = self.without_ended(all.clone());
        let mut out = sample(&gpu, s, &live, self.integral(&gpu, s).energy_mj);
        if let Some(mig) = gpu.mig {
            out.mem_used_bytes = mig
                .instances
                .iter()
                .map(|inst| instance_memory_used(inst, &self.on_instance(&live, inst)))
                .sum();
        } else if live.len() < all.len() {
            // What the killed processes ran is no longer running.
            let left = |util| live_share(&all, &live, util);
            out.util_gpu = left(out.util_gpu);
            out.util_mem = left(out.util_mem);
        }
        out
    }

    /// Each live process's share of GPU `index` at `t`, as `nvmlDeviceGetProcessUtilization`
    /// reports it; the encoder and decoder are never used.
    /// Empty under MIG, where NVML keeps no per-process samples.
    pub fn process_utilization(&self, index: u32, t: f64) -> Vec<SimProcessUtil> {
        if self.mig_on(index).is_some() {
            return Vec::new();
        }
        let all = self.all_processes(index, t);
        let live = self.without_ended(all.clone());
        let Some(gpu) = self.gpu(index, t) else {
            return Vec::new();
        };
        let s = second(t);
        let full = sample(&gpu, s, &all, 0);
        let sm = shares(&all, full.util_gpu);
        let mem = shares(&all, full.util_mem);
        all.iter()
            .zip(sm.into_iter().zip(mem))
            .filter(|(p, _)| live.iter().any(|l| l.pid == p.pid))
            .map(|(p, (sm, mem))| SimProcessUtil {
                pid: p.pid,
                sm,
                mem,
                enc: 0,
                dec: 0,
            })
            .collect()
    }

    /// Ends simulated process `pid` as a kill would: it leaves every list and frees its memory
    /// and its share of the GPU. False for a pid the simulation does not run (real processes
    /// placed with `pids=` are the host's to end).
    pub fn end_process(&self, pid: u32) -> bool {
        if pid < SIM_PID_BASE {
            return false;
        }
        let t = self.now();
        let running =
            (0..self.device_count()).any(|i| self.processes(i, t).iter().any(|p| p.pid == pid));
        if running {
            self.ended
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(pid);
        }
        running
    }

    fn without_ended(&self, mut procs: Vec<SimProcess>) -> Vec<SimProcess> {
        let ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        if !ended.is_empty() {
            procs.retain(|p| !ended.contains(&p.pid));
        }
        procs
    }

    /// The row remapper's counters of GPU `index` now (from `ecc=`, `remap=` and the
    /// memory Xids raised so far: 48/94/95 leave a row pending, 63 too, 64 a failure).
    pub fn remapped_rows(&self, index: u32) -> SimRemappedRows {
        let t = self.now();
        let (_, uncorrected) = self.ecc_at(index, t);
        let raised: Vec<SimXid> = self.raised(index, t).copied().collect();
        let forced = match (remap_forced_by(&raised), self.spec.remap_of(index)) {
            (Some(Remap::Failed), _) | (_, Some(Remap::Failed)) => Some(Remap::Failed),
            (Some(state), _) => Some(state),
            (None, _) if raised.iter().any(SimXid::is_uncorrectable_ecc) => Some(Remap::Pending),
            (None, spec) => spec,
        };
        SimRemappedRows::of(uncorrected, forced)
    }

    /// Every `xid=` error, in time order.
    pub fn xids(&self) -> &[SimXid] {
        &self.xids
    }

    /// The Xids GPU `index` has raised by `t`, in time order.
    pub fn raised(&self, index: u32, t: f64) -> impl Iterator<Item = &SimXid> {
        self.xids
            .iter()
            .filter(move |x| x.gpu == index && x.at <= t)
    }

    /// The (corrected, uncorrected) volatile ECC counts of `index` at `t`: the `ecc=` counts
    /// plus one uncorrected error per memory Xid (48, 94, 95) raised by then.
    pub fn ecc_at(&self, index: u32, t: f64) -> (u64, u64) {
        let (corrected, uncorrected) = self.spec.ecc_of(index);
        let from_xids = self
            .raised(index, t)
            .filter(|x| x.is_uncorrectable_ecc())
            .count() as u64;
        (corrected, uncorrected + from_xids)
    }

    /// PCIe replays of GPU `index` since the driver loaded (`replay=`).
    pub fn pcie_replays(&self, index: u32) -> u64 {
        self.spec.replays_of(index)
    }

    /// The error counters of NVLink `link` of GPU `index` at `t`: zero on a healthy link;
    /// each Xid 74 adds a burst of CRC errors, replays and a recovery to one active link of
    /// the GPU (the next one, round the links, from a seeded start). None when the link is
    /// inactive.
    pub fn nvlink_errors(&self, index: u32, link: u32, t: f64) -> Option<SimNvLinkErrors> {
        self.nvlink_remote(index, link)?;
        let active: Vec<u32> = (0..self.nvlink_count())
            .filter(|l| self.nvlink_remote(index, *l).is_some())
            .collect();
        let start = hash(self.spec.seed, &[tag::NVLINK_ERRORS, u64::from(index)]) as usize;
        let mut errors = SimNvLinkErrors::default();
        let hits = self.raised(index, t).filter(|x| x.xid == XID_NVLINK);
        for (k, _) in hits.enumerate() {
            if active.get((start + k) % active.len()) == Some(&link) {
                errors.add(NVLINK_BURST);
            }
        }
        Some(errors)
    }

    /// Nanoseconds GPU `index` spent in `violation` from 0 to `t`: at the power cap (whole
    /// seconds whose power reading is capped, as with `throttle=N:power`), or held down by
    /// temperature (every second of a `thermal` or `sw-slowdown` throttle).
    pub fn violation_ns(&self, index: u32, violation: Violation, t: f64) -> u64 {
        let s = second(t);
        let seconds = match violation {
            Violation::Power => self
                .gpu(index, t)
                .map_or(0, |g| self.integral(&g, s).capped_s),
            Violation::Thermal => match self.spec.throttle_of(index) {
                Some(Throttle::Thermal | Throttle::SwSlowdown) => s as u64,
                _ => 0,
            },
        };
        seconds.saturating_mul(1_000_000_000)
    }

    /// Processes on GPU `index` at `t` seconds, `pids=` ones last; ended ones are gone.
    pub fn processes(&self, index: u32, t: f64) -> Vec<SimProcess> {
        self.without_ended(self.all_processes(index, t))
    }

    /// The processes the workload runs on GPU `index` at `t`, ended or not: its job's, or
    /// those of its MIG instances (`pids=` ones in the first), or an MPS server's clients.
    fn all_processes(&self, index: u32, t: f64) -> Vec<SimProcess> {
        let (Some(device), Some(role)) = (self.device(index), self.role(index)) else {
            return Vec::new();
        };
        let extra: Vec<u32> = self
            .spec
            .pids
            .iter()
            .filter(|(gpu, _)| *gpu == index)
            .map(|(_, pid)| *pid)
            .collect();
        let (seed, s) = (self.spec.seed, second(t));
        if let Some(mig) = self.mig_on(index) {
            return mig
                .instances
                .iter()
                .flat_map(|inst| {
                    let extra = if inst.index == 0 { &extra[..] } else { &[] };
                    instance_processes(seed, device, inst, s, extra)
                })
                .collect();
        }
        let procs = processes(seed, device, role, s, &extra);
        if self.spec.runs_mps(index) {
            under_mps(seed, procs)
        } else {
            procs
        }
    }

    /// Closest common PCIe ancestor of GPUs `a` and `b`.
    pub fn topology(&self, a: u32, b: u32) -> TopoLevel {
        common_ancestor(a, b, self.spec.gpus, self.facts())
    }

    /// What is at the far end of NVLink `link` of GPU `index` (another GPU or an NVSwitch);
    /// None when the link is inactive.
    pub fn nvlink_remote(&self, index: u32, link: u32) -> Option<NvLinkRemote> {
        nvlink_remote(
            index,
            link,
            self.spec.gpus,
            self.facts(),
            &self.spec.bridges,
        )
    }

    /// NVLinks per GPU: 18 on H100 SXM, 12 on PCIe cards given NVLink bridges (`bridge=`),
    /// 0 on other PCIe and GeForce boards.
    pub fn nvlink_count(&self) -> u32 {
        nvlink_count(&self.spec)
    }

    /// Host CPUs close to GPU `index` (its socket's cores and their SMT siblings).
    pub fn cpu_affinity(&self, index: u32) -> Vec<u32> {
        cpu_affinity(index, self.spec.gpus, self.facts())
    }

    /// False when the spec marks `m` unsupported or the profile lacks it (no fans on SXM/PCIe
    /// datacenter boards, no ECC or MIG on GeForce, no NVLink on PCIe boards).
    pub fn is_supported(&self, m: Metric) -> bool {
        let f = self.facts();
        let profile_has = match m {
            Metric::Fan => f.fans > 0,
            Metric::Ecc => f.ecc,
            Metric::Mig => f.mig_capable,
            Metric::NvLink => self.nvlink_count() > 0,
            _ => true,
        };
        profile_has && !self.spec.unsupported.contains(&m)
    }

    /// GPU `index` has fallen off the bus: `lost=`, or an Xid 79 raised by now.
    pub fn is_lost(&self, index: u32) -> bool {
        self.spec.lost.contains(&index)
            || self
                .raised(index, self.now())
                .any(|x| x.xid == XID_FALLEN_OFF_BUS)
    }

    fn facts(&self) -> &'static Facts {
        facts(self.spec.profile)
    }

    fn gpu(&self, index: u32, t: f64) -> Option<Gpu<'_>> {
        Some(Gpu {
            seed: self.spec.seed,
            device: self.device(index)?,
            role: self.role(index)?,
            throttle: self.spec.throttle_of(index),
            downgraded: self.spec.is_downgraded(index),
            ecc: self.ecc_at(index, t),
            mig: self.mig_on(index),
        })
    }

    /// Energy and power-capped seconds from second 0 to `s`: the sum over every whole
    /// second of the reported power and of whether it was capped.
    fn integral(&self, gpu: &Gpu, s: i64) -> Integral {
        let exact_to = s.min(EXACT_ENERGY_S);
        let mut cache = self.energy.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = cache.get_mut(gpu.device.index as usize) else {
            return Integral::default();
        };
        if exact_to < entry.second {
            *entry = Integral::default();
        }
        while entry.second < exact_to {
            let (watts, capped) = power_w(gpu, entry.second);
            entry.energy_mj += (watts * 1000.0).round() as u64;
            entry.capped_s += u64::from(capped);
            entry.second += 1;
        }
        let exact = *entry;
        if s > EXACT_ENERGY_S {
            let beyond = |v: u64| {
                v + (v as f64 / EXACT_ENERGY_S as f64 * (s - EXACT_ENERGY_S) as f64) as u64
            };
            Integral {
                second: s,
                energy_mj: beyond(exact.energy_mj),
                capped_s: beyond(exact.capped_s),
            }
        } else {
            exact
        }
    }
}

/// Sums over the whole seconds of one GPU, cached so each second is computed once.
#[derive(Debug, Clone, Copy, Default)]
struct Integral {
    second: i64,
    energy_mj: u64,
    capped_s: u64,
}

/// What is left of a GPU-wide utilisation when only `live` of `all` still run.
fn live_share(all: &[SimProcess], live: &[SimProcess], util: u32) -> u32 {
    all.iter()
        .zip(shares(all, util))
        .filter(|(p, _)| live.iter().any(|l| l.pid == p.pid))
        .map(|(_, share)| share)
        .sum()
}

/// The whole second of `t`; NaN and negative times count as second 0.
fn second(t: f64) -> i64 {
    if t.is_finite() && t > 0.0 {
        t.floor().min(i64::MAX as f64 / 2.0) as i64
    } else {
        0
    }
}
