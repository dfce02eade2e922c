//! Each rank's pace read from its logs (the latest step it printed, when it last wrote) for the
//! stall alerts, and rank 0's latest progress as numbers for `gpudeck runs --json`. The logs are
//! followed from their tails, a bounded amount per look, so a long run costs no more than a
//! short one.

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use serde::Serialize;

use super::tail::Follower;
use crate::runs::progress::{curve_name, ProgressTracker};
use crate::runs::record::RunState;
use crate::runs::recorded::summary::{stall, Alert, RankPace};
use crate::runs::store::{LogStream, Run};

/// Where a rank's logs are first read from: the last this many bytes of each stream (the latest
/// step and values are in them; older lines only ever set the step axis of a chart).
const TAIL_BYTES: u64 = 1 << 20;
/// Bytes read per look and stream after that.
const CHUNK_BYTES: u64 = 4 << 20;
/// Points a rank's tracker keeps: only its latest values are wanted here.
const POINTS: usize = 4;

/// One rank's stdout and stderr, followed for its progress.
#[derive(Debug)]
struct RankFeed {
    outputs: [Follower; 2],
    tracker: ProgressTracker,
}

/// The ranks of a run followed for their pace: rank 0 alone, or every rank.
#[derive(Debug)]
pub struct PaceFeed {
    ranks: Vec<RankFeed>,
}

impl PaceFeed {
    /// Follows the first `ranks` ranks' logs of `run` (a torchrun run's workers are its ranks).
    pub fn new(run: &Run, ranks: usize) -> Self {
        let ranks = (0..ranks.min(run.record.log_ranks()).max(1))
            .map(|rank| RankFeed {
                outputs: [LogStream::Stdout, LogStream::Stderr].map(|stream| {
                    Follower::from_tail(&run.log_path(rank, stream), TAIL_BYTES).ending_at_cr()
                }),
                tracker: ProgressTracker::with_points(POINTS),
            })
            .collect();
        Self { ranks }
    }

    /// Reads what the logs gained and says where each rank is.
    pub fn read(&mut self) -> Vec<RankPace> {
        self.ranks
            .iter_mut()
            .enumerate()
            .map(|(rank, feed)| {
                for output in &mut feed.outputs {
                    if let Ok(appended) = output.read_next(CHUNK_BYTES) {
                        for line in appended.lines() {
                            feed.tracker.feed_bytes(line);
                        }
                    }
                }
                let last_output_ms = feed
                    .outputs
                    .iter()
                    .filter_map(|o| std::fs::metadata(o.path()).and_then(|m| m.modified()).ok())
                    .filter_map(|t| t.duration_since(UNIX_EPOCH).ok())
                    .filter_map(|d| i64::try_from(d.as_millis()).ok())
                    .max();
                RankPace {
                    rank,
                    step: feed.tracker.global_step(),
                    last_output_ms,
                }
            })
            .collect()
    }

    /// Rank 0's tracker (what [`read`](Self::read) has fed it so far).
    fn rank0(&self) -> &ProgressTracker {
        &self.ranks[0].tracker
    }
}

/// A run's latest training progress as numbers, as the Runs tab shows it: `gpudeck runs --json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatestProgress {
    pub step: Option<u64>,
    pub total_steps: Option<u64>,
    pub epoch: Option<u32>,
    pub total_epochs: Option<u32>,
    /// The loss the tab draws (`loss`, `train_loss`, ...; else the first value printed).
    pub loss: Option<f64>,
    /// Steps per second, the mean from the start to rank 0's last output; null when the step
    /// counts each epoch afresh (Keras, Lightning) or is unknown.
    pub steps_per_second: Option<f64>,
    /// Every value's latest (finite) value, by name.
    pub values: BTreeMap<String, f64>,
}

/// What one look at a run's logs says: its latest progress, and for a running run of several
/// ranks (or one) whether its progress stalled.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PaceReport {
    pub progress: Option<LatestProgress>,
    pub stall: Option<Alert>,
}

