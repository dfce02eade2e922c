//! [`ProgressTracker`]: folds a run's log lines into its latest progress and one bounded,
//! evenly downsampled series per scalar, so memory stays flat however much a run prints.

use std::collections::HashMap;

use super::event::{ProgressEvent, StepSource};
use super::line::parse_line;
use crate::runs::series::Series;

/// Points kept per scalar: more than a wide terminal's braille chart can show.
pub const DEFAULT_POINTS_PER_SCALAR: usize = 1024;
/// Distinct scalar names kept; later names are dropped so a log inventing keys cannot grow memory.
const MAX_SCALARS: usize = 64;

/// The latest progress of one run and the history of each scalar against the training step.
///
/// The x of a point is the global step: the step printed, plus the length of the epochs before it
/// when the step restarts every epoch (Keras, Lightning). Before any step is seen (a Trainer log
/// read without its bar) it is the count of lines that carried values. Feed stdout and stderr of a
/// rank into one tracker: the Trainer prints its values on one and its bar on the other.
///
/// A run may print steps of several kinds ([`StepSource`]): the tracker follows the highest kind
/// seen so far. Lines that name their step beat progress bars (a script's tqdm bar often counts an
/// epoch's batches while its `step=` lines count optimizer steps), and bars beat DeepSpeed's
/// engine lines (which the Hugging Face Trainer's bar counts the same, with a total). A line with
/// a step of a lower kind is ignored but for its epoch, values and all (they belong to a step the
/// axis does not count); lines without a step (the Trainer's dicts) are not. On the first step of a higher kind
/// the axis starts afresh and the points plotted on the old one are dropped.
#[derive(Debug)]
pub struct ProgressTracker {
    points_per_scalar: usize,
    names: Vec<String>,
    index: HashMap<String, usize>,
    series: Vec<Series>,
    latest: Option<ProgressEvent>,
    axis: StepAxis,
    /// The kind of line whose steps the axis follows.
    step_source: Option<StepSource>,
    non_finite: u64,
}

impl Default for ProgressTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl ProgressTracker {
    pub fn new() -> Self {
        Self::with_points(DEFAULT_POINTS_PER_SCALAR)
    }

    /// A tracker keeping at most `points_per_scalar` points per series (at least 4, rounded up to even).
    pub fn with_points(points_per_scalar: usize) -> Self {
        let points = points_per_scalar.max(4).next_multiple_of(2);
        Self {
            points_per_scalar: points,
            names: Vec::new(),
            index: HashMap::new(),
            series: Vec::new(),
            latest: None,
            axis: StepAxis::default(),
            step_source: None,
            non_finite: 0,
        }
    }

    /// Parses one log line; true when it reported progress.
    pub fn feed(&mut self, line: &str) -> bool {
        match parse_line(line) {
            Some(event) => {
                self.record(event);
                true
            }
            None => false,
        }
    }

    /// Like [`feed`](Self::feed) for raw log bytes, which need not be UTF-8.
    pub fn feed_bytes(&mut self, line: &[u8]) -> bool {
        self.feed(&String::from_utf8_lossy(line))
    }

    /// Folds an already parsed event in.
    pub fn record(&mut self, mut event: ProgressEvent) {
        if event.step.is_some() {
            match self.step_source {
                // Its step is not the run's, so its values would land at the wrong one; its
                // epoch (a bar's `Epoch 1:`) is still the run's.
                Some(current) if event.step_source < current => {
                    if let (Some(latest), Some(epoch)) = (&mut self.latest, event.epoch) {
                        latest.epoch = Some(epoch);
                        latest.total_epochs = event.total_epochs.or(latest.total_epochs);
                    }
                    return;
                }
                Some(current) if event.step_source > current => self.follow(event.step_source),
                Some(_) => {}
                None => self.step_source = Some(event.step_source),
            }
        }
        if self.axis.is_side_bar(&event) {
            // An evaluation loop's bar: its counter is not the training step.
            event.step = None;
            event.total_steps = None;
            if event.scalars.is_empty() {
                return;
            }
        }
        let epoch = event
            .epoch
            .or_else(|| self.latest.as_ref().and_then(|l| l.epoch));
        let x = self.axis.advance(&event, epoch);
        for (name, value) in &event.scalars {
            self.push(name, x, *value);
        }
        self.merge_latest(event);
    }

    /// The last event, with the epoch and step carried over from earlier lines when it does not
    /// say (but no step right after an epoch header). Its scalars are only those of its own line; see
    /// [`last_value`](Self::last_value) for the latest of each.
    pub fn latest(&self) -> Option<&ProgressEvent> {
        self.latest.as_ref()
    }

