//! The Runs tab's state: every run, the selected one's detail and logs, and the GPU memory its
//! processes may still hold after it ended; folded in from the runs collector and the GPU data.

use std::collections::{HashMap, VecDeque};

use super::filter::ListFilter;
use super::logs_view::LogsView;
use crate::docker::{LogLine, LogStream};
use crate::gpu::{GpuSample, GpuStatic};
use crate::runs::recorded::samples::{rows_from, MetricsRow};
use crate::runs::recorded::summary::{leftover_memory, Alert};
use crate::runs::watch::{LogChunk, RunDetail, RunRow, RunsUpdate};
use crate::runs::RunState;

/// How long after a run's end its GPUs are watched for memory its processes still hold.
const WATCH_AFTER_END_MS: i64 = 600_000;
/// Live samples kept for that watch (one a second covers more than the alert needs).
const AFTER_END_SAMPLES: usize = 256;

/// Which of its GPUs' histories the selected run's chart draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunChart {
    #[default]
    Utilisation,
    Memory,
    Power,
}

impl RunChart {
    pub fn next(self) -> Self {
        match self {
            RunChart::Utilisation => RunChart::Memory,
            RunChart::Memory => RunChart::Power,
            RunChart::Power => RunChart::Utilisation,
        }
    }
}

/// Everything the Runs tab shows.
#[derive(Clone, Debug, Default)]
pub struct RunsView {
    /// Newest first.
    pub runs: Vec<RunRow>,
    /// Whether the store has been read once (until then "no runs" would be a lie).
    pub listed: bool,
    pub warnings: Vec<String>,
    /// The store cannot be read: why and what to do, shown instead of "no runs yet".
    pub store_error: Option<String>,
    pub selected: Option<String>,
    pub detail: Option<RunDetail>,
    /// The selected run's logs of `log_rank`, stdout and stderr together.
    pub logs: Option<LogsView>,
    pub log_rank: usize,
    /// The logs fill the tab (Enter); otherwise their tail sits under the detail.
    pub log_open: bool,
    /// Log bytes skipped because they came faster than they can be shown.
    pub skipped_bytes: u64,
    /// Live rows of the selected ended run's GPUs, for the memory-held alert.
    after_end: VecDeque<MetricsRow>,
    pub held: Option<Alert>,
    pub chart: RunChart,
    /// A run just started from here: selected as soon as a listing has it.
    pub select_when_listed: Option<String>,
    /// GPUs live runs and shells claim: busy in the new-run form and the shell dialog.
    pub claimed: Vec<crate::claims::Claim>,
    /// Where each run sits in `runs`, by id: the selection and a changed row are found without
    /// going through a long history on every frame.
    positions: HashMap<String, usize>,
    /// How many of `runs` are running (the list's title), kept as rows change.
    running: usize,
    /// What `/` typed; the runs it keeps are `shown`.
    pub filter: ListFilter,
    /// The runs the filter keeps, as indices into `runs` in order, kept as the list and the
    /// filter change (not made again on every frame).
    shown: Vec<usize>,
}

impl RunsView {
    pub fn selected_row(&self) -> Option<usize> {
        self.positions.get(self.selected.as_deref()?).copied()
    }

    /// How many runs are running now.
    pub fn running(&self) -> usize {
        self.running
    }

    /// The list was replaced: where each run is, and how many run.
    fn reindex(&mut self) {
        self.positions = (self.runs.iter().enumerate())
            .map(|(i, r)| (r.id.clone(), i))
            .collect();
        self.running = (self.runs.iter())
            .filter(|r| r.state == RunState::Running)
            .count();
        self.refilter();
    }

    /// The runs the filter keeps, as indices into `runs`.
    pub fn shown(&self) -> &[usize] {
        &self.shown
    }

    /// The filter or the runs changed: which runs it keeps.
    pub fn refilter(&mut self) {
        self.shown = self.filter.keep(&self.runs, run_text);
    }

    /// The selected run's place among the shown rows.
    pub fn selected_shown(&self) -> Option<usize> {
        let row = self.selected_row()?;
        self.shown.binary_search(&row).ok()
    }

    pub fn selected_run(&self) -> Option<&RunRow> {
        self.runs.get(self.selected_row()?)
    }

