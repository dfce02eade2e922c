//! A run's recorded GPU metrics added up, per GPU and for the run: GPU-seconds, busy ratio,
//! peak memory, power and energy.

use serde::{Deserialize, Serialize};

use crate::runs::record::LostGpu;
use crate::runs::recorded::samples::MetricsRow;

/// Sampling period assumed when a GPU has too few samples to measure it.
pub(super) const DEFAULT_PERIOD_MS: i64 = 1_000;
/// A spacing up to this many periods is jitter; beyond it the samples missed are a gap.
pub(super) const GAP_FACTOR: f64 = 1.5;

/// A run's use of its GPUs, for the runs list, `gpudeck runs --json` and exports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub started_ms: i64,
    pub ended_ms: i64,
    /// Wall time times the number of GPUs the run held.
    pub gpu_seconds_allocated: f64,
    /// Seconds with utilisation above 0, summed over GPUs.
    pub gpu_seconds_busy: f64,
    /// Busy over allocated: the run's GPU kernel utilisation. None for a run of no length.
    pub busy_ratio: Option<f64>,
    pub energy_j: Option<f64>,
    pub gpus: Vec<GpuSummary>,
    /// The run's GPUs that fell off the bus during it, and when (their rows after are empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_gpus: Vec<LostGpu>,
}

impl RunSummary {
    /// The mean utilisation over the run's GPUs, each weighted by the seconds it was observed:
    /// what `nvidia-smi` would have shown on average. (`busy_ratio` counts any second above 0.)
    pub fn mean_util_pct(&self) -> Option<f64> {
        let (sum, seconds) = self
            .gpus
            .iter()
            .filter_map(|g| {
                g.mean_util_pct
                    .map(|u| (u * g.seconds_observed, g.seconds_observed))
            })
            .fold((0.0, 0.0), |(s, n), (u, t)| (s + u, n + t));
        (seconds > 0.0).then(|| sum / seconds)
    }
}

/// One GPU's share of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuSummary {
    pub gpu_index: u32,
    pub gpu_uuid: Option<String>,
    /// Seconds covered by utilisation readings (less than the run's length when samples are missing).
    pub seconds_observed: f64,
    pub seconds_busy: f64,
    pub mean_util_pct: Option<f64>,
    pub peak_mem_bytes: Option<u64>,
    pub mean_power_w: Option<f64>,
    pub energy_j: Option<f64>,
}

/// Sums a run's metrics between its start and end.
///
/// NVML reports utilisation and power over the period before a sample, so each sample stands for
/// the time since the previous one, or one sampling period after a gap: seconds with no sample
/// count neither as busy nor toward energy.
pub fn summarize(rows: &[MetricsRow], started_ms: i64, ended_ms: i64, gpus: &[u32]) -> RunSummary {
    let per_gpu: Vec<GpuSummary> = gpus
        .iter()
        .map(|&gpu| summarize_gpu(&rows_of(rows, gpu), gpu, started_ms, ended_ms))
        .collect();
    assemble(started_ms, ended_ms, gpus.len(), per_gpu)
}

/// The run's totals from its GPUs' shares.
pub(super) fn assemble(
    started_ms: i64,
    ended_ms: i64,
    gpu_count: usize,
    per_gpu: Vec<GpuSummary>,
) -> RunSummary {
    let wall_s = (ended_ms - started_ms).max(0) as f64 / 1000.0;
    let allocated = wall_s * gpu_count as f64;
    let busy = per_gpu.iter().map(|g| g.seconds_busy).sum();
    let energies: Vec<f64> = per_gpu.iter().filter_map(|g| g.energy_j).collect();
    RunSummary {
        started_ms,
        ended_ms,
        gpu_seconds_allocated: allocated,
        gpu_seconds_busy: busy,
        busy_ratio: (allocated > 0.0).then(|| busy / allocated),
        energy_j: (!energies.is_empty()).then(|| energies.iter().sum()),
        gpus: per_gpu,
        lost_gpus: Vec::new(),
    }
}

pub(super) fn summarize_gpu(
    rows: &[&MetricsRow],
    gpu: u32,
    started_ms: i64,
    ended_ms: i64,
) -> GpuSummary {
    let period = sampling_period(rows);
    let (mut observed, mut busy, mut util_sum) = (0.0, 0.0, 0.0);
    let (mut powered, mut energy) = (0.0, 0.0);
    let mut peak_mem = None;
    let mut previous: Option<i64> = None;
    for row in rows {
        let t = row.t_unix_ms;
        let span = match previous {
            Some(p) if (t - p) as f64 <= period as f64 * GAP_FACTOR => t - p,
            _ => period,
        };
        previous = Some(t);
        let covered = (t.min(ended_ms) - (t - span).max(started_ms)).max(0) as f64 / 1000.0;
        if covered == 0.0 {
            continue;
        }
        if let Some(util) = row.util_pct {
            observed += covered;
            util_sum += f64::from(util) * covered;
            if util > 0 {
                busy += covered;
            }
        }
        if let Some(power) = row.power_w.filter(|p| p.is_finite()) {
            powered += covered;
            energy += power * covered;
        }
        peak_mem = peak_mem.max(row.mem_used_bytes);
    }
    GpuSummary {
        gpu_index: gpu,
        gpu_uuid: rows.first().map(|r| r.gpu_uuid.clone()),
        seconds_observed: observed,
        seconds_busy: busy,
        mean_util_pct: (observed > 0.0).then(|| util_sum / observed),
        peak_mem_bytes: peak_mem,
        mean_power_w: (powered > 0.0).then(|| energy / powered),
        energy_j: (powered > 0.0).then_some(energy),
    }
}

/// The median spacing of a GPU's samples: robust to the gaps it must recognise.
pub(super) fn sampling_period(rows: &[&MetricsRow]) -> i64 {
    let mut gaps: Vec<i64> = rows
        .windows(2)
        .map(|w| w[1].t_unix_ms - w[0].t_unix_ms)
        .filter(|&g| g > 0)
        .collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2)
        .copied()
        .unwrap_or(DEFAULT_PERIOD_MS)
}

/// One GPU's rows, oldest first.
pub(super) fn rows_of(rows: &[MetricsRow], gpu: u32) -> Vec<&MetricsRow> {
    let mut mine: Vec<&MetricsRow> = rows.iter().filter(|r| r.gpu_index == gpu).collect();
    mine.sort_by_key(|r| r.t_unix_ms);
    mine
}
