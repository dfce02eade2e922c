//! `summary.json`: an ended run's summary, written once when it ends so that readers (the
//! dashboard, `gpudeck runs`) need not add its metrics up again; ignored when it no longer
//! matches the run (another end, a metrics file of another length).

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::summary::RunSummary;
use crate::runs::error::RunError;
use crate::runs::local::sampler::METRICS_FILE;
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
#[path = "saved_summary_tests.rs"]
mod tests;
