//! What a run's recorded GPU metrics add up to (GPU-seconds, busy ratio, peak memory, power and
//! energy per GPU) and the alerts they raise: a straggler, an idle run, memory held after the end.

mod alerts;
mod leftover;
mod running;
mod stall;
mod totals;

pub use alerts::{
    all_idle, memory_held_after_end, straggler, Alert, AlertKind, ALL_IDLE_AFTER_MS,
    HELD_AFTER_END_MS, HELD_MEMORY_BYTES, STRAGGLER_AFTER_MS,
};
pub use leftover::leftover_memory;
pub use running::SummaryBuilder;
pub use stall::{stall, RankPace, STALL_MIN_MS, STALL_STEPS};
pub use totals::{summarize, GpuSummary, RunSummary};

#[cfg(test)]
mod tests {
    //! Tests of run summaries on hand-made rows (gaps and clipping included) and of each alert.

    use super::totals::*;
    use super::*;
    use crate::runs::recorded::samples::MetricsRow;

    const GIB: u64 = 1 << 30;

    fn sample(t: i64, gpu: u32, util: Option<u32>, power: Option<f64>, mem: u64) -> MetricsRow {
        MetricsRow {
            t_unix_ms: t,
            gpu_index: gpu,
            gpu_uuid: format!("GPU-{gpu}"),
            util_pct: util,
            mem_used_bytes: Some(mem),
            mem_total_bytes: Some(80 * GIB),
            power_w: power,
            temp_c: Some(60),
            sm_clock_mhz: Some(1980),
        }
    }

    /// GPU 0: busy at 200 W for 10 s, a 5 s gap with no samples, then idle at 50 W for 5 s.
    /// GPU 1: half busy at 100 W for all 20 s, one power reading missing. Out of order on purpose.
    fn two_gpu_run() -> Vec<MetricsRow> {
        let mut rows = Vec::new();
        for s in (1..=10).rev() {
            rows.push(sample(s * 1000, 0, Some(100), Some(200.0), s as u64 * GIB));
        }
        for s in 16..=20 {
            rows.push(sample(s * 1000, 0, Some(0), Some(50.0), GIB));
        }
        for s in 1..=20 {
            let power = (s != 5).then_some(100.0);
            rows.push(sample(s * 1000, 1, Some(50), power, 2 * GIB));
        }
        rows.push(sample(21_000, 1, Some(50), Some(100.0), 30 * GIB));
        rows
    }

