//! What GPU data puts on the screen, at the precision it is shown: a GPU update that leaves all
//! of it as it was costs no frame.

use super::action::Tab;
use super::state::{AppState, GpuStatus, Overlay};
use crate::config::GraphMetric;
use crate::gpu::history::Ring;
use crate::gpu::GpuSample;
use crate::units;

/// Everything the GPU data decides on a screen the key map has put on the GPUs or Topology tab,
/// with nothing open over it. Two equal values draw the same frame at any size.
#[derive(Clone, Debug, PartialEq)]
pub struct ShownGpus {
    tab: Tab,
    selected_gpu: usize,
    graph: GraphMetric,
    show_power: bool,
    /// The footer's message line: its text, whether an error, whether dimmed as stale.
    message: Option<(String, bool, bool)>,
    /// Each GPU's readings as its row and the detail pane show them (GPUs tab only).
    samples: Vec<ShownSample>,
    /// The histories the graphs draw (GPUs tab only).
    graphs: Vec<Vec<Option<f32>>>,
}

/// A sample with its power, which NVML gives in milliwatts, as the screen writes it (whole
/// watts); every other reading is an integer, a count or a text already.
#[derive(Clone, Debug, PartialEq)]
struct ShownSample {
    power: String,
    rest: GpuSample,
}

impl ShownSample {
    fn of(sample: &GpuSample) -> Self {
        Self {
            power: units::power_pair(sample.power_w, sample.power_limit_w),
            rest: GpuSample {
                power_w: None,
                power_limit_w: None,
                ..sample.clone()
            },
        }
    }
}

impl ShownGpus {
    /// What the GPU data shows on the screen of `state` at `now` (Unix seconds); `None` where
    /// this cannot tell: another tab (their ages, rates and lists move with the clock or with
    /// other sources), an overlay, or no GPU data yet.
    pub fn of(state: &AppState, now: i64) -> Option<Self> {
        if state.overlay != Overlay::None || !matches!(state.tab, Tab::Gpus | Tab::Topology) {
            return None;
        }
        let GpuStatus::Ready(data) = &state.gpu else {
            return None;
        };
        let message = state.status.as_ref().and_then(|m| {
            let age = m.shown_at.map_or(0, |at| (now - at).max(0));
            (age < super::messages::SHOWN_SECS).then(|| {
                (
                    m.text.clone(),
                    m.is_error,
                    age >= super::messages::STALE_SECS,
                )
            })
        });
        let mut shown = Self {
            tab: state.tab,
            selected_gpu: state.selected_gpu,
            graph: state.graph,
            show_power: state.show_power,
            message,
            samples: Vec::new(),
            graphs: Vec::new(),
        };
        if state.tab == Tab::Topology {
            // The matrix and the links come from the inventory, which a sample never changes.
            return Some(shown);
        }
        shown.samples = data.samples.iter().map(ShownSample::of).collect();
        let values = |ring: &Ring| ring.iter().collect::<Vec<_>>();
        let selected = state.selected_gpu.min(data.history.len().saturating_sub(1));
        if let Some(h) = data.history.get(selected) {
            shown.graphs.push(values(&h.util));
            shown.graphs.push(values(&h.memory_pct));
            if state.show_power {
                shown.graphs.push(values(&h.power_w));
            }
        }
        if data.inventory.gpus.len() < state.compact_threshold {
            // Each row has a sparkline of the chosen metric.
            shown
                .graphs
                .extend(data.history.iter().map(|h| match state.graph {
                    GraphMetric::Utilization => values(&h.util),
                    GraphMetric::Memory => values(&h.memory_pct),
                    GraphMetric::Power => values(&h.power_w),
                }));
        }
        Some(shown)
    }
}

/// The GPU content of the last frame asked about, to tell whether an update changes it.
#[derive(Debug, Default)]
pub struct ShownTracker {
    last: Option<ShownGpus>,
}

impl ShownTracker {
    /// Whether `state` at `now` shows GPU data differently from the last time this was asked
    /// (always, where [`ShownGpus::of`] cannot tell). Ask after applying each GPU update: keys,
    /// resizes and other sources draw on their own, and anything they change that is shown here
    /// makes the next answer true.
    pub fn changed(&mut self, state: &AppState, now: i64) -> bool {
        let shown = ShownGpus::of(state, now);
        let changed = shown.is_none() || shown != self.last;
        self.last = shown;
        changed
    }
}

#[cfg(test)]
#[path = "shown_tests.rs"]
mod tests;
