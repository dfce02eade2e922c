//! What the runs collector follows in a run's files: its metrics for the summary, its metrics and
//! progress for the run in focus, and one rank's logs; each reads a bounded amount per look.

use std::collections::{BTreeMap, VecDeque};

use crate::runs::clock;
use crate::runs::progress::{curve_name, ProgressTracker};
use crate::runs::record::RunState;
use crate::runs::recorded::sampler::METRICS_FILE;
use crate::runs::recorded::samples::{MetricsRow, RowReader, SkippedLines};
use crate::runs::recorded::summary::{all_idle, stall, straggler, RunSummary, SummaryBuilder};
use crate::runs::recorded::LOG_GONE;
use crate::runs::series::Series;
use crate::runs::store::{LogStream, Run};
use crate::runs::watch::pace::PaceFeed;
use crate::runs::watch::tail::Follower;
use crate::runs::watch::update::{GpuTrace, LogChunk, ProgressView, RunDetail};

/// Metrics read per look and run: a day of 8 GPUs is caught up with in a few seconds.
const METRICS_CHUNK: u64 = 4 << 20;
/// Less than this is not read (a metrics line is ~100 bytes; the follower passes over a line
/// longer than a whole read).
const MIN_METRICS_READ: u64 = 64 << 10;
/// Metrics read per look over all the runs listed, so that a store of many long runs is
/// summarised over a few seconds at start rather than in one long look.
pub const SUMMARY_BUDGET: u64 = 16 << 20;
/// Log bytes parsed for progress per look, per stream.
const PROGRESS_CHUNK: u64 = 8 << 20;
/// A rank's log shown from its last this many bytes, and at most this much of what is new.
const LOG_TAIL: u64 = 256 << 10;
const LOG_CHUNK: u64 = 1 << 20;
/// Points per GPU metric in the run's graphs (a wide terminal's braille chart shows fewer).
const TRACE_POINTS: usize = 512;
/// Recent metrics kept for the alerts: longer than the longest alert's window.
const RECENT_MS: i64 = 180_000;

/// A run's metrics file read as rows, a bounded chunk at a time.
#[derive(Debug)]
struct MetricsFeed {
    follower: Follower,
    reader: Option<RowReader>,
    error: Option<String>,
    /// Lines that were not rows, skipped and counted as `gpudeck runs` does.
    skipped: SkippedLines,
}

impl MetricsFeed {
    fn new(run: &Run) -> Self {
        Self {
            follower: Follower::from_start(&run.dir.join(METRICS_FILE)),
            reader: None,
            error: None,
            skipped: SkippedLines::default(),
        }
    }

    /// What is wrong with the file: why it cannot be read, or the bad lines skipped (in the
    /// words of `gpudeck runs`).
    fn problem(&self) -> Option<String> {
        self.error.clone().or_else(|| {
            self.skipped
                .describe(&self.follower.path().display().to_string())
        })
    }

    /// The rows appended since the last look (at most `max_bytes` of them), the bytes read, and
    /// whether the file was read to its end.
    fn read(&mut self, max_bytes: u64) -> (Vec<MetricsRow>, u64, bool) {
        // A read shorter than a line would pass the line over as too long: wait for the next look.
        if max_bytes < MIN_METRICS_READ {
            return (Vec::new(), 0, false);
        }
        let appended = match self.follower.read_next(max_bytes) {
            Ok(a) => a,
            Err(e) => {
                self.error = Some(format!("{}: {e}", self.follower.path().display()));
                return (Vec::new(), 0, true);
            }
        };
        let used = appended.data.len() as u64 + appended.skipped;
        if appended.restarted {
            self.reader = None;
            self.skipped = SkippedLines::default();
        }
        let mut rows = Vec::new();
        for line in appended.lines() {
            let line = String::from_utf8_lossy(line);
            let Some(reader) = self.reader.as_mut() else {
                match RowReader::from_header(&line) {
                    Ok(r) => self.reader = Some(r),
                    Err(e) => self.error = Some(e.to_string()),
                }
                continue;
            };
            match reader.row(&line) {
                Some(Ok(row)) => rows.push(row),
                Some(Err(e)) => self.skipped.add(&e),
                None => {}
            }
        }
        (rows, used, appended.at_end)
    }
}

/// A run's summary for the list, kept current; frozen once the run has ended and been read.
#[derive(Debug)]
pub struct SummaryFeed {
    metrics: MetricsFeed,
    builder: Option<SummaryBuilder>,
    seen_rows: bool,
    /// The file has been read to its end once: the summary covers the run so far.
    caught_up: bool,
    done: Option<Option<RunSummary>>,
}