    /// The detail, when it belongs to the selected run.
    pub fn selected_detail(&self) -> Option<&RunDetail> {
        self.detail
            .as_ref()
            .filter(|d| Some(d.id.as_str()) == self.selected.as_deref())
    }

    /// Folds a collector update in; true when the selection changed and must be followed.
    pub fn apply(&mut self, update: RunsUpdate) -> bool {
        match update {
            RunsUpdate::Listed { mut runs, warnings } => {
                runs.reverse();
                self.runs = runs;
                self.reindex();
                self.warnings = warnings;
                self.store_error = None;
                self.listed = true;
                if let Some(id) = self.select_when_listed.take() {
                    if self.positions.contains_key(&id) {
                        self.select(Some(id));
                        return true;
                    }
                    self.select_when_listed = Some(id);
                }
                let kept = self.selected_shown().is_some();
                if !kept {
                    let first = self.shown().first().copied();
                    self.selected = first.map(|i| self.runs[i].id.clone());
                }
                !kept && self.selected.is_some()
            }
            RunsUpdate::Changed { rows, warnings } => {
                for row in rows {
                    let Some(&i) = self.positions.get(&row.id) else {
                        continue;
                    };
                    let was_running = self.runs[i].state == RunState::Running;
                    let is_running = row.state == RunState::Running;
                    self.running = (self.running + usize::from(is_running))
                        .saturating_sub(usize::from(was_running));
                    self.runs[i] = row;
                }
                if !self.filter.is_empty() {
                    // A row's state is part of what the filter reads.
                    self.refilter();
                }
                self.warnings = warnings;
                false
            }
            RunsUpdate::Detail(detail) => {
                self.detail = Some(*detail);
                false
            }
            RunsUpdate::Log(chunk) => {
                self.push_log(chunk);
                false
            }
            RunsUpdate::Claimed(claimed) => {
                self.claimed = claimed;
                false
            }
            RunsUpdate::StoreUnreadable(why) => {
                self.runs.clear();
                self.reindex();
                self.warnings.clear();
                self.store_error = Some(why);
                self.listed = true;
                self.select(None);
                false
            }
        }
    }

    fn push_log(&mut self, chunk: LogChunk) {
        if Some(chunk.id.as_str()) != self.selected.as_deref() || chunk.rank != self.log_rank {
            return;
        }
        if chunk.reset || self.logs.is_none() {
            self.skipped_bytes = 0;
        }
        self.skipped_bytes += push_chunk(&mut self.logs, chunk);
    }

    /// A new selection: nothing of the old run's detail or logs is shown for it.
    pub fn select(&mut self, id: Option<String>) {
        if id != self.selected {
            self.selected = id;
            self.detail = None;
            self.logs = None;
            self.log_rank = 0;
            self.after_end.clear();
            self.held = None;
        }
    }

    /// Records the selected run's GPUs from a fresh sample when the run ended recently, and
    /// whether they still hold memory its processes left behind.
    pub fn watch_after_end(&mut self, now_ms: i64, statics: &[GpuStatic], samples: &[GpuSample]) {
        let Some(run) = self.selected_run() else {
            return;
        };
        let ended = match (run.state, run.ended_ms) {
            (s, Some(ended)) if s.is_finished() || s == RunState::Lost => ended as i64,
            _ => return,
        };
        // Once an alert is up it is followed (its age grows) for as long as it holds.
        if now_ms < ended || (now_ms - ended > WATCH_AFTER_END_MS && self.held.is_none()) {
            return;
        }
        let owner = run.owner;
        let gpus = run.gpus.clone();
        for row in rows_from(now_ms, statics, samples, &gpus) {
            if self.after_end.len() == AFTER_END_SAMPLES {
                self.after_end.pop_front();
            }
            self.after_end.push_back(row);
        }
        let rows: Vec<MetricsRow> = self.after_end.iter().cloned().collect();
        let processes: Vec<_> = samples.iter().flat_map(|s| s.processes.clone()).collect();
        self.held = leftover_memory(&rows, &gpus, ended, &processes, &owner);
    }
}

