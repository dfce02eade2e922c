//! A run's summary kept up to date as its metrics arrive, in memory that does not grow with the
//! run's length: what the dashboard shows for runs whose metrics file it follows.

use std::collections::BTreeMap;

use super::totals::{assemble, GpuSummary, RunSummary, DEFAULT_PERIOD_MS, GAP_FACTOR};
use crate::runs::recorded::samples::MetricsRow;

/// Gaps used to learn a GPU's sampling period; the median of the first ones, as `summarize`
/// takes the median of all.
const PERIOD_SAMPLES: usize = 15;

/// Sums per GPU, fed one row at a time in time order.
#[derive(Clone, Debug, Default)]
pub struct SummaryBuilder {
    started_ms: i64,
    gpus: BTreeMap<u32, GpuSums>,
    last_ms: Option<i64>,
}

#[derive(Clone, Debug, Default)]
struct GpuSums {
    uuid: Option<String>,
    gaps: Vec<i64>,
    rows: Vec<MetricsRow>,
    previous: Option<i64>,
    observed: f64,
    busy: f64,
    util_sum: f64,
    powered: f64,
    energy: f64,
    peak_mem: Option<u64>,
}

impl SummaryBuilder {
    /// Sums for a run that started at `started_ms`; samples before it do not count.
    pub fn new(started_ms: i64) -> Self {
        Self {
            started_ms,
            gpus: BTreeMap::new(),
            last_ms: None,
        }
    }

    /// The time of the newest row pushed: where a lost run's evidence ends.
    pub fn last_ms(&self) -> Option<i64> {
        self.last_ms
    }

    /// Adds a row; rows of one GPU must come oldest first (as the supervisor writes them).
    pub fn push(&mut self, row: MetricsRow) {
        let started = self.started_ms;
        self.last_ms = self.last_ms.max(Some(row.t_unix_ms));
        self.gpus
            .entry(row.gpu_index)
            .or_default()
            .push(row, started);
    }

    /// The summary of what was pushed, for the run up to `ended_ms` (now, for a run still
    /// going) on `gpus`.
    /// The GPUs rows have been pushed for.
    pub fn gpus_seen(&self) -> Vec<u32> {
        self.gpus.keys().copied().collect()
    }

    pub fn summary(&self, ended_ms: i64, gpus: &[u32]) -> RunSummary {
        let per_gpu: Vec<GpuSummary> = gpus
            .iter()
            .map(|&gpu| match self.gpus.get(&gpu) {
                Some(sums) => sums.summary(gpu, self.started_ms),
                None => GpuSums::default().summary(gpu, self.started_ms),
            })
            .collect();
        assemble(self.started_ms, ended_ms, gpus.len(), per_gpu)
    }
}

impl GpuSums {
    fn push(&mut self, row: MetricsRow, started_ms: i64) {
        if self.gaps.len() < PERIOD_SAMPLES {
            // Rows are held only until the period is known, then counted in order.
            if let Some(last) = self.rows.last() {
                let gap = row.t_unix_ms - last.t_unix_ms;
                if gap > 0 {
                    self.gaps.push(gap);
                }
            }
            self.rows.push(row);
            if self.gaps.len() == PERIOD_SAMPLES {
                for row in std::mem::take(&mut self.rows) {
                    self.count(&row, started_ms);
                }
            }
            return;
        }
        self.count(&row, started_ms);
    }

    fn period(&self) -> i64 {
        let mut gaps = self.gaps.clone();
        gaps.sort_unstable();
        gaps.get(gaps.len() / 2)
            .copied()
            .unwrap_or(DEFAULT_PERIOD_MS)
    }

    fn count(&mut self, row: &MetricsRow, started_ms: i64) {
        let period = self.period();
        let t = row.t_unix_ms;
        let span = match self.previous {
            Some(p) if (t - p) as f64 <= period as f64 * GAP_FACTOR => t - p,
            _ => period,
        };
        self.previous = Some(t);
        self.uuid.get_or_insert_with(|| row.gpu_uuid.clone());
        let covered = (t - (t - span).max(started_ms)).max(0) as f64 / 1000.0;
        if covered == 0.0 {
            return;
        }
        if let Some(util) = row.util_pct {
            self.observed += covered;
            self.util_sum += f64::from(util) * covered;
            if util > 0 {
                self.busy += covered;
            }
        }
        if let Some(power) = row.power_w.filter(|p| p.is_finite()) {
            self.powered += covered;
            self.energy += power * covered;
        }
        self.peak_mem = self.peak_mem.max(row.mem_used_bytes);
    }

