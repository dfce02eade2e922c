//! `summary.json`: an ended run's summary, written once when it ends so that readers (the
//! dashboard, `gpudeck runs`) need not add its metrics up again; ignored when it no longer
//! matches the run (another end, a metrics file of another length).

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::summary::RunSummary;
use crate::runs::error::RunError;
use crate::runs::recorded::sampler::METRICS_FILE;
use crate::runs::store::{write_atomic, Run};

/// The file holding an ended run's summary.
pub const SUMMARY_FILE: &str = "summary.json";
/// The JSON schema id of `summary.json`.
pub const SUMMARY_SCHEMA: &str = "gpudeck.summary/v1";

#[derive(Debug, Serialize, Deserialize)]
struct SavedSummary {
    schema: String,
    /// The end the summary covers.
    ended_ms: u64,
    /// The length of `metrics.csv` it was made from (None: the run had none).
    metrics_bytes: Option<u64>,
    /// None: the run recorded no metrics.
    summary: Option<RunSummary>,
}

fn metrics_bytes(dir: &Path) -> Result<Option<u64>, RunError> {
    let path = dir.join(METRICS_FILE);
    match fs::metadata(&path) {
        Ok(meta) => Ok(Some(meta.len())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RunError::store(&path, e)),
    }
}

/// Writes an ended run's `summary.json` from its metrics; a run not ended yet gets none.
pub fn save_summary(run: &Run) -> Result<(), RunError> {
    let Some(ended_ms) = run
        .record
        .ended_ms
        .filter(|_| run.record.state.is_finished())
    else {
        return Ok(());
    };
    let before = metrics_bytes(&run.dir)?;
    let summary = run.summary(ended_ms)?;
    let saved = SavedSummary {
        schema: SUMMARY_SCHEMA.into(),
        ended_ms,
        metrics_bytes: before,
        summary,
    };
    let path = run.dir.join(SUMMARY_FILE);
    let text = serde_json::to_vec_pretty(&saved).map_err(|e| RunError::store(&path, e))?;
    write_atomic(&run.dir, SUMMARY_FILE, &text)
}

/// Called by the supervisor once the run's end is written: saves the summary of the run as
/// recorded in `dir`; a failure only costs readers the time to add the metrics up themselves.
pub(crate) fn save_after_end(dir: &Path) {
    if let Err(e) = Run::open(dir).and_then(|run| save_summary(&run)) {
        errln!("gpudeck supervisor: the run's summary.json was not written: {e}");
    }
}

impl Run {
    /// The summary saved when the run ended, if it still describes the run: Some(None) for a
    /// run that recorded no metrics, None when there is no such file or it is out of date.
    pub fn saved_summary(&self) -> Option<Option<RunSummary>> {
        let ended_ms = self
            .record
            .ended_ms
            .filter(|_| self.record.state.is_finished())?;
        let text = fs::read(self.dir.join(SUMMARY_FILE)).ok()?;
        let saved: SavedSummary = serde_json::from_slice(&text).ok()?;
        let current = metrics_bytes(&self.dir).ok()?;
        (saved.schema == SUMMARY_SCHEMA
            && saved.ended_ms == ended_ms
            && saved.metrics_bytes == current)
            .then_some(saved.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::record::{RunRecord, RunState};
    use crate::runs::recorded::samples::{csv_line, MetricsRow, CSV_HEADER};
    use crate::runs::recorded::with_summaries;
    use crate::runs::spec::Launcher;

    fn ended(dir: &Path, state: RunState) -> Run {
        let mut record = RunRecord::starting(
            "r".into(),
            "r".into(),
            Launcher::Single,
            "/w".into(),
            "h".into(),
            9_000,
        );
        record.gpus = vec![crate::runs::RunGpu {
            index: 3,
            uuid: "GPU-3".into(),
            name: "H100".into(),
        }];
        record.state = state;
        record.started_ms = Some(10_000);
        record.ended_ms = Some(14_000);
        Run {
            dir: dir.to_path_buf(),
            record,
        }
    }

    fn write_metrics(dir: &Path, utils: &[u32]) {
        let mut text = format!("{CSV_HEADER}\n");
        for (i, util) in utils.iter().enumerate() {
            let row = MetricsRow {
                t_unix_ms: 11_000 + i as i64 * 1000,
                gpu_index: 3,
                gpu_uuid: "GPU-3".into(),
                util_pct: Some(*util),
                mem_used_bytes: Some(1 << 30),
                mem_total_bytes: Some(80 << 30),
                power_w: Some(100.0),
                temp_c: Some(50),
                sm_clock_mhz: Some(1400),
            };
            text.push_str(&csv_line(&row));
            text.push('\n');
        }
        fs::write(dir.join(METRICS_FILE), text).unwrap();
    }

    #[test]
    fn an_ended_runs_summary_is_saved_and_read_back_as_computed() {
        let dir = tempfile::tempdir().unwrap();
        let run = ended(dir.path(), RunState::Succeeded);
        write_metrics(dir.path(), &[90, 0, 90]);
        save_summary(&run).unwrap();
        let computed = run.summary(99_000).unwrap();
        assert!(computed.is_some());
        assert_eq!(run.saved_summary(), Some(computed));
    }

    #[test]
    fn a_saved_summary_that_no_longer_matches_the_run_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let run = ended(dir.path(), RunState::Failed);
        write_metrics(dir.path(), &[90, 0]);
        save_summary(&run).unwrap();
        write_metrics(dir.path(), &[90, 0, 50]);
        assert_eq!(run.saved_summary(), None, "metrics of another length");
        save_summary(&run).unwrap();
        assert!(run.saved_summary().is_some());
        let mut other_end = run.clone();
        other_end.record.ended_ms = Some(15_000);
        assert_eq!(other_end.saved_summary(), None, "another end");
        fs::write(dir.path().join(SUMMARY_FILE), "{").unwrap();
        assert_eq!(run.saved_summary(), None, "a torn file");
    }

    #[test]
    fn a_run_without_metrics_saves_that_it_has_none_and_a_live_run_saves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let run = ended(dir.path(), RunState::Stopped);
        save_summary(&run).unwrap();
        assert_eq!(run.saved_summary(), Some(None));
        let live_dir = tempfile::tempdir().unwrap();
        let mut live = ended(live_dir.path(), RunState::Running);
        live.record.ended_ms = None;
        save_summary(&live).unwrap();
        assert!(!live_dir.path().join(SUMMARY_FILE).exists());
    }

    #[test]
    fn the_runs_listing_takes_an_ended_runs_saved_summary_without_reading_its_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let run = ended(dir.path(), RunState::Succeeded);
        write_metrics(dir.path(), &[90, 0, 90]);
        save_summary(&run).unwrap();
        let expected = run.saved_summary().expect("saved");
        // Same length, not a metrics file any more: reading it would warn and give no summary.
        let len = fs::metadata(dir.path().join(METRICS_FILE)).unwrap().len();
        fs::write(dir.path().join(METRICS_FILE), "x".repeat(len as usize)).unwrap();
        let (listed, warnings) = with_summaries(vec![run], 99_000);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(listed[0].1, expected);
    }
}
