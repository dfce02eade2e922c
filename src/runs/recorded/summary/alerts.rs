//! Alerts drawn from a run's recent GPU metrics, as pure functions of the rows: a straggler or
//! hung rank, a run starved by its input pipeline, GPU memory held after the run ended.

use serde::Serialize;

use super::totals::rows_of;
use crate::runs::recorded::samples::MetricsRow;
use crate::units::human_bytes;

/// One GPU idle this long while the others work is a straggler or a hang, not a pause.
pub const STRAGGLER_AFTER_MS: i64 = 30_000;
/// All GPUs idle this long: longer than a checkpoint or a short evaluation on the CPU.
pub const ALL_IDLE_AFTER_MS: i64 = 60_000;
/// Memory still held this long after the end is not the driver finishing its teardown.
pub const HELD_AFTER_END_MS: i64 = 10_000;
/// Less than this can be the driver's own reservation on an idle GPU.
pub const HELD_MEMORY_BYTES: u64 = 1 << 30;
/// Samples further apart than this leave a gap: what happened in it is unknown.
const MAX_GAP_MS: i64 = 5_000;
/// Share of samples with utilisation above [`IDLE_PCT`] for a GPU to count as busy over a span.
const BUSY_SHARE: f64 = 0.9;
/// Utilisation at or under this is idle for the alerts: a rank blocked in a collective or
/// waiting on its data keeps its GPU at a few percent (NCCL's polling, the odd small kernel).
pub const IDLE_PCT: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    Straggler,
    AllIdle,
    MemoryHeldAfterEnd,
    /// No rank has printed progress for many times the run's step time.
    Stalled,
    /// One rank silent and behind while the others go on.
    RankStalled,
}

/// Something on screen for the user: what is wrong, on which GPUs, since when, and what to do.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alert {
    pub kind: AlertKind,
    pub gpus: Vec<u32>,
    pub since_ms: i64,
    /// The ranks it is about, when it is about ranks (the stall alerts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<usize>,
    pub message: String,
    pub fix: String,
}

/// Some of the run's GPUs idle (utilisation at most [`IDLE_PCT`]) for [`STRAGGLER_AFTER_MS`] while every other one
/// stayed busy: their ranks are slow or hung.
pub fn straggler(rows_window: &[MetricsRow], gpus: &[u32]) -> Option<Alert> {
    let now = latest(rows_window, gpus)?;
    let idle = idle_since(rows_window, gpus, now, STRAGGLER_AFTER_MS, IDLE_PCT);
    if idle.is_empty() || idle.len() == gpus.len() {
        return None;
    }
    let since = idle.iter().map(|&(_, s)| s).max()?;
    let others: Vec<u32> = gpus
        .iter()
        .copied()
        .filter(|g| idle.iter().all(|&(i, _)| i != *g))
        .collect();
    if !others
        .iter()
        .all(|&g| busy_over(&rows_of(rows_window, g), since, now))
    {
        return None;
    }
    let stragglers: Vec<u32> = idle.iter().map(|&(g, _)| g).collect();
    Some(Alert {
        kind: AlertKind::Straggler,
        message: format!(
            "{} {} been idle for {} s while {} {} busy: {} straggling or hung.",
            gpu_list(&stragglers),
            if stragglers.len() == 1 { "has" } else { "have" },
            (now - since) / 1000,
            gpu_list(&others),
            if others.len() == 1 { "is" } else { "are" },
            if stragglers.len() == 1 {
                "the rank on it is"
            } else {
                "the ranks on them are"
            },
        ),
        fix: "Read that rank's log (gpudeck logs RUN --rank N) for an error or a stalled data \
              loader; `py-spy dump --pid PID` shows where a Python rank waits. Busy ranks at 100% \
              are usually blocked in a collective, waiting for it."
            .into(),
        gpus: stragglers,
        since_ms: since,
        ranks: Vec::new(),
    })
}

/// Every GPU of the run idle for [`ALL_IDLE_AFTER_MS`]: the run waits on its input pipeline.
pub fn all_idle(rows_window: &[MetricsRow], gpus: &[u32]) -> Option<Alert> {
    let now = latest(rows_window, gpus)?;
    let idle = idle_since(rows_window, gpus, now, ALL_IDLE_AFTER_MS, 0);
    if gpus.is_empty() || idle.len() != gpus.len() {
        return None;
    }
    let since = idle.iter().map(|&(_, s)| s).max()?;
    Some(Alert {
        kind: AlertKind::AllIdle,
        message: format!(
            "All of the run's GPUs ({}) have been idle for {} s: it is bound by its input pipeline \
             (loading or preprocessing data on the CPU) or stalled.",
            gpu_list(gpus),
            (now - since) / 1000,
        ),
        fix: "Check CPU and disk use of the run's processes. Raise DataLoader num_workers (with \
              pin_memory=True), or add .prefetch(tf.data.AUTOTUNE) and num_parallel_calls to \
              tf.data maps. Evaluation or checkpointing on the CPU idles the GPUs for a while too."
            .into(),
        gpus: gpus.to_vec(),
        since_ms: since,
        ranks: Vec::new(),
    })
}

