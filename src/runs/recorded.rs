//! What a run recorded, and reading it back. The supervisor's per-second GPU samples
//! (`sampler` writes `metrics.csv`, `samples` reads it) and the Xids its GPUs reported
//! (`xid_record`; the kernel log's (`xid_log`) and whose fault they were (`xids`)); the summaries
//! and alerts they add up to (`summary`, kept by `saved_summary`); and, here, a run's directory
//! read back: its GPU metrics, the summary they add up to, the spec it was started from, and the
//! training progress in rank 0's logs.

pub(super) mod sampler;
pub mod samples;
pub(super) mod saved_summary;
pub mod summary;
pub mod xid_log;
pub(super) mod xid_record;
pub mod xids;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::UNIX_EPOCH;

use super::progress::ProgressTracker;
use crate::runs::error::RunError;
use crate::runs::record::{RunRecord, RunState};
use crate::runs::recorded::sampler::METRICS_FILE;
use crate::runs::spec::RunSpec;
use crate::runs::store::{LogStream, Run, SPEC_FILE};
use samples::{read_csv_skipping, MetricsRead, MetricsRow, SkippedLines};
use summary::{summarize, RunSummary};

/// Why a log the supervisor created is not there.
pub(crate) const LOG_GONE: &str = "it was deleted or moved after the rank started, and its \
                                   output with it";

/// Longer log lines are not progress output and are skipped when reading progress.
const MAX_LINE_BYTES: usize = 64 * 1024;

impl Run {
    /// `metrics.csv`: every complete row (a line torn by a crash is dropped), or None when the
    /// run has no metrics file (not started yet, started by an older gpudeck, or the GPU source
    /// could not be opened: see `record.metrics_error`).
    pub fn metrics(&self) -> Result<Option<Vec<MetricsRow>>, RunError> {
        Ok(self.read_metrics()?.map(|read| read.rows))
    }