impl SummaryFeed {
    pub fn new(run: &Run) -> Self {
        Self {
            metrics: MetricsFeed::new(run),
            builder: None,
            seen_rows: false,
            caught_up: false,
            done: None,
        }
    }

    /// The summary as of `now_ms`, reading at most `budget` bytes of metrics (and taking what it
    /// read off it); None while the run has no metrics, or has not been read to its end yet.
    pub fn update(&mut self, run: &Run, now_ms: u64, budget: &mut u64) -> Option<RunSummary> {
        if let Some(done) = &self.done {
            return done.clone();
        }
        if !self.seen_rows && !self.caught_up && run.record.state.is_finished() {
            // An ended run's summary saved when it ended spares reading its metrics at all; an
            // ended run without metrics will never have any.
            let saved = run.saved_summary().or_else(|| {
                let none =
                    run.record.started_ms.is_none() || !self.metrics.follower.path().exists();
                none.then_some(None)
            });
            if let Some(saved) = saved {
                self.done = Some(saved.clone());
                return saved;
            }
        }
        let started = run.record.started_ms?;
        let builder = self
            .builder
            .get_or_insert_with(|| SummaryBuilder::new(started as i64));
        let (rows, used, at_end) = self.metrics.read((*budget).min(METRICS_CHUNK));
        *budget = budget.saturating_sub(used);
        self.caught_up |= at_end;
        self.seen_rows |= !rows.is_empty();
        for row in rows {
            builder.push(row);
        }
        let state = run.state();
        // A lost run ends at its last sample, as `summary_of` has it: it does not go on idling.
        let ended = match (run.record.ended_ms, state) {
            (Some(ended), _) => ended as i64,
            (None, RunState::Lost) => builder.last_ms().unwrap_or(now_ms as i64),
            (None, _) => now_ms as i64,
        };
        let gpus = run.record.summary_gpus(builder.gpus_seen());
        // Half a file's rows against the whole run's length would read as an idle run.
        let summary = (self.seen_rows && self.caught_up).then(|| {
            let mut summary = builder.summary(ended, &gpus);
            summary.lost_gpus = run.record.lost_gpus.clone();
            summary
        });
        if state.is_finished() && at_end {
            self.done = Some(summary.clone());
        }
        summary
    }

    /// Whether the summary is final (the run ended and its metrics were read to their end).
    pub fn is_done(&self) -> bool {
        self.done.is_some()
    }

    /// The bad lines of the run's metrics skipped so far, or why they cannot be read.
    pub fn problem(&self) -> Option<String> {
        self.metrics.problem()
    }
}

/// One GPU's downsampled history.
#[derive(Debug, Default)]
struct TraceSeries {
    util: Series,
    mem: Series,
    power: Series,
}

/// The run in focus: its metrics as graphs and alerts, its progress from rank 0's output.
#[derive(Debug)]
pub struct FocusFeed {
    run: Run,
    metrics: MetricsFeed,
    traces: BTreeMap<u32, TraceSeries>,
    recent: VecDeque<MetricsRow>,
    progress: ProgressTracker,
    outputs: [Follower; 2],
    /// Every rank's pace, for the stall alerts.
    pace: PaceFeed,
}

impl FocusFeed {
    pub fn new(run: Run) -> Self {
        // Progress bars redraw with `\r`; each redraw is read as a line, as `Run::progress` does.
        let outputs = [
            Follower::from_start(&run.log_path(0, LogStream::Stdout)).ending_at_cr(),
            Follower::from_start(&run.log_path(0, LogStream::Stderr)).ending_at_cr(),
        ];
        Self {
            metrics: MetricsFeed::new(&run),
            traces: BTreeMap::new(),
            recent: VecDeque::new(),
            progress: ProgressTracker::new(),
            outputs,
            pace: PaceFeed::new(&run, usize::MAX),
            run,
        }
    }

    pub fn id(&self) -> &str {
        self.run.id()
    }

    /// Reads what is new and describes the run.
    pub fn update(&mut self) -> RunDetail {
        if let Ok(run) = self.run.reload() {
            self.run = run;
        }
        self.read_metrics();
        self.read_progress();
        let gpus = (self.run.record).summary_gpus(self.traces.keys().copied());
        let alerts = if self.run.state() == RunState::Running {
            let recent: Vec<MetricsRow> = self.recent.iter().cloned().collect();
            let started = self.run.record.started_ms.map(|s| s as i64);
            let stalled = started.and_then(|started| {
                stall(&self.pace.read(), started, clock::now_ms() as i64, &gpus)
            });
            [straggler(&recent, &gpus), all_idle(&recent, &gpus), stalled]
                .into_iter()
                .flatten()
                .collect()
        } else {
            Vec::new()
        };
        RunDetail {
            id: self.run.id().to_string(),
            gpus: self.traces(),
            progress: self.progress_view(),
            alerts,
            metrics_error: self.metrics.problem(),
        }
    }