/// Reads `run`'s logs once (their tails) as of `now_ms`: rank 0's latest progress, and for a
/// running run every rank's pace and the stall alert it raises.
pub fn pace_of(run: &Run, now_ms: u64) -> PaceReport {
    let running = run.state() == RunState::Running;
    let mut feed = PaceFeed::new(run, if running { usize::MAX } else { 1 });
    let paces = feed.read();
    let started = run.record.started_ms.map(|s| s as i64);
    let stall = match (running, started) {
        (true, Some(started)) => {
            let gpus: Vec<u32> = run.record.gpus.iter().map(|g| g.index).collect();
            stall(&paces, started, now_ms as i64, &gpus)
        }
        _ => None,
    };
    PaceReport {
        progress: latest_progress(feed.rank0(), started, paces[0].last_output_ms),
        stall,
    }
}

/// The latest of what `tracker` read, with the mean step rate from `started_ms` to
/// `last_output_ms`; None when nothing was printed.
pub fn latest_progress(
    tracker: &ProgressTracker,
    started_ms: Option<i64>,
    last_output_ms: Option<i64>,
) -> Option<LatestProgress> {
    let latest = tracker.latest()?;
    let names: Vec<&str> = tracker.scalar_names().collect();
    let values: BTreeMap<String, f64> = names
        .iter()
        .filter_map(|n| tracker.last_value(n).map(|v| (n.to_string(), v)))
        .collect();
    let loss = curve_name(&names).and_then(|n| tracker.last_value(n));
    // A step counter that restarts every epoch says nothing of the rate over the run.
    let global = latest.epoch.is_none() || tracker.global_step() == latest.step;
    let steps_per_second = match (latest.step, started_ms, last_output_ms) {
        (Some(step), Some(start), Some(last)) if global && last > start => {
            Some(step as f64 * 1000.0 / (last - start) as f64)
        }
        _ => None,
    };
    Some(LatestProgress {
        step: latest.step,
        total_steps: latest.total_steps,
        epoch: latest.epoch,
        total_epochs: latest.total_epochs,
        loss,
        steps_per_second,
        values,
    })
}

#[cfg(test)]
mod tests {
    //! The pace and stall of runs from rank logs recorded from real DDP runs that hung (see the
    //! fixtures' first lines), with the times their files were last written set as they were.

    use std::path::Path;
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::runs::record::{RunRecord, RUN_SCHEMA};
    use crate::runs::recorded::summary::AlertKind;
    use crate::runs::spec::Launcher;

    const LOCKSTEP: [&str; 2] = [
        include_str!("../testdata/stall/lockstep-rank0.log"),
        include_str!("../testdata/stall/lockstep-rank1.log"),
    ];
    const ACCUMULATING: [&str; 2] = [
        include_str!("../testdata/stall/accumulating-rank0.log"),
        include_str!("../testdata/stall/accumulating-rank1.log"),
    ];