    /// `metrics.csv` as [`metrics`](Self::metrics) reads it, with the bad lines inside it that
    /// were skipped, counted.
    pub fn read_metrics(&self) -> Result<Option<MetricsRead>, RunError> {
        let path = self.dir.join(METRICS_FILE);
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(RunError::store(&path, e)),
        };
        // A file created but not yet given its header reads as having no rows.
        if text.is_empty() {
            return Ok(Some(MetricsRead::default()));
        }
        read_csv_skipping(&text)
            .map(Some)
            .map_err(|e| RunError::BadMetrics {
                path,
                why: e.to_string(),
            })
    }

    /// What `skipped` says of this run's metrics file, for a warning.
    pub fn skipped_text(&self, skipped: &SkippedLines) -> Option<String> {
        skipped.describe(&self.dir.join(METRICS_FILE).display().to_string())
    }

    /// The run's summary from its metrics, up to `now_ms` for a live run; None without metrics.
    pub fn summary(&self, now_ms: u64) -> Result<Option<RunSummary>, RunError> {
        Ok(self.summary_and_skipped(now_ms)?.0)
    }

    /// The summary, and what was skipped reading the metrics (see [`Run::skipped_text`]).
    fn summary_and_skipped(
        &self,
        now_ms: u64,
    ) -> Result<(Option<RunSummary>, SkippedLines), RunError> {
        let Some(read) = self.read_metrics()? else {
            return Ok((None, SkippedLines::default()));
        };
        let summary = summary_of(&self.record, self.state(), &read.rows, now_ms);
        Ok((summary, read.skipped))
    }

    /// When a run that ended unrecorded (lost) was last seen at work: its last metrics sample
    /// or the last write to a rank's log, whichever is later; its start without either.
    pub fn last_evidence_ms(&self, last_sample_ms: Option<i64>) -> Option<u64> {
        let started = self.record.started_ms?;
        let last_log = (0..self.record.log_ranks())
            .flat_map(|rank| [LogStream::Stdout, LogStream::Stderr].map(|s| self.log_path(rank, s)))
            .filter_map(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
            .filter_map(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64)
            .max();
        let last_sample = last_sample_ms.and_then(|t| u64::try_from(t).ok());
        Some(last_log.max(last_sample).unwrap_or(started).max(started))
    }

    /// How long it ran: to its recorded end, to its last evidence when it was lost (a lost run
    /// does not go on counting), or to `now_ms` while it runs. `summary` is its summary, whose
    /// end is a lost run's last sample.
    pub fn duration_ms(&self, summary: Option<&RunSummary>, now_ms: u64) -> Option<u64> {
        let start = self.record.started_ms?;
        let end = match (self.record.ended_ms, self.state()) {
            (Some(ended), _) => ended,
            (None, RunState::Lost) => self
                .last_evidence_ms(summary.map(|s| s.ended_ms))
                .unwrap_or(start),
            (None, _) => now_ms,
        };
        Some(end.saturating_sub(start))
    }

    /// Whether the supervisor has created rank `rank`'s log files: it does as it starts the
    /// rank, so after that a missing log was deleted or moved. (A Slurm job's logs are written
    /// on its node, whenever it starts there; a torchrun worker's when torchrun starts it.)
    pub fn logs_created(&self, rank: usize) -> bool {
        if !self.record.backend.has_supervisor_here() {
            return false;
        }
        if self.record.torchrun_workers.is_some() {
            // Linked by the supervisor once torchrun has written the worker's files.
            return std::fs::symlink_metadata(self.log_path(rank, LogStream::Stdout)).is_ok();
        }
        match &self.record.container {
            None => self.record.ranks.get(rank).is_some_and(|r| r.pid.is_some()),
            Some(_) => self.record.started_ms.is_some() && rank < self.record.ranks.len(),
        }
    }

    /// A warning for each of rank `rank`'s logs that the supervisor created and that is gone,
    /// naming the file.
    pub fn missing_logs(&self, rank: usize) -> Vec<String> {
        if !self.logs_created(rank) {
            return Vec::new();
        }
        [LogStream::Stdout, LogStream::Stderr]
            .into_iter()
            .map(|stream| self.log_path(rank, stream))
            .filter(|path| !path.exists())
            .map(|path| format!("{} is gone: {}", path.display(), LOG_GONE))
            .collect()
    }

    /// The spec the run was started from: its `spec.toml`, flags applied, as stored (a relative
    /// work dir in it was relative to where `gpudeck run` ran; `record.workdir` is what it meant).
    pub fn spec(&self) -> Result<RunSpec, RunError> {
        let path = self.dir.join(SPEC_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| RunError::store(&path, e))?;
        RunSpec::parse(&path.display().to_string(), &text)
    }

    /// The training progress in rank 0's stdout then stderr, `points` points at most per scalar.
    pub fn progress(&self, points: usize) -> Result<ProgressTracker, RunError> {
        let mut tracker = ProgressTracker::with_points(points);
        for stream in [LogStream::Stdout, LogStream::Stderr] {
            feed_file(&mut tracker, &self.log_path(0, stream))?;
        }
        Ok(tracker)
    }
}

/// Each run with its summary up to `now_ms` (None without metrics), and a warning for each run
/// whose metrics could not be read or had bad lines skipped. An ended run's saved summary is
/// taken as it is.
pub fn with_summaries(
    runs: Vec<Run>,
    now_ms: u64,
) -> (Vec<(Run, Option<RunSummary>)>, Vec<String>) {
    let mut warnings = Vec::new();
    let listed = runs
        .into_iter()
        .map(|run| {
            let summary = match run.saved_summary() {
                Some(saved) => saved,
                None => match run.summary_and_skipped(now_ms) {
                    Ok((summary, skipped)) => {
                        warnings.extend(run.skipped_text(&skipped));
                        summary
                    }
                    Err(e) => {
                        warnings.push(e.to_string());
                        None
                    }
                },
            };
            (run, summary)
        })
        .collect();
    (listed, warnings)
}

