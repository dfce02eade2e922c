//! Dynamic readings of one GPU at one second: utilisation, memory, power, heat, clocks, PCIe.

use crate::device::SimDevice;
use crate::hash::{range, tag};
use crate::knobs::{reason, Remap, Throttle};
use crate::mig::{gpu_activity, SimMig};
use crate::process::SimProcess;
use crate::profile::{facts, MIB};
use crate::workload::{activity, Activity, Phase, Role};

/// What NVML's dynamic queries return for one GPU at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimSample {
    /// What the GPU's job is doing (not an NVML value; handy for the demo and tests).
    pub phase: Phase,
    /// SM busy percent.
    pub util_gpu: u32,
    /// Memory-bus busy percent.
    pub util_mem: u32,
    /// Memory used by contexts (NVML memory info v2 `used`, excluding `reserved`).
    pub mem_used_bytes: u64,
    pub mem_reserved_bytes: u64,
    pub temp_c: u32,
    pub power_mw: u32,
    /// SM (and graphics) clock.
    pub sm_clock_mhz: u32,
    pub mem_clock_mhz: u32,
    pub video_clock_mhz: u32,
    /// Percent of max fan speed; 0 on fanless boards.
    pub fan_percent: u32,
    /// Performance state 0..15.
    pub pstate: u32,
    pub pcie_gen: u32,
    pub pcie_width: u32,
    pub pcie_tx_kbps: u32,
    pub pcie_rx_kbps: u32,
    /// NVML clocks-event (throttle) reason bitmask.
    pub throttle_reasons: u64,
    pub ecc_corrected: u64,
    pub ecc_uncorrected: u64,
    /// Energy used since the simulation started, in millijoules.
    pub energy_mj: u64,
}

impl SimSample {
    /// Free memory given the device's total (NVML memory info v2 `free`).
    pub fn mem_free_bytes(&self, total: u64) -> u64 {
        total.saturating_sub(self.mem_reserved_bytes + self.mem_used_bytes)
    }
}

/// What `nvmlDeviceGetRemappedRows` returns for one GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimRemappedRows {
    /// Rows remapped because of correctable errors.
    pub correctable: u32,
    /// Rows remapped because of uncorrectable errors.
    pub uncorrectable: u32,
    /// A remapping waits for the next GPU reset.
    pub pending: bool,
    /// A remapping failed (no spare row left in the bank).
    pub failure: bool,
}

impl SimRemappedRows {
    /// Without a `remap=` knob each uncorrectable error remaps one row, pending until a reset;
    /// the knob forces a state on top of that (at least one row is involved in any state).
    pub(crate) fn of(uncorrected_ecc: u64, forced: Option<Remap>) -> Self {
        let rows = uncorrected_ecc.min(u64::from(u32::MAX)) as u32;
        let base = SimRemappedRows {
            correctable: 0,
            uncorrectable: rows,
            pending: rows > 0,
            failure: false,
        };
        match forced {
            None => base,
            Some(state) => SimRemappedRows {
                uncorrectable: rows.max(1),
                pending: state == Remap::Pending,
                failure: state == Remap::Failed,
                ..base
            },
        }
    }
}

/// Everything `sample` needs to know about one GPU.
pub(crate) struct Gpu<'a> {
    pub seed: u64,
    pub device: &'a SimDevice,
    pub role: Role,
    pub throttle: Option<Throttle>,
    pub downgraded: bool,
    pub ecc: (u64, u64),
    /// The GPU's MIG layout while MIG mode is on: its instances set the load.
    pub mig: Option<&'a SimMig>,
}

impl Gpu<'_> {
    /// How busy the GPU is at second `s`: its job's activity, or its MIG instances' together.
    pub(crate) fn activity(&self, s: i64) -> Activity {
        match self.mig {
            Some(mig) => gpu_activity(self.seed, self.device.index, mig, s),
            None => activity(self.seed, self.device.index, self.role, s),
        }
    }
}

/// Board power in watts at second `s`, and whether the board is power-capped.
pub(crate) fn power_w(gpu: &Gpu, s: i64) -> (f64, bool) {
    power_of(gpu, &gpu.activity(s), s)
}

fn power_of(gpu: &Gpu, act: &Activity, s: i64) -> (f64, bool) {
    let f = facts(gpu.device.profile);
    let limit = f64::from(gpu.device.power_limit_mw) / 1000.0;
    let r = |lo: f64, hi: f64| {
        range(
            gpu.seed,
            &[tag::POWER, u64::from(gpu.device.index), s as u64],
            lo,
            hi,
        )
    };
    let capped_w = limit * r(0.984, 0.998);
    match gpu.throttle {
        Some(Throttle::Power) => return (capped_w, true),
        Some(Throttle::Thermal) if act.active => return (limit * 0.55 * act.util.max(0.2), false),
        _ => {}
    }
    if !act.active {
        return (f.idle_w * r(0.97, 1.05), false);
    }
    let watts = f.idle_w * 1.2 + (limit - f.idle_w * 1.2) * act.intensity;
    if watts >= limit * 0.985 {
        (capped_w, true)
    } else {
        (watts * r(0.985, 1.015), false)
    }
}