    fn read_metrics(&mut self) {
        let started = self
            .run
            .record
            .started_ms
            .unwrap_or(self.run.record.created_ms) as i64;
        let (rows, _, _) = self.metrics.read(METRICS_CHUNK);
        for row in rows {
            let x = (row.t_unix_ms - started) as f64 / 1000.0;
            let trace = self.traces.entry(row.gpu_index).or_default();
            if let Some(u) = row.util_pct {
                trace.util.push(TRACE_POINTS, (x, f64::from(u)));
            }
            if let (Some(used), Some(total)) = (row.mem_used_bytes, row.mem_total_bytes) {
                if total > 0 {
                    trace
                        .mem
                        .push(TRACE_POINTS, (x, used as f64 * 100.0 / total as f64));
                }
            }
            if let Some(p) = row.power_w {
                trace.power.push(TRACE_POINTS, (x, p));
            }
            self.recent.push_back(row);
        }
        let newest = self.recent.back().map_or(0, |r| r.t_unix_ms);
        while self
            .recent
            .front()
            .is_some_and(|r| newest - r.t_unix_ms > RECENT_MS)
        {
            self.recent.pop_front();
        }
    }

    fn read_progress(&mut self) {
        for output in &mut self.outputs {
            let Ok(appended) = output.read_next(PROGRESS_CHUNK) else {
                continue;
            };
            for line in appended.lines() {
                self.progress.feed_bytes(line);
            }
        }
    }

    fn traces(&self) -> Vec<GpuTrace> {
        self.traces
            .iter()
            .map(|(&index, t)| GpuTrace {
                index,
                util_pct: t.util.points().to_vec(),
                mem_pct: t.mem.points().to_vec(),
                power_w: t.power.points().to_vec(),
            })
            .collect()
    }

    fn progress_view(&self) -> ProgressView {
        let names: Vec<&str> = self.progress.scalar_names().collect();
        let curve =
            curve_name(&names).map(|name| (name.to_string(), self.progress.series(name).to_vec()));
        ProgressView {
            latest: self.progress.latest().cloned(),
            curve,
            last_values: names
                .iter()
                .filter_map(|n| self.progress.last_value(n).map(|v| (n.to_string(), v)))
                .collect(),
            non_finite: self.progress.non_finite_count(),
        }
    }
}

/// One rank's stdout and stderr, from their tails, as they grow.
#[derive(Debug)]
pub struct LogFeed {
    id: String,
    rank: usize,
    outputs: [Follower; 2],
    first: bool,
    /// The supervisor created the logs (so a missing one was deleted), and which of them have
    /// been said to be gone.
    created: bool,
    told_gone: [bool; 2],
}

impl LogFeed {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn new(run: &Run, rank: usize) -> Self {
        Self {
            id: run.id().to_string(),
            rank,
            outputs: [
                Follower::from_tail(&run.log_path(rank, LogStream::Stdout), LOG_TAIL),
                Follower::from_tail(&run.log_path(rank, LogStream::Stderr), LOG_TAIL),
            ],
            first: true,
            created: run.logs_created(rank),
            told_gone: [false; 2],
        }
    }

    /// What is new since the last look; None when nothing is (after the first look).
    pub fn read(&mut self) -> Option<LogChunk> {
        let mut chunk = LogChunk {
            id: self.id.clone(),
            rank: self.rank,
            lines: Vec::new(),
            reset: std::mem::take(&mut self.first),
            skipped: 0,
        };
        let outputs = self.outputs.iter_mut().zip(&mut self.told_gone);
        for (is_err, (output, told)) in [false, true].into_iter().zip(outputs) {
            if self.created && !*told && !output.path().exists() {
                // Said once, in the words of `gpudeck logs`, where its output would be.
                *told = true;
                let path = output.path().display();
                chunk
                    .lines
                    .push((true, format!("{path} is gone: {LOG_GONE}")));
            }
            let Ok(appended) = output.read_new(LOG_CHUNK) else {
                continue;
            };
            chunk.reset |= appended.restarted;
            chunk.skipped += appended.skipped;
            chunk
                .lines
                .extend(appended.lines().map(|l| (is_err, display_line(l))));
        }
        (chunk.reset || !chunk.lines.is_empty()).then_some(chunk)
    }
}

/// A log line as a screen shows it: a progress bar redrawn with `\r` shows its last state.
fn display_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.rsplit('\r')
        .find(|part| !part.trim().is_empty())
        .unwrap_or("")
        .to_string()
}