/// The summary of `rows` for a run in `state`: from its start to its end, to `now_ms` while it
/// runs, or to its last sample when it ended unrecorded (lost). None before it started or
/// without a single row.
pub fn summary_of(
    record: &RunRecord,
    state: RunState,
    rows: &[MetricsRow],
    now_ms: u64,
) -> Option<RunSummary> {
    let started = record.started_ms?;
    let last_row = rows.iter().map(|r| r.t_unix_ms).max()?;
    let ended = match (record.ended_ms, state) {
        (Some(ended), _) => ended as i64,
        (None, RunState::Running | RunState::Starting) => now_ms as i64,
        (None, _) => last_row,
    };
    let gpus = record.summary_gpus(rows.iter().map(|r| r.gpu_index));
    let mut summary = summarize(rows, started as i64, ended, &gpus);
    summary.lost_gpus = record.lost_gpus.clone();
    Some(summary)
}

/// Feeds a log to the tracker one line at a time, a line ending at `\n` or at a progress bar's
/// `\r`, so a bar redrawn for hours without a newline never has to fit in memory.
fn feed_file(tracker: &mut ProgressTracker, path: &Path) -> Result<(), RunError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(RunError::store(path, e)),
    };
    for_each_line(BufReader::new(file), |line| {
        tracker.feed_bytes(line);
    })
    .map_err(|e| RunError::store(path, e))
}