    /// The (global step, value) points of a scalar, oldest first; empty for an unknown name.
    /// Non-finite values are left out so a chart's bounds stay finite.
    pub fn series(&self, name: &str) -> &[(f64, f64)] {
        self.index
            .get(name)
            .map_or(&[], |&i| self.series[i].points())
    }

    /// Scalar names in the order they first appeared.
    pub fn scalar_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.iter().map(String::as_str)
    }

    /// The most recent finite value of a scalar.
    pub fn last_value(&self, name: &str) -> Option<f64> {
        self.series(name).last().map(|&(_, y)| y)
    }

    /// The latest step on the run's axis: the step printed, plus the epochs before it when the
    /// counter restarts every epoch. None before a step was seen.
    pub fn global_step(&self) -> Option<u64> {
        let last = self.latest.as_ref()?.step.and(self.axis.last_step)?;
        Some(self.axis.offset.saturating_add(last))
    }

    /// How many NaN or infinite values were seen (a diverging run prints `loss: nan`).
    pub fn non_finite_count(&self) -> u64 {
        self.non_finite
    }

    /// Steps of a higher kind from now on: a new axis, without the points of the old one.
    fn follow(&mut self, source: StepSource) {
        self.step_source = Some(source);
        let valued_lines = self.axis.valued_lines;
        self.axis = StepAxis {
            valued_lines,
            ..StepAxis::default()
        };
        for series in &mut self.series {
            *series = Series::default();
        }
        if let Some(latest) = &mut self.latest {
            latest.step = None;
            latest.total_steps = None;
        }
    }

    fn push(&mut self, name: &str, x: f64, y: f64) {
        if !y.is_finite() {
            self.non_finite += 1;
            return;
        }
        let slot = match self.index.get(name) {
            Some(&slot) => slot,
            None if self.names.len() < MAX_SCALARS => {
                self.names.push(name.to_string());
                self.index.insert(name.to_string(), self.series.len());
                self.series.push(Series::default());
                self.series.len() - 1
            }
            None => return,
        };
        self.series[slot].push(self.points_per_scalar, (x, y));
    }

    fn merge_latest(&mut self, mut event: ProgressEvent) {
        if let Some(prev) = &self.latest {
            // Only an epoch header (Keras' `Epoch 3/10`) starts a new step count; the Trainer's
            // fractional epochs move on under a global step.
            let epoch_header = event.step.is_none()
                && event.scalars.is_empty()
                && event.epoch.is_some_and(|e| Some(e) != prev.epoch);
            event.epoch = event.epoch.or(prev.epoch);
            event.total_epochs = event.total_epochs.or(prev.total_epochs);
            if !epoch_header {
                event.step = event.step.or(prev.step);
                event.total_steps = event.total_steps.or(prev.total_steps);
            }
        }
        self.latest = Some(event);
    }
}

/// Turns per-epoch step counters into a global step.
#[derive(Debug, Default)]
struct StepAxis {
    /// The step total of the training bar: the largest seen, since evaluation bars are shorter.
    main_total: Option<u64>,
    last_step: Option<u64>,
    /// The epoch in force when `last_step` was seen.
    last_epoch: Option<u32>,
    offset: u64,
    valued_lines: u64,
}

impl StepAxis {
    fn is_side_bar(&self, event: &ProgressEvent) -> bool {
        matches!((event.total_steps, self.main_total), (Some(t), Some(main)) if t < main)
    }

    fn advance(&mut self, event: &ProgressEvent, epoch: Option<u32>) -> f64 {
        if !event.scalars.is_empty() {
            self.valued_lines += 1;
        }
        let Some(step) = event.step else {
            return match self.last_step {
                Some(last) => self.offset.saturating_add(last) as f64,
                None => self.valued_lines as f64,
            };
        };
        if let Some(total) = event.total_steps {
            self.main_total = Some(self.main_total.map_or(total, |m| m.max(total)));
        }
        if let Some(last) = self
            .last_step
            .filter(|&last| self.restarts(step, last, epoch))
        {
            // A new epoch, whose predecessor ran to its total even when the bar's last redraw
            // was not printed.
            self.offset = self
                .offset
                .saturating_add(self.main_total.unwrap_or(last).max(last));
        }
        self.last_step = Some(step);
        self.last_epoch = epoch;
        self.offset.saturating_add(step) as f64
    }
}

impl StepAxis {
    /// The counter went back, or (Keras writing to a file prints only each epoch's final
    /// `469/469`) a new epoch ended at the same full count.
    fn restarts(&self, step: u64, last: u64, epoch: Option<u32>) -> bool {
        step < last || (step == last && Some(step) == self.main_total && epoch != self.last_epoch)
    }
}