/// Temperature: the room plus heat from the last ~80 s of power, so it lags the load.
fn temperature(gpu: &Gpu, s: i64) -> f64 {
    let f = facts(gpu.device.profile);
    let index = u64::from(gpu.device.index);
    if gpu.throttle == Some(Throttle::Thermal) {
        return f64::from(gpu.device.temp_slowdown_c)
            + range(gpu.seed, &[tag::TEMP, index, s as u64], 0.0, 3.0);
    }
    let limit = f64::from(gpu.device.power_limit_mw) / 1000.0;
    let (mut heat, mut weights) = (0.0, 0.0);
    let mut w = 1.0;
    for k in 0..20 {
        let (p, _) = power_w(gpu, s - 4 * k);
        heat += w * ((p - f.idle_w) / (limit - f.idle_w)).clamp(0.0, 1.0);
        weights += w;
        w *= 0.8;
    }
    let ambient = 25.0 + range(gpu.seed, &[tag::AMBIENT, index], 3.0, 9.0);
    let noise = range(gpu.seed, &[tag::TEMP, index, s as u64], -0.6, 0.6);
    ambient + (f.load_temp_c - 30.0) * heat / weights + noise
}

/// The reading of one GPU at second `s`.
pub(crate) fn sample(gpu: &Gpu, s: i64, procs: &[SimProcess], energy_mj: u64) -> SimSample {
    let d = gpu.device;
    let f = facts(d.profile);
    let index = u64::from(d.index);
    let act = gpu.activity(s);
    let (power, capped) = power_of(gpu, &act, s);
    let active = act.active || procs.iter().any(|p| !p.graphics);
    let idle = !active && act.util < 0.01;
    let temp = temperature(gpu, s).round().max(0.0) as u32;

    let jitter = range(gpu.seed, &[tag::CLOCK, index, s as u64], 0.70, 0.86);
    let sm_scale = match gpu.throttle {
        Some(Throttle::Thermal) => 0.5,
        Some(Throttle::SwSlowdown) => 0.75,
        _ if capped => jitter,
        _ => 1.0,
    };
    let sm_clock = if idle {
        f.idle_sm_mhz
    } else {
        (f64::from(f.max_sm_mhz) * sm_scale / 15.0).round() as u32 * 15
    };
    let mem_clock = if active {
        f.max_mem_mhz
    } else {
        f.idle_mem_mhz
    };
    let video_clock = if idle {
        f.idle_video_mhz
    } else {
        f.max_video_mhz
    };

    let mut reasons = gpu.throttle.map_or(0, Throttle::reason_bits);
    if idle {
        reasons |= reason::GPU_IDLE;
    }
    if capped {
        reasons |= reason::SW_POWER_CAP;
    }

    // An idle GeForce drops to P8 and its link to Gen1 to save power, as real cards do (full
    // width kept); datacenter boards stay in P0 at full speed.
    let (pcie_gen, pcie_width) = if gpu.downgraded {
        (d.pcie_max_gen.min(3), d.pcie_max_width.min(8))
    } else if !f.datacenter && !active {
        (1, d.pcie_max_width)
    } else {
        (d.pcie_max_gen, d.pcie_max_width)
    };

    let used: u64 = procs.iter().map(|p| p.used_memory_bytes).sum();
    let overhead = if procs.is_empty() { 0 } else { 9 * MIB };
    let usable = d.memory_total_bytes - d.memory_reserved_bytes;

    SimSample {
        phase: act.phase,
        util_gpu: (act.util * 100.0).round() as u32,
        util_mem: (act.mem_util * 100.0).round() as u32,
        mem_used_bytes: (used + overhead).min(usable),
        mem_reserved_bytes: d.memory_reserved_bytes,
        temp_c: temp,
        power_mw: (power * 1000.0).round() as u32,
        sm_clock_mhz: sm_clock,
        mem_clock_mhz: mem_clock,
        video_clock_mhz: video_clock,
        fan_percent: fan(d.num_fans, temp),
        pstate: match (f.datacenter, active) {
            (true, _) => 0,
            (false, true) => 2,
            (false, false) => 8,
        },
        pcie_gen,
        pcie_width,
        pcie_tx_kbps: act.tx_kbps.round() as u32,
        pcie_rx_kbps: act.rx_kbps.round() as u32,
        throttle_reasons: reasons,
        ecc_corrected: gpu.ecc.0,
        ecc_uncorrected: gpu.ecc.1,
        energy_mj,
    }
}

/// Fan duty: zero-RPM while cool, then a linear curve.
fn fan(fans: u32, temp: u32) -> u32 {
    match (fans, temp) {
        (0, _) => 0,
        (_, t) if t < 45 => 0,
        (_, t) => (30 + (t - 45) * 2).min(100),
    }
}