/// Calls `each` with every line of `reader`, split at `\n` and `\r`; a line longer than
/// MAX_LINE_BYTES (no progress line is) is skipped whole, never held in memory beyond that.
fn for_each_line(mut reader: impl BufRead, mut each: impl FnMut(&[u8])) -> std::io::Result<()> {
    let mut line = Vec::new();
    let mut overlong = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let (used, ended) = match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) => (i + 1, Some(i)),
            None => (chunk.len(), None),
        };
        let part = &chunk[..ended.unwrap_or(used)];
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        overlong |= part.len() > room;
        line.extend_from_slice(&part[..part.len().min(room)]);
        reader.consume(used);
        if ended.is_some() {
            if !overlong {
                each(&line);
            }
            line.clear();
            overlong = false;
        }
    }
    if !line.is_empty() && !overlong {
        each(&line);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Tests of reading a run's records back: metrics with a torn last line, the summary's window
    //! for each state, progress from logs (bars redrawn with `\r`, overlong lines) and the spec.

    use super::*;
    use crate::runs::record::RUN_SCHEMA;
    use crate::runs::recorded::samples::{csv_line, CSV_HEADER};
    use crate::runs::spec::Launcher;

    fn record(state: RunState, started: Option<u64>, ended: Option<u64>) -> RunRecord {
        let value = serde_json::json!({
            "schema": RUN_SCHEMA, "id": "r", "name": "r", "launcher": Launcher::Single,
            "workdir": "/w", "host": "h", "ranks": [], "state": state, "created_ms": 0,
            "started_ms": started, "ended_ms": ended,
            "gpus": [{"index": 3, "uuid": "GPU-3", "name": "H100"}],
        });
        serde_json::from_value(value).expect("a record")
    }

    fn row(t: i64, util: u32) -> MetricsRow {
        MetricsRow {
            t_unix_ms: t,
            gpu_index: 3,
            gpu_uuid: "GPU-3".into(),
            util_pct: Some(util),
            mem_used_bytes: Some(1 << 30),
            mem_total_bytes: Some(80 << 30),
            power_w: Some(100.0),
            temp_c: Some(50),
            sm_clock_mhz: Some(1400),
        }
    }

    /// A busy second, then an idle one: half busy over two seconds.
    fn half_busy() -> Vec<MetricsRow> {
        vec![row(11_000, 90), row(12_000, 0)]
    }

    fn run_in(dir: &Path, record: RunRecord) -> Run {
        Run {
            dir: dir.to_path_buf(),
            record,
        }
    }

    #[test]
    fn a_finished_run_is_summarised_from_its_start_to_its_end() {
        let rec = record(RunState::Succeeded, Some(10_000), Some(12_000));
        let summary = summary_of(&rec, RunState::Succeeded, &half_busy(), 99_000).expect("summary");
        assert_eq!((summary.started_ms, summary.ended_ms), (10_000, 12_000));
        assert_eq!(summary.gpu_seconds_allocated, 2.0);
        assert_eq!(summary.busy_ratio, Some(0.5));
        assert_eq!(summary.gpus[0].gpu_index, 3);
    }

    #[test]
    fn a_live_run_ends_now_and_a_lost_one_at_its_last_sample() {
        let rec = record(RunState::Running, Some(10_000), None);
        let live = summary_of(&rec, RunState::Running, &half_busy(), 14_000).expect("summary");
        assert_eq!(live.ended_ms, 14_000);
        let lost = summary_of(&rec, RunState::Lost, &half_busy(), 14_000).expect("summary");
        assert_eq!(lost.ended_ms, 12_000);
    }

    #[test]
    fn no_start_or_no_rows_is_no_summary() {
        let unstarted = record(RunState::Starting, None, None);
        assert_eq!(
            summary_of(&unstarted, RunState::Starting, &half_busy(), 1),
            None
        );
        let rec = record(RunState::Succeeded, Some(10_000), Some(12_000));
        assert_eq!(summary_of(&rec, RunState::Succeeded, &[], 1), None);
    }

    #[test]
    fn metrics_keep_complete_rows_and_drop_a_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(
            dir.path(),
            record(RunState::Succeeded, Some(10_000), Some(12_000)),
        );
        assert!(run.metrics().unwrap().is_none(), "no file, no metrics");
        assert!(run.summary(0).unwrap().is_none());
        let rows = half_busy();
        let mut text = format!(
            "{CSV_HEADER}\n{}\n{}\n",
            csv_line(&rows[0]),
            csv_line(&rows[1])
        );
        text.push_str("13000,3,GPU-3,4");
        std::fs::write(dir.path().join(METRICS_FILE), &text).unwrap();
        assert_eq!(run.metrics().unwrap(), Some(rows));
        assert_eq!(
            run.summary(0).unwrap().and_then(|s| s.busy_ratio),
            Some(0.5)
        );

        std::fs::write(dir.path().join(METRICS_FILE), "not,a,metrics,file\n1,2\n").unwrap();
        let err = run.metrics().unwrap_err();
        assert!(matches!(err, RunError::BadMetrics { .. }), "{err}");
        assert!(
            err.to_string().contains("has no `t_unix_ms` column"),
            "{err}"
        );
    }

    #[test]
    fn lines_split_at_newlines_and_carriage_returns_and_overlong_ones_are_skipped() {
        let long = "x".repeat(MAX_LINE_BYTES + 1);
        let text = format!("a\nb\rc\r\n{long}\nd\n{long}");
        let mut lines = Vec::new();
        // A reader that hands out 7 bytes at a time, so lines cross its buffer.
        let reader = BufReader::with_capacity(7, text.as_bytes());
        for_each_line(reader, |l| {
            lines.push(String::from_utf8_lossy(l).into_owned())
        })
        .unwrap();
        assert_eq!(lines, ["a", "b", "c", "", "d"]);
    }

    #[test]
    fn progress_comes_from_rank_0s_stdout_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(dir.path(), record(RunState::Running, Some(0), None));
        std::fs::write(
            run.log_path(0, LogStream::Stdout),
            "step=1 loss=2.0\nstep=2 loss=1.5\n",
        )
        .unwrap();
        std::fs::write(run.log_path(0, LogStream::Stderr), "step=3 loss=1.0\n").unwrap();
        std::fs::write(run.log_path(1, LogStream::Stdout), "step=9 loss=9.0\n").unwrap();
        let tracker = run.progress(64).unwrap();
        assert_eq!(tracker.series("loss"), [(1.0, 2.0), (2.0, 1.5), (3.0, 1.0)]);
        assert_eq!(tracker.latest().and_then(|e| e.step), Some(3));
    }

    #[test]
    fn the_spec_is_read_back_as_stored() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(dir.path(), record(RunState::Succeeded, Some(0), Some(1)));
        std::fs::write(
            dir.path().join(SPEC_FILE),
            "command = [\"python\", \"t.py\"]\ngpus = \"0,1\"\nlauncher = \"per-gpu\"\n",
        )
        .unwrap();
        let spec = run.spec().unwrap();
        assert_eq!(spec.command, ["python", "t.py"]);
        assert_eq!(spec.gpus.to_string(), "0,1");
        assert_eq!(spec.launcher, Launcher::PerGpu);
        assert_eq!(spec.workdir, None);
    }
}
