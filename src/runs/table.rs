//! The runs as a table for people and as a JSON document for scripts.

use serde::Serialize;

use super::clock;
use super::record::RunRecord;
use super::store::Run;

/// The JSON schema id of `gpudeck runs --json`.
pub const RUNS_SCHEMA: &str = "gpudeck.runs/v1";

/// `gpudeck runs --json`: every run's record, its state as a reader derives it (`lost`), and
/// where its directory is.
#[derive(Debug, Serialize)]
pub struct Listing<'a> {
    pub schema: &'static str,
    pub runs: Vec<ListedRun<'a>>,
}

#[derive(Debug, Serialize)]
pub struct ListedRun<'a> {
    #[serde(flatten)]
    pub record: RunRecord,
    pub dir: &'a std::path::Path,
}

pub fn listing_json(runs: &[Run]) -> Listing<'_> {
    Listing {
        schema: RUNS_SCHEMA,
        runs: runs
            .iter()
            .map(|run| {
                let mut record = run.record.clone();
                record.state = run.state();
                ListedRun {
                    record,
                    dir: &run.dir,
                }
            })
            .collect(),
    }
}

/// One line per run, oldest first, columns as wide as their widest cell.
pub fn render_runs(runs: &[Run], now_ms: u64) -> String {
    if runs.is_empty() {
        return "No runs yet (start one with `gpudeck run --gpus 0,1 -- CMD...`).\n".into();
    }
    let header = [
        "ID", "NAME", "STATE", "GPUS", "LAUNCHER", "STARTED", "DURATION", "EXIT",
    ]
    .map(String::from);
    let rows: Vec<[String; 8]> = runs
        .iter()
        .map(|run| {
            let r = &run.record;
            [
                r.id.clone(),
                r.name.clone(),
                run.state().to_string(),
                r.gpu_indices(),
                r.launcher.as_str().to_string(),
                clock::rfc3339_utc(r.started_ms.unwrap_or(r.created_ms)),
                r.duration_ms(now_ms)
                    .map_or_else(|| "-".into(), clock::duration),
                r.exit_code.map_or_else(|| "-".into(), |c| c.to_string()),
            ]
        })
        .collect();
    let mut widths = [0usize; 8];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
