//! Exporting a run: its GPU metrics as CSV, or one JSON document (schema `gpudeck.export/v1`)
//! with its record, summary, metrics and the training progress parsed from rank 0's logs.

use std::path::PathBuf;

use serde::Serialize;

use crate::runs::progress::{ProgressEvent, ProgressTracker};
use crate::runs::recorded::samples::{csv_line, MetricsRead, MetricsRow, CSV_HEADER};
use crate::runs::recorded::summary::RunSummary;
use crate::runs::recorded::summary_of;
use crate::runs::recorded::xids::{hits_of, XidHit, XidJudge};
use crate::runs::Run;
use crate::runs::RunError;
use crate::runs::{RunRecord, RunState};
use crate::secrets::Secrets;

/// The JSON schema id of `gpudeck export --format json`.
pub const EXPORT_SCHEMA: &str = "gpudeck.export/v1";
/// Points kept per training scalar in an export; longer series are evenly downsampled.
pub const EXPORT_POINTS_PER_SCALAR: usize = 16_384;

/// `gpudeck export --format json`.
#[derive(Debug, Serialize)]
pub struct RunExport {
    pub schema: &'static str,
    /// `run.json`, with the state as a reader derives it (`lost`).
    pub run: RunRecord,
    pub dir: PathBuf,
    /// How long it ran, as `gpudeck runs --json` says (a lost run: to its last evidence).
    pub duration_ms: Option<u64>,
    pub summary: Option<RunSummary>,
    /// The Xids that hit it, as `gpudeck runs --json` has them.
    pub xids: Vec<XidHit>,
    pub progress: ProgressExport,
    pub metrics: Vec<MetricsRow>,
    /// Lines of `metrics.csv` that were not rows and were left out (see the warnings).
    pub skipped_metrics_lines: u64,
    /// What was wrong with the run's files (bad metrics lines, a missing rank 0 log), each
    /// naming the file; also printed on stderr.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// `gpudeck export --format csv`: the text, and what was wrong with the run's files.
#[derive(Debug)]
pub struct CsvExport {
    pub text: String,
    pub warnings: Vec<String>,
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
/// environment values of secret-looking names hidden as `secrets` says, its Xids judged by
/// `judge`.
pub fn export_json(
    run: &Run,
    now_ms: u64,
    secrets: &Secrets,
    judge: XidJudge<'_>,
) -> Result<RunExport, RunError> {
    let read = required_metrics(run)?;
    let state = run.state();
    let mut record = run.record.clone();
    record.state = state;
    record.redact(secrets);
    let summary = summary_of(&run.record, state, &read.rows, now_ms);
    let mut warnings: Vec<String> = run.skipped_text(&read.skipped).into_iter().collect();
    warnings.extend(run.missing_logs(0));
    let (xids, xid_warning) = hits_of(run, summary.as_ref(), now_ms, judge);
    warnings.extend(xid_warning);
    Ok(RunExport {
        xids,
        schema: EXPORT_SCHEMA,
        duration_ms: run.duration_ms(summary.as_ref(), now_ms),
        summary,
        progress: progress_export(&run.progress(EXPORT_POINTS_PER_SCALAR)?),
        run: record,
        dir: run.dir.clone(),
        metrics: read.rows,
        skipped_metrics_lines: read.skipped.count,
        warnings,
    })
}

/// The CSV export of `run`: the header and every complete row, newline-terminated.
pub fn export_csv(run: &Run) -> Result<CsvExport, RunError> {
    let read = required_metrics(run)?;
    let mut out = String::with_capacity(64 * (read.rows.len() + 1));
    out.push_str(CSV_HEADER);
    out.push('\n');
    for row in &read.rows {
        out.push_str(&csv_line(row));
        out.push('\n');
    }
    Ok(CsvExport {
        text: out,
        warnings: run.skipped_text(&read.skipped).into_iter().collect(),
    })
}

/// The run's metrics, or why it has none.
fn required_metrics(run: &Run) -> Result<MetricsRead, RunError> {
    if let Some(read) = run.read_metrics()? {
        return Ok(read);
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