/// Folds a rank's new lines into `logs` (anew when the chunk starts over); the bytes it skipped.
/// The Runs and the Services tab both show a run's output this way.
pub fn push_chunk(logs: &mut Option<LogsView>, chunk: LogChunk) -> u64 {
    if chunk.reset || logs.is_none() {
        let name = format!("{} · rank {}", chunk.id, chunk.rank);
        *logs = Some(LogsView::new(chunk.id.clone(), name));
    }
    if let Some(logs) = logs.as_mut() {
        logs.push(
            chunk
                .lines
                .into_iter()
                .map(|(is_err, text)| LogLine {
                    stream: if is_err {
                        LogStream::Stderr
                    } else {
                        LogStream::Stdout
                    },
                    timestamp: None,
                    text,
                })
                .collect(),
        );
    }
    chunk.skipped
}

/// A run's text as its row shows it (the whole id rather than the short one), for the filter.
pub fn run_text(r: &RunRow) -> String {
    let gpus: Vec<String> = r.gpus.iter().map(u32::to_string).collect();
    format!(
        "{} {} {} {} {} {} {}",
        r.id,
        r.state,
        gpus.join(","),
        r.launcher.as_str(),
        r.exit_code.map(|c| c.to_string()).unwrap_or_default(),
        r.image.as_deref().unwrap_or(""),
        r.command
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::RunOwner;

    fn row(n: usize, state: RunState) -> RunRow {
        RunRow {
            id: format!("20261125-120000-run-{n:05}"),
            name: "run".into(),
            state,
            launcher: Default::default(),
            image: None,
            gpus: vec![0],
            ranks: 1,
            created_ms: n as u64,
            started_ms: Some(n as u64),
            ended_ms: None,
            exit_code: None,
            first_failed_rank: None,
            error: None,
            dir: format!("/runs/{n}").into(),
            summary: None,
            job: None,
            engine_away: None,
            xids: Vec::new(),
            owner: RunOwner::default(),
            command: "python train.py".into(),
        }
    }

    #[test]
    fn the_running_count_and_the_selection_follow_listings_and_changed_rows() {
        let mut view = RunsView::default();
        // Oldest first from the collector; every third one running.
        let runs: Vec<RunRow> = (0..3000)
            .map(|n| {
                row(
                    n,
                    [RunState::Running, RunState::Succeeded, RunState::Failed][n % 3],
                )
            })
            .collect();
        assert!(view.apply(RunsUpdate::Listed {
            runs,
            warnings: Vec::new(),
        }));
        assert_eq!(view.running(), 1000);
        // Newest first, the newest selected.
        assert_eq!(view.selected.as_deref(), Some("20261125-120000-run-02999"));
        assert_eq!(view.selected_row(), Some(0));
        view.select(Some(row(12, RunState::Running).id));
        assert_eq!(view.selected_row(), Some(2987));
        assert_eq!(view.selected_run().map(|r| r.created_ms), Some(12));

        // Run 12 ends, run 13 (succeeded) is not touched, run 14 starts again, an unknown row
        // is ignored.
        view.apply(RunsUpdate::Changed {
            rows: vec![
                row(12, RunState::Succeeded),
                row(14, RunState::Running),
                row(99_999, RunState::Running),
            ],
            warnings: Vec::new(),
        });
        assert_eq!(view.running(), 1000);
        view.apply(RunsUpdate::Changed {
            rows: vec![row(15, RunState::Failed)],
            warnings: Vec::new(),
        });
        assert_eq!(view.running(), 999);
        assert_eq!(view.runs[2987].state, RunState::Succeeded);
        assert_eq!(view.selected_row(), Some(2987));
        assert_eq!(view.runs.len(), 3000);

        view.apply(RunsUpdate::StoreUnreadable("gone".into()));
        assert_eq!((view.running(), view.selected_row()), (0, None));
    }

    #[test]
    fn the_rows_a_filter_keeps_follow_changed_rows() {
        let mut view = RunsView::default();
        view.apply(RunsUpdate::Listed {
            runs: (0..10).map(|n| row(n, RunState::Succeeded)).collect(),
            warnings: Vec::new(),
        });
        assert_eq!(view.shown().len(), 10);
        view.filter = ListFilter::with_text("RUNNING");
        view.refilter();
        assert!(view.shown().is_empty());
        assert_eq!(view.selected_shown(), None);
        view.apply(RunsUpdate::Changed {
            rows: vec![row(3, RunState::Running)],
            warnings: Vec::new(),
        });
        // Newest first: run 3 is the seventh row.
        assert_eq!(view.shown(), [6]);
        view.select(Some(row(3, RunState::Running).id));
        assert_eq!(view.selected_shown(), Some(0));
    }
}