    /// A running torchrun run of two workers started at `started`, whose rank N's stdout is
    /// `logs[N]` (its comment lines left out), last written at `written[N]`.
    fn run(dir: &Path, started: u64, logs: [&str; 2], written: [u64; 2]) -> Run {
        let value = serde_json::json!({
            "schema": RUN_SCHEMA, "id": "r", "name": "train.py", "launcher": Launcher::Torchrun,
            "workdir": "/w", "host": "h", "ranks": [], "state": "running",
            // No supervisor recorded: a run just created is not lost.
            "created_ms": now(),
            "started_ms": started, "torchrun_workers": 2,
            "gpus": [{"index": 0, "uuid": "GPU-0", "name": "H100"},
                     {"index": 1, "uuid": "GPU-1", "name": "H100"}],
        });
        let record: RunRecord = serde_json::from_value(value).expect("a record");
        let run = Run {
            dir: dir.to_path_buf(),
            record,
        };
        for (rank, (log, at)) in logs.iter().zip(written).enumerate() {
            let text: String = log
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| format!("{l}\n"))
                .collect();
            for stream in [LogStream::Stdout, LogStream::Stderr] {
                let path = run.log_path(rank, stream);
                let body = if stream == LogStream::Stdout {
                    &text[..]
                } else {
                    ""
                };
                std::fs::write(&path, body).unwrap();
                let file = std::fs::File::options().write(true).open(&path).unwrap();
                file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_millis(at))
                    .unwrap();
            }
        }
        run
    }

    fn now() -> u64 {
        crate::runs::clock::now_ms()
    }

    #[test]
    fn ranks_hung_in_lockstep_are_a_stalled_run() {
        let dir = tempfile::tempdir().unwrap();
        // 20 steps in the first 24 s, then 76 s of silence.
        let t0 = now() - 100_000;
        let run = run(dir.path(), t0, LOCKSTEP, [t0 + 24_000, t0 + 24_000]);
        let mut feed = PaceFeed::new(&run, usize::MAX);
        let paces = feed.read();
        assert_eq!(
            paces.iter().map(|p| p.step).collect::<Vec<_>>(),
            [Some(20), Some(20)]
        );
        let report = pace_of(&run, t0 + 100_000);
        let alert = report.stall.expect("stalled");
        assert_eq!(alert.kind, AlertKind::Stalled);
        assert_eq!(alert.since_ms, (t0 + 24_000) as i64);
        assert!(
            alert.message.starts_with(
                "The run has made no progress for 1m16s: no rank has printed anything since step \
                 20 (a step took 1.2s on average)."
            ),
            "{}",
            alert.message
        );
        let progress = report.progress.expect("rank 0's progress");
        assert_eq!(progress.step, Some(20));
        assert_eq!(progress.loss, Some(0.1074));
        assert_eq!(progress.values["loss"], 0.1074);
        assert_eq!(progress.steps_per_second, Some(20.0 / 24.0));
        // Twenty seconds after the last step it is not a stall yet.
        assert_eq!(pace_of(&run, t0 + 44_000).stall, None);
    }

    #[test]
    fn the_rank_that_stopped_first_is_named() {
        let dir = tempfile::tempdir().unwrap();
        // Rank 1 stopped at step 22 at 22 s; rank 0 went on to step 29 at 29 s and waits.
        let t0 = now() - 120_000;
        let run = run(dir.path(), t0, ACCUMULATING, [t0 + 29_000, t0 + 22_000]);
        let alert = pace_of(&run, t0 + 120_000).stall.expect("stalled");
        assert_eq!(
            (alert.kind, alert.ranks.clone()),
            (AlertKind::Stalled, vec![1])
        );
        assert!(
            alert
                .message
                .ends_with("Rank 1 stopped first, at step 22: look at it first."),
            "{}",
            alert.message
        );
        // While rank 0 still wrote (at 29 s, now 55 s), rank 1 alone was behind and silent.
        let alert = pace_of(&run, t0 + 55_000).stall.expect("rank 1 behind");
        assert_eq!(
            (alert.kind, alert.ranks.clone()),
            (AlertKind::RankStalled, vec![1])
        );
        assert!(
            alert.message.starts_with(
                "Rank 1 has printed nothing for 33s, stuck at step 22 while rank 0 is at step 29"
            ),
            "{}",
            alert.message
        );
    }

    #[test]
    fn an_ended_run_has_progress_and_no_stall() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = now() - 600_000;
        let mut run = run(dir.path(), t0, LOCKSTEP, [t0 + 24_000, t0 + 24_000]);
        run.record.state = RunState::Failed;
        run.record.ended_ms = Some(t0 + 30_000);
        let report = pace_of(&run, now());
        assert_eq!(report.stall, None);
        assert_eq!(report.progress.and_then(|p| p.step), Some(20));
    }
}
