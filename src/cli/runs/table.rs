//! The runs as a table for people and as a JSON document for scripts.

use serde::Serialize;

use crate::runs::clock;
use crate::runs::recorded::summary::Alert;
use crate::runs::recorded::summary::RunSummary;
use crate::runs::recorded::xids::{hits_of, telling, XidHit, XidJudge};
use crate::runs::watch::pace::{pace_of, LatestProgress};
use crate::runs::Run;
use crate::runs::{RunRecord, RunState};
use crate::secrets::Secrets;

/// Columns of the runs table.
const COLUMNS: usize = 10;

/// The JSON schema id of `gpudeck runs --json`.
pub const RUNS_SCHEMA: &str = "gpudeck.runs/v1";

/// `gpudeck runs --json`: every run's record, its state as a reader derives it (`lost`), where
/// its directory is, and its summary.
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
    /// What its GPU metrics add up to; null without metrics.
    pub summary: Option<&'a RunSummary>,
    /// How long it ran: to its end, to now while it runs, to its last evidence (last sample or
    /// log write) when it was lost; null before it started.
    pub duration_ms: Option<u64>,
    /// The Xids its GPUs reported while a run that did not succeed lived, oldest first, each
    /// with what it means, what to do and whom it points at.
    pub xids: Vec<XidHit>,
    /// The latest training progress printed by rank 0 (its logs' tails), as numbers; null when
    /// it printed none.
    pub progress: Option<LatestProgress>,
    /// What is wrong with a running run now: its progress stalled (every rank, or one rank
    /// behind the others).
    pub alerts: Vec<Alert>,
}

/// The runs, each with its summary (see [`Run::summary`]).
/// The environment values of secret-looking names are hidden as `secrets` says; Xids are judged
/// by `judge`.
pub fn listing_json<'a>(
    runs: &'a [(Run, Option<RunSummary>)],
    now_ms: u64,
    secrets: &Secrets,
    judge: XidJudge<'_>,
) -> Listing<'a> {
    Listing {
        schema: RUNS_SCHEMA,
        runs: runs
            .iter()
            .map(|(run, summary)| {
                let mut record = run.record.clone();
                record.state = run.state();
                record.redact(secrets);
                let pace = pace_of(run, now_ms);
                ListedRun {
                    record,
                    dir: &run.dir,
                    summary: summary.as_ref(),
                    duration_ms: run.duration_ms(summary.as_ref(), now_ms),
                    xids: hits_of(run, summary.as_ref(), now_ms, judge).0,
                    progress: pace.progress,
                    alerts: pace.stall.into_iter().collect(),
                }
            })
            .collect(),
    }
}

/// The columns' names, in the order they are printed.
const HEADER: [&str; COLUMNS] = [
    "ID", "NAME", "STATE", "GPUS", "LAUNCHER", "STARTED", "DURATION", "UTIL", "BUSY", "EXIT",
];

/// The columns left out, in this order, while the table is wider than the terminal: first what
/// another column repeats (the id holds the name and the date), then how it was launched, last
/// how the run used its GPUs and how it ended. ID, STATE, GPUS and DURATION always stay.
const FOLD_ORDER: [usize; 6] = [1, 5, 4, 8, 7, 9];