    /// What the sums say, counting rows still held for the period estimate.
    fn summary(&self, gpu: u32, started_ms: i64) -> GpuSummary {
        let mut sums = self.clone();
        for row in std::mem::take(&mut sums.rows) {
            sums.count(&row, started_ms);
        }
        GpuSummary {
            gpu_index: gpu,
            gpu_uuid: sums.uuid.clone(),
            seconds_observed: sums.observed,
            seconds_busy: sums.busy,
            mean_util_pct: (sums.observed > 0.0).then(|| sums.util_sum / sums.observed),
            peak_mem_bytes: sums.peak_mem,
            mean_power_w: (sums.powered > 0.0).then(|| sums.energy / sums.powered),
            energy_j: (sums.powered > 0.0).then_some(sums.energy),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::recorded::summary::summarize;

    fn row(t: i64, gpu: u32, util: u32, power: f64, mem: u64) -> MetricsRow {
        MetricsRow {
            t_unix_ms: t,
            gpu_index: gpu,
            gpu_uuid: format!("GPU-{gpu}"),
            util_pct: Some(util),
            mem_used_bytes: Some(mem),
            mem_total_bytes: Some(80 << 30),
            power_w: Some(power),
            temp_c: Some(50),
            sm_clock_mhz: Some(1980),
        }
    }

    /// Two GPUs sampled each second for five minutes, one with a 20 s gap.
    fn rows() -> Vec<MetricsRow> {
        let mut rows = Vec::new();
        for s in 1..=300i64 {
            let t = 1_000_000 + s * 1000 + s % 3;
            rows.push(row(
                t,
                0,
                (s % 4 * 30) as u32,
                300.0 + s as f64,
                (s as u64) << 20,
            ));
            if !(100..120).contains(&s) {
                rows.push(row(t + 5, 1, 90, 650.0, 40 << 30));
            }
        }
        rows
    }

    #[test]
    fn agrees_with_the_summary_of_all_rows_at_once() {
        let rows = rows();
        let (start, end) = (1_000_500, 1_301_000);
        let mut builder = SummaryBuilder::new(start);
        for r in rows.iter().cloned() {
            builder.push(r);
        }
        let whole = summarize(&rows, start, end, &[0, 1, 2]);
        let running = builder.summary(end, &[0, 1, 2]);
        assert_eq!(running.gpus.len(), 3);
        assert!((running.gpu_seconds_allocated - whole.gpu_seconds_allocated).abs() < 1e-9);
        assert!((running.gpu_seconds_busy - whole.gpu_seconds_busy).abs() < 1e-6);
        for (a, b) in running.gpus.iter().zip(&whole.gpus) {
            assert_eq!(a.gpu_uuid, b.gpu_uuid);
            assert_eq!(a.peak_mem_bytes, b.peak_mem_bytes);
            assert!(
                (a.seconds_observed - b.seconds_observed).abs() < 1e-6,
                "{a:?} {b:?}"
            );
            assert_eq!(a.mean_util_pct.is_some(), b.mean_util_pct.is_some());
            if let (Some(x), Some(y)) = (a.energy_j, b.energy_j) {
                assert!((x - y).abs() < 1e-3);
            }
        }
        // The gap on GPU 1 is neither busy nor observed.
        assert!(running.gpus[1].seconds_observed < 285.0);
        assert_eq!(running.gpus[2].mean_util_pct, None);
    }

    #[test]
    fn a_few_rows_are_summed_before_the_period_is_learned() {
        let mut builder = SummaryBuilder::new(0);
        builder.push(row(1000, 0, 100, 100.0, 1));
        builder.push(row(2000, 0, 0, 100.0, 2));
        let s = builder.summary(2000, &[0]);
        assert_eq!(s.gpus[0].seconds_observed, 2.0);
        assert_eq!(s.gpus[0].seconds_busy, 1.0);
        assert_eq!(s.busy_ratio, Some(0.5));
        assert_eq!(s.gpus[0].peak_mem_bytes, Some(2));
    }
}