/// GPUs still holding at least [`HELD_MEMORY_BYTES`] for [`HELD_AFTER_END_MS`] after the run
/// ended: processes of the run outlived it. Confirm with the GPU's process list before killing:
/// another job may have started on it.
pub fn memory_held_after_end(rows_after_end: &[MetricsRow], gpus: &[u32]) -> Option<Alert> {
    let now = latest(rows_after_end, gpus)?;
    let mut held = Vec::new();
    let mut largest = 0;
    for &gpu in gpus {
        let rows = rows_of(rows_after_end, gpu);
        let holds = |r: &MetricsRow| r.mem_used_bytes.is_some_and(|m| m >= HELD_MEMORY_BYTES);
        if let Some(since) = streak_since(&rows, now, holds) {
            if now - since >= HELD_AFTER_END_MS {
                held.push((gpu, since));
                largest = largest.max(rows.last().and_then(|r| r.mem_used_bytes).unwrap_or(0));
            }
        }
    }
    let since = held.iter().map(|&(_, s)| s).min()?;
    let gpus: Vec<u32> = held.iter().map(|&(g, _)| g).collect();
    Some(Alert {
        kind: AlertKind::MemoryHeldAfterEnd,
        message: format!(
            "{} still {} GPU memory (up to {}) {} s after the run ended: processes of the run \
             outlived it (DataLoader workers, a rank that did not exit).",
            gpu_list(&gpus),
            if gpus.len() == 1 { "holds" } else { "hold" },
            human_bytes(largest),
            (now - since) / 1000,
        ),
        fix: "Kill the leftover processes shown on the GPU (gpudeck offers to); \
              `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` lists them too."
            .into(),
        gpus,
        since_ms: since,
        ranks: Vec::new(),
    })
}

/// The newest sample time of the run's GPUs.
fn latest(rows: &[MetricsRow], gpus: &[u32]) -> Option<i64> {
    rows.iter()
        .filter(|r| gpus.contains(&r.gpu_index))
        .map(|r| r.t_unix_ms)
        .max()
}

/// GPUs idle without a break from some time until `now`, for at least `min_ms`, with that time.
/// Idle is utilisation at most `idle_pct`.
fn idle_since(
    rows: &[MetricsRow],
    gpus: &[u32],
    now: i64,
    min_ms: i64,
    idle_pct: u32,
) -> Vec<(u32, i64)> {
    gpus.iter()
        .filter_map(|&gpu| {
            let idle = |r: &MetricsRow| r.util_pct.is_some_and(|u| u <= idle_pct);
            let since = streak_since(&rows_of(rows, gpu), now, idle)?;
            (now - since >= min_ms).then_some((gpu, since))
        })
        .collect()
}

/// When the unbroken run of samples that satisfy `holds` and reaches `now` began. A sample that
/// fails, an unknown value or a gap longer than [`MAX_GAP_MS`] breaks it.
fn streak_since(
    rows: &[&MetricsRow],
    now: i64,
    holds: impl Fn(&MetricsRow) -> bool,
) -> Option<i64> {
    let last = rows.last()?;
    if now - last.t_unix_ms > MAX_GAP_MS || !holds(last) {
        return None;
    }
    let mut since = last.t_unix_ms;
    for row in rows.iter().rev().skip(1) {
        if since - row.t_unix_ms > MAX_GAP_MS || !holds(row) {
            break;
        }
        since = row.t_unix_ms;
    }
    Some(since)
}

/// Whether a GPU was busy for nearly all its samples in `[from, to]`, and had some.
fn busy_over(rows: &[&MetricsRow], from: i64, to: i64) -> bool {
    let span: Vec<_> = rows
        .iter()
        .filter(|r| (from..=to).contains(&r.t_unix_ms))
        .collect();
    let busy = span
        .iter()
        .filter(|r| r.util_pct.is_some_and(|u| u > IDLE_PCT))
        .count();
    !span.is_empty() && busy as f64 >= BUSY_SHARE * span.len() as f64
}

/// "GPU 2" or "GPUs 0, 1 and 3".
fn gpu_list(gpus: &[u32]) -> String {
    let names: Vec<String> = gpus.iter().map(u32::to_string).collect();
    match names.as_slice() {
        [one] => format!("GPU {one}"),
        [init @ .., last] => format!("GPUs {} and {last}", init.join(", ")),
        [] => "no GPU".into(),
    }
}