    #[test]
    fn summary_adds_up_and_does_not_count_a_gap() {
        let summary = summarize(&two_gpu_run(), 0, 20_000, &[0, 1]);
        assert_eq!(summary.gpu_seconds_allocated, 40.0);
        assert_eq!(summary.gpu_seconds_busy, 30.0);
        assert_eq!(summary.busy_ratio, Some(0.75));
        assert_eq!(summary.energy_j, Some(4150.0));

        let gpu0 = &summary.gpus[0];
        assert_eq!((gpu0.seconds_observed, gpu0.seconds_busy), (15.0, 10.0));
        assert_eq!(gpu0.energy_j, Some(2250.0));
        assert_eq!(gpu0.mean_power_w, Some(150.0));
        assert!((gpu0.mean_util_pct.expect("util") - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(gpu0.peak_mem_bytes, Some(10 * GIB));
        assert_eq!(gpu0.gpu_uuid.as_deref(), Some("GPU-0"));

        let gpu1 = &summary.gpus[1];
        assert_eq!((gpu1.seconds_observed, gpu1.seconds_busy), (20.0, 20.0));
        assert_eq!(
            gpu1.energy_j,
            Some(1900.0),
            "the missing reading adds nothing"
        );
        assert_eq!(gpu1.mean_power_w, Some(100.0));
        assert_eq!(
            gpu1.peak_mem_bytes,
            Some(2 * GIB),
            "a sample after the end is not the run's"
        );
    }

    #[test]
    fn samples_are_clipped_to_the_run() {
        let rows: Vec<_> = (0..=3)
            .map(|s| sample(s * 1000, 0, Some(100), Some(100.0), GIB))
            .collect();
        let summary = summarize(&rows, 500, 2500, &[0]);
        assert_eq!(summary.gpus[0].seconds_busy, 2.0);
        assert_eq!(summary.gpus[0].energy_j, Some(200.0));
        assert_eq!(summary.busy_ratio, Some(1.0));
    }

    #[test]
    fn a_gpu_without_samples_and_an_empty_run() {
        let summary = summarize(&[], 0, 0, &[3]);
        assert_eq!(summary.busy_ratio, None);
        assert_eq!(summary.energy_j, None);
        let gpu = &summary.gpus[0];
        assert_eq!(
            (gpu.mean_util_pct, gpu.peak_mem_bytes, gpu.gpu_uuid.clone()),
            (None, None, None)
        );
        let json = serde_json::to_value(&summary).expect("serializes");
        assert_eq!(json["gpus"][0]["gpu_index"], 3);
    }

    /// Samples every second in `[from, to]` for one GPU at one utilisation.
    fn span(gpu: u32, from_s: i64, to_s: i64, util: Option<u32>, mem: u64) -> Vec<MetricsRow> {
        (from_s..=to_s)
            .map(|s| sample(s * 1000, gpu, util, Some(100.0), mem))
            .collect()
    }

    #[test]
    fn straggler_fires_for_one_idle_gpu_among_busy_ones() {
        let mut rows = span(0, 0, 40, Some(97), GIB);
        rows.extend(span(1, 0, 4, Some(97), GIB));
        rows.extend(span(1, 5, 40, Some(0), GIB));
        rows.extend(span(2, 0, 40, Some(99), GIB));
        let alert = straggler(&rows, &[0, 1, 2]).expect("fires");
        assert_eq!(
            (alert.kind, alert.gpus.clone(), alert.since_ms),
            (AlertKind::Straggler, vec![1], 5000)
        );
        assert_eq!(
        alert.message,
        "GPU 1 has been idle for 35 s while GPUs 0 and 2 are busy: the rank on it is straggling or hung."
    );
        assert!(alert.fix.contains("gpudeck logs"));
    }

    #[test]
    fn straggler_fires_for_a_gpu_at_a_few_percent_beside_a_busy_one() {
        // A rank waiting in a collective keeps its GPU at 0-3 % (NCCL polling), not at 0.
        let mut rows = span(0, 0, 60, Some(98), GIB);
        rows.extend((0..=60).map(|s| sample(s * 1000, 1, Some((s % 4) as u32), Some(60.0), GIB)));
        let alert = straggler(&rows, &[0, 1]).expect("fires");
        assert_eq!((alert.gpus.clone(), alert.since_ms), (vec![1], 0));
        assert!(alert
            .message
            .starts_with("GPU 1 has been idle for 60 s while GPU 0 is busy"));
    }

    #[test]
    fn straggler_stays_quiet_otherwise() {
        let busy = |gpu| span(gpu, 0, 40, Some(97), GIB);
        let short: Vec<_> = [
            busy(0),
            span(1, 0, 15, Some(90), GIB),
            span(1, 16, 40, Some(0), GIB),
        ]
        .concat();
        assert_eq!(straggler(&short, &[0, 1]), None, "idle for only 24 s");
        let all: Vec<_> = [span(0, 0, 40, Some(0), GIB), span(1, 0, 40, Some(0), GIB)].concat();
        assert_eq!(straggler(&all, &[0, 1]), None, "all idle is another alert");
        let mut flaky = span(0, 0, 40, Some(97), GIB);
        for row in flaky.iter_mut().step_by(2) {
            row.util_pct = Some(0);
        }
        let lazy_others: Vec<_> = [flaky, span(1, 0, 40, Some(0), GIB)].concat();
        assert_eq!(
            straggler(&lazy_others, &[0, 1]),
            None,
            "the other GPU is not busy"
        );
        let gap: Vec<_> = [
            busy(0),
            span(1, 0, 10, Some(0), GIB),
            span(1, 20, 40, Some(0), GIB),
        ]
        .concat();
        assert_eq!(
            straggler(&gap, &[0, 1]),
            None,
            "a gap breaks the idle streak"
        );
        assert_eq!(
            straggler(&span(1, 0, 40, Some(0), GIB), &[1]),
            None,
            "one GPU has no others"
        );
        let unknown: Vec<_> = [busy(0), span(1, 0, 40, None, GIB)].concat();
        assert_eq!(straggler(&unknown, &[0, 1]), None, "unknown is not idle");
    }

    #[test]
    fn all_idle_fires_after_a_minute() {
        let rows: Vec<_> = [
            span(0, 0, 70, Some(0), GIB),
            span(1, 0, 9, Some(80), GIB),
            span(1, 10, 70, Some(0), GIB),
        ]
        .concat();
        let alert = all_idle(&rows, &[0, 1]).expect("fires");
        assert_eq!(
            (alert.kind, alert.gpus.clone(), alert.since_ms),
            (AlertKind::AllIdle, vec![0, 1], 10_000)
        );
        assert!(alert
            .message
            .starts_with("All of the run's GPUs (GPUs 0 and 1) have been idle for 60 s"));
        assert!(alert.fix.contains("num_workers"));
    }

    #[test]
    fn all_idle_stays_quiet_otherwise() {
        let short: Vec<_> = [span(0, 0, 58, Some(0), GIB), span(1, 0, 58, Some(0), GIB)].concat();
        assert_eq!(all_idle(&short, &[0, 1]), None, "58 s");
        let one_busy: Vec<_> = [
            span(0, 0, 90, Some(0), GIB),
            span(1, 0, 89, Some(0), GIB),
            span(1, 90, 90, Some(3), GIB),
        ]
        .concat();
        assert_eq!(all_idle(&one_busy, &[0, 1]), None, "GPU 1 just woke up");
        let silent: Vec<_> = [span(0, 0, 90, Some(0), GIB), span(1, 0, 20, Some(0), GIB)].concat();
        assert_eq!(all_idle(&silent, &[0, 1]), None, "GPU 1 stopped reporting");
        assert_eq!(all_idle(&[], &[0]), None);
    }

    #[test]
    fn memory_held_after_the_end_fires_after_the_grace_period() {
        let rows: Vec<_> = [
            span(0, 100, 115, Some(0), 71 * GIB),
            span(1, 100, 115, Some(0), 300 << 20),
        ]
        .concat();
        let alert = memory_held_after_end(&rows, &[0, 1]).expect("fires");
        assert_eq!(
            (alert.kind, alert.gpus.clone(), alert.since_ms),
            (AlertKind::MemoryHeldAfterEnd, vec![0], 100_000)
        );
        assert_eq!(
        alert.message,
        "GPU 0 still holds GPU memory (up to 71.0GiB) 15 s after the run ended: processes of the \
         run outlived it (DataLoader workers, a rank that did not exit)."
    );
        assert!(alert.fix.contains("nvidia-smi --query-compute-apps"));
    }

    #[test]
    fn memory_held_after_the_end_stays_quiet_otherwise() {
        assert_eq!(
            memory_held_after_end(&span(0, 100, 105, Some(0), 71 * GIB), &[0]),
            None,
            "5 s"
        );
        let freed: Vec<_> = [
            span(0, 100, 115, Some(0), 71 * GIB),
            span(0, 116, 116, Some(0), 0),
        ]
        .concat();
        assert_eq!(memory_held_after_end(&freed, &[0]), None, "freed");
        assert_eq!(
            memory_held_after_end(&span(0, 100, 130, Some(0), 512 << 20), &[0]),
            None,
            "driver reserve"
        );
        assert_eq!(
            memory_held_after_end(&span(5, 100, 130, Some(0), 71 * GIB), &[0]),
            None,
            "not the run's GPU"
        );
    }

    #[test]
    fn mean_utilisation_weighs_each_gpu_by_the_seconds_it_was_observed() {
        let gpu = |util: Option<f64>, seconds: f64| GpuSummary {
            gpu_index: 0,
            gpu_uuid: None,
            seconds_observed: seconds,
            seconds_busy: seconds,
            mean_util_pct: util,
            peak_mem_bytes: None,
            mean_power_w: None,
            energy_j: None,
        };
        let summary = RunSummary {
            started_ms: 0,
            ended_ms: 30_000,
            gpu_seconds_allocated: 90.0,
            gpu_seconds_busy: 40.0,
            busy_ratio: Some(40.0 / 90.0),
            energy_j: None,
            gpus: vec![gpu(Some(90.0), 30.0), gpu(Some(30.0), 10.0), gpu(None, 0.0)],
            lost_gpus: Vec::new(),
        };
        assert_eq!(summary.mean_util_pct(), Some(75.0));
        let empty = RunSummary {
            gpus: vec![gpu(None, 0.0)],
            ..summary
        };
        assert_eq!(empty.mean_util_pct(), None);
    }
}