/// One line per run in the order given (the caller lists them newest first, as the Runs tab
/// does), columns as wide as their widest cell, within `width` columns where leaving out the
/// less telling columns gets it there; a line then says which are left out. UTIL is the GPUs'
/// mean utilisation, BUSY the share of the GPU-seconds held that they were busy (`-` without
/// metrics); a run without GPUs shows `none` under GPUS, as in the Runs tab. A run an Xid hit
/// says so under STATE, and a paragraph under the table says what it was and whom it points at;
/// a run that failed or could not start (a Slurm submission refused) has its reason there too.
pub fn render_runs(
    runs: &[(Run, Option<RunSummary>)],
    now_ms: u64,
    width: usize,
    judge: XidJudge<'_>,
) -> String {
    if runs.is_empty() {
        return crate::output::wrap_to(
            "No runs yet (start one with `gpudeck run --gpus 0,1 -- CMD...`).",
            "",
            width,
        ) + "\n";
    }
    let header = HEADER.map(String::from);
    let hits: Vec<Vec<XidHit>> = runs
        .iter()
        .map(|(run, summary)| hits_of(run, summary.as_ref(), now_ms, judge).0)
        .collect();
    let rows: Vec<[String; COLUMNS]> = runs
        .iter()
        .zip(&hits)
        .map(|((run, summary), hits)| {
            let r = &run.record;
            [
                r.id.clone(),
                r.name.clone(),
                match telling(hits) {
                    Some(hit) => format!("{} (Xid {})", state_text(run), hit.xid),
                    None => state_text(run),
                },
                match r.remote_job() {
                    Some(job) => job.placement,
                    None if r.gpus.is_empty() => "none".into(),
                    None => r.gpu_indices(),
                },
                r.launcher.as_str().to_string(),
                clock::rfc3339_utc(r.started_ms.unwrap_or(r.created_ms)),
                run.duration_ms(summary.as_ref(), now_ms)
                    .map_or_else(|| "-".into(), clock::duration),
                utilisation(summary.as_ref()),
                busy(summary.as_ref()),
                r.exit_code.map_or_else(|| "-".into(), |c| c.to_string()),
            ]
        })
        .collect();
    let mut widths = [0usize; COLUMNS];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let shown = columns_within(&widths, width);
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = shown
            .iter()
            .map(|&c| format!("{:<w$}", row[c], w = widths[c]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let left_out: Vec<&str> = (0..COLUMNS)
        .filter(|c| !shown.contains(c))
        .map(|c| HEADER[c])
        .collect();
    if !left_out.is_empty() {
        let note = format!(
            "({} left out to fit {width} columns; a wider terminal shows them, and \
             `gpudeck runs --json` has everything.)",
            left_out.join(", ")
        );
        out.push_str(&crate::output::wrap_to(&note, " ", width));
        out.push('\n');
    }
    for ((run, _), hits) in runs.iter().zip(&hits) {
        out.push_str(&error_paragraph(run, width));
        out.push_str(&xid_paragraph(run.id(), hits, width));
        if run.state() == RunState::Running {
            if let Some(alert) = pace_of(run, now_ms).stall {
                out.push_str(&alert_paragraph(run.id(), &alert, width));
            }
        }
    }
    out
}

/// A live run's alert: what is wrong, since when, what to do.
fn alert_paragraph(id: &str, alert: &Alert, width: usize) -> String {
    let since = clock::rfc3339_utc(u64::try_from(alert.since_ms).unwrap_or(0));
    let text = format!("{id}: {} (since {since})", alert.message);
    format!(
        "\n{}\n{}\n",
        crate::output::wrap_to(&text, "  ", width),
        crate::output::wrap_to(&format!("  Do: {}", alert.fix), "    ", width)
    )
}

/// Why a run failed or could not start (its record's `error`, as the Runs tab's detail says
/// it); empty for a run without one.
fn error_paragraph(run: &Run, width: usize) -> String {
    match &run.record.error {
        Some(error) => format!(
            "\n{}\n",
            crate::output::wrap_to(
                &format!("{} {}: {error}", run.id(), run.state()),
                "  ",
                width
            )
        ),
        None => String::new(),
    }
}

/// What the telling Xid of a run was, what to do, and how many more there were; empty without.
fn xid_paragraph(id: &str, hits: &[XidHit], width: usize) -> String {
    let Some(hit) = telling(hits) else {
        return String::new();
    };
    let mut out = String::from("\n");
    let mut say = |text: &str, indent: &str| {
        out.push_str(&crate::output::wrap_to(text, indent, width));
        out.push('\n');
    };
    say(&format!("{id}: {}", hit.summary), "  ");
    say(&format!("  Xid {}: {}.", hit.xid, hit.meaning), "    ");
    say(&format!("  Do: {}", hit.action), "    ");
    if let [_, _, ..] = hits {
        let more = hits.len() - 1;
        let noun = if more == 1 { "Xid" } else { "Xids" };
        say(
            &format!("  ({more} more {noun}; `gpudeck runs --json` lists them all.)"),
            "    ",
        );
    }
    out
}

/// The columns to print, in order: all of them when they fit `width`, else without the first
/// of [`FOLD_ORDER`] until they do (or only those that always stay are left).
fn columns_within(widths: &[usize; COLUMNS], width: usize) -> Vec<usize> {
    let mut shown: Vec<usize> = (0..COLUMNS).collect();
    let line = |shown: &[usize]| {
        shown.iter().map(|&c| widths[c]).sum::<usize>() + 2 * shown.len().saturating_sub(1)
    };
    for column in FOLD_ORDER {
        if line(&shown) <= width {
            break;
        }
        shown.retain(|&c| c != column);
    }
    shown
}

/// The state, with why a job held elsewhere (a Slurm job) still waits in the queue: "starting (Resources)".
fn state_text(run: &Run) -> String {
    let reason = run.record.remote_job().and_then(|j| j.reason);
    match (run.state(), reason.as_deref()) {
        (RunState::Starting, Some(reason)) => format!("starting ({reason})"),
        (state, _) => state.to_string(),
    }
}

/// The mean utilisation as a whole percentage, `-` when there is none.
fn utilisation(summary: Option<&RunSummary>) -> String {
    summary
        .and_then(RunSummary::mean_util_pct)
        .map_or_else(|| "-".into(), |u| format!("{u:.0}%"))
}

/// The busy ratio as a whole percentage, `-` when there is none.
fn busy(summary: Option<&RunSummary>) -> String {
    summary
        .and_then(|s| s.busy_ratio)
        .map_or_else(|| "-".into(), |r| format!("{:.0}%", r * 100.0))
}
