//! Exporting a run: its GPU metrics as CSV, or one JSON document (schema `gpudeck.export/v1`)
//! with its record, summary, metrics and the training progress parsed from rank 0's logs.

use std::path::PathBuf;

use serde::Serialize;

use super::error::RunError;
use super::metrics::{csv_line, MetricsRow, CSV_HEADER};
use super::progress::{ProgressEvent, ProgressTracker};
use super::record::{RunRecord, RunState};
use super::recorded::summary_of;
use super::store::Run;
use super::summary::RunSummary;
use crate::secrets::Secrets;

/// The JSON schema id of `gpudeck export --format json`.
pub const EXPORT_SCHEMA: &str = "gpudeck.export/v1";
/// Points kept per training scalar in an export; longer series are evenly downsampled.
pub const EXPORT_POINTS_PER_SCALAR: usize = 16_384;

/// The formats `gpudeck export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// The metrics rows: the header and every complete row of `metrics.csv`.
    Csv,
    /// One document: record, summary, metrics and training progress.
    Json,
}

/// `gpudeck export --format json`.
#[derive(Debug, Serialize)]
pub struct RunExport {
    pub schema: &'static str,
    /// `run.json`, with the state as a reader derives it (`lost`).
    pub run: RunRecord,
    pub dir: PathBuf,
    pub summary: Option<RunSummary>,
    pub progress: ProgressExport,
    pub metrics: Vec<MetricsRow>,
}

/// Training progress parsed from rank 0's stdout, then its stderr.
#[derive(Debug, Serialize)]
pub struct ProgressExport {
    /// The latest step, epoch and totals, with the scalars of the last line that had any.
    pub latest: Option<ProgressEvent>,
    /// Each scalar (loss, accuracy, ...) against the global step, in order of first appearance.
    pub scalars: Vec<ScalarSeries>,
    /// NaN or infinite values seen (left out of the series).
    pub non_finite_values: u64,
}

#[derive(Debug, Serialize)]
pub struct ScalarSeries {
    pub name: String,
    /// `[step, value]` pairs, oldest first.
    pub points: Vec<[f64; 2]>,
}

/// The JSON export of `run`, summarised up to `now_ms` if it is still running, with the
/// environment values of secret-looking names hidden as `secrets` says.
pub fn export_json(run: &Run, now_ms: u64, secrets: &Secrets) -> Result<RunExport, RunError> {
    let metrics = required_metrics(run)?;
    let state = run.state();
    let mut record = run.record.clone();
    record.state = state;
    record.redact(secrets);
    Ok(RunExport {
        schema: EXPORT_SCHEMA,
        summary: summary_of(&run.record, state, &metrics, now_ms),
        progress: progress_export(&run.progress(EXPORT_POINTS_PER_SCALAR)?),
        run: record,
        dir: run.dir.clone(),
        metrics,
    })
}

/// The CSV export of `run`: the header and every complete row, newline-terminated.
pub fn export_csv(run: &Run) -> Result<String, RunError> {
    let rows = required_metrics(run)?;
    let mut out = String::with_capacity(64 * (rows.len() + 1));
    out.push_str(CSV_HEADER);
    out.push('\n');
    for row in &rows {
        out.push_str(&csv_line(row));
        out.push('\n');
    }
    Ok(out)
}

/// The run's metrics, or why it has none.
fn required_metrics(run: &Run) -> Result<Vec<MetricsRow>, RunError> {
    if let Some(rows) = run.metrics()? {
        return Ok(rows);
    }
    let record = &run.record;
    let why = match (&record.metrics_error, &record.gpu_source, run.state()) {
        (Some(error), _, _) => error.clone(),
        (None, None, _) => "it was started by a gpudeck that did not record metrics".into(),
        (None, _, RunState::Starting) => "it has not started yet".into(),
        (None, Some(_), _) => "its metrics.csv is missing".into(),
    };
    Err(RunError::NoMetrics {
        id: record.id.clone(),
        why,
    })
}

fn progress_export(tracker: &ProgressTracker) -> ProgressExport {
    ProgressExport {
        latest: tracker.latest().cloned(),
        scalars: tracker
            .scalar_names()
            .map(|name| ScalarSeries {
                name: name.to_string(),
                points: tracker.series(name).iter().map(|&(x, y)| [x, y]).collect(),
            })
            .collect(),
        non_finite_values: tracker.non_finite_count(),
    }
}
