//! What GPU data puts on the screen, at the precision it is shown: a GPU update that leaves all
//! of it as it was costs no frame.

use super::action::Tab;
use super::state::{AppState, GpuStatus, Overlay};
use crate::config::GraphMetric;
use crate::gpu::history::Ring;
use crate::gpu::xid_watch::XidLog;
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
    /// The Xids seen, for the rows' flags and the detail's list (GPUs tab only).
    xids: XidLog,
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
            xids: XidLog::default(),
        };
        if state.tab == Tab::Topology {
            // The matrix and the links come from the inventory, which a sample never changes.
            return Some(shown);
        }
        shown.samples = data.samples.iter().map(ShownSample::of).collect();
        shown.xids = data.xids.clone();
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
mod tests {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;

    use super::*;
    use crate::app::action::Action;
    use crate::app::keymap;
    use crate::config::{Config, Theme};
    use crate::gpu::collector::GpuUpdate;
    use crate::gpu::sim::SimSource;
    use crate::gpu::GpuSource;
    use gpudeck_sim_model::SimSpec;

    /// Seconds of history kept: the graphs are full after this many samples.
    const HISTORY: u64 = 3;

    fn state_on(spec: &str) -> (AppState, SimSource) {
        let mut config = Config::default();
        config.general.history_secs = HISTORY;
        config.general.refresh_ms = 1000;
        let mut state = AppState::new(&config, "test".into(), false);
        let mut source = SimSource::new(SimSpec::parse(spec).unwrap());
        state.apply_gpu(GpuUpdate::Ready(Box::new(source.inventory().unwrap())));
        (state, source)
    }

    /// The simulation's samples at second `t`.
    fn samples_at(spec: &str, t: u32) -> Vec<GpuSample> {
        let mut source = SimSource::new(SimSpec::parse(&format!("{spec},frozen={t}")).unwrap());
        let inventory = source.inventory().unwrap();
        inventory.gpus.iter().map(|g| source.sample(g)).collect()
    }

    fn steady(power_w: f64, util: u32) -> GpuSample {
        GpuSample {
            util_gpu_pct: Some(util),
            memory_used_bytes: Some(1 << 30),
            temp_c: Some(40),
            power_w: Some(power_w),
            power_limit_w: Some(700.0),
            ..GpuSample::default()
        }
    }

    /// A state whose graphs are full of one steady sample, with the tracker told of it.
    fn settled(spec: &str, sample: &GpuSample) -> (AppState, ShownTracker) {
        let (mut state, _) = state_on(spec);
        let n = state.gpu_count();
        let mut tracker = ShownTracker::default();
        for _ in 0..=HISTORY {
            state.apply_gpu(GpuUpdate::Sampled(vec![sample.clone(); n]));
            tracker.changed(&state, 0);
        }
        (state, tracker)
    }

    fn apply(state: &mut AppState, tracker: &mut ShownTracker, sample: GpuSample) -> bool {
        let n = state.gpu_count();
        state.apply_gpu(GpuUpdate::Sampled(vec![sample; n]));
        tracker.changed(state, 0)
    }

    #[test]
    fn a_repeated_xid_is_a_change_though_the_message_reads_the_same() {
        use crate::gpu::xid_watch::{XidEvent, XidUpdate};
        let (mut state, mut tracker) = settled("gpus=2", &steady(300.0, 50));
        let xid = || {
            GpuUpdate::Xid(XidUpdate::Event(XidEvent {
                gpu: 1,
                pci_bus_id: "00000000:2A:00.0".into(),
                uuid: "GPU-1".into(),
                xid: 13,
                at_unix_ms: 0,
            }))
        };
        state.apply_gpu(xid());
        assert!(tracker.changed(&state, 0));
        state.apply_gpu(xid());
        assert!(tracker.changed(&state, 0), "the detail's count moved");
        assert!(!tracker.changed(&state, 0));
    }

    #[test]
    fn an_update_with_the_same_shown_values_is_no_change() {
        let (mut state, mut tracker) = settled("gpus=2", &steady(300.2, 50));
        // 300.2 W and 300.4 W are both written "300/700W".
        assert!(!apply(&mut state, &mut tracker, steady(300.4, 50)));
        assert!(!apply(&mut state, &mut tracker, steady(300.4, 50)));
    }

    #[test]
    fn an_update_with_a_changed_shown_value_is_a_change() {
        let (mut state, mut tracker) = settled("gpus=2", &steady(300.4, 50));
        assert!(apply(&mut state, &mut tracker, steady(300.6, 50)), "301 W");
        let (mut state, mut tracker) = settled("gpus=2", &steady(300.4, 50));
        assert!(apply(&mut state, &mut tracker, steady(300.4, 51)), "51 %");
        let (mut state, mut tracker) = settled("gpus=2", &steady(300.4, 50));
        let hot = GpuSample {
            temp_c: Some(41),
            ..steady(300.4, 50)
        };
        assert!(apply(&mut state, &mut tracker, hot), "41 °C");
    }

    #[test]
    fn a_graph_that_moves_is_a_change_until_the_history_is_full() {
        let (mut state, _) = state_on("gpus=2");
        let mut tracker = ShownTracker::default();
        tracker.changed(&state, 0);
        // The same readings each second: the graphs still grow until they hold the whole history.
        for i in 0..HISTORY {
            assert!(
                apply(&mut state, &mut tracker, steady(100.0, 0)),
                "sample {i}"
            );
        }
        assert!(!apply(&mut state, &mut tracker, steady(100.0, 0)));
    }

    #[test]
    fn the_power_graph_counts_only_while_shown() {
        let (mut state, mut tracker) = settled("gpus=8", &steady(300.2, 50));
        // The power history moves, the power shown does not.
        assert!(!apply(&mut state, &mut tracker, steady(300.3, 50)));
        state.update(Action::TogglePower);
        tracker.changed(&state, 0);
        assert!(apply(&mut state, &mut tracker, steady(300.2, 50)));
    }

    #[test]
    fn the_topology_tab_shows_no_sample() {
        let (mut state, mut tracker) = settled("gpus=8", &steady(300.2, 50));
        state.update(Action::SelectTab(Tab::Topology));
        assert!(tracker.changed(&state, 0), "a new tab is a new screen");
        assert!(!apply(&mut state, &mut tracker, steady(650.0, 99)));
    }

    #[test]
    fn other_tabs_and_overlays_always_draw() {
        let (mut state, mut tracker) = settled("gpus=8", &steady(300.2, 50));
        state.update(Action::SelectTab(Tab::Processes));
        assert!(apply(&mut state, &mut tracker, steady(300.2, 50)));
        assert!(apply(&mut state, &mut tracker, steady(300.2, 50)));
        state.update(Action::SelectTab(Tab::Gpus));
        state.update(Action::ToggleHelp);
        assert!(apply(&mut state, &mut tracker, steady(300.2, 50)));
        assert!(apply(&mut state, &mut tracker, steady(300.2, 50)));
    }

    #[test]
    fn a_message_going_stale_or_away_is_a_change() {
        let (mut state, mut tracker) = settled("gpus=8", &steady(300.2, 50));
        state.set_status("sent SIGTERM to process 42", false);
        state.stamp_messages(1000);
        assert!(tracker.changed(&state, 1000));
        assert!(!tracker.changed(&state, 1001));
        assert!(tracker.changed(&state, 1000 + crate::app::messages::STALE_SECS));
        assert!(!tracker.changed(&state, 1001 + crate::app::messages::STALE_SECS));
        assert!(tracker.changed(&state, 1000 + crate::app::messages::SHOWN_SECS));
    }

    /// The frame for `state` at `now`, as the app draws it.
    fn frame(state: &mut AppState, now: i64, area: Rect) -> Buffer {
        let theme = Theme::monochrome();
        let keymap = keymap::bindings();
        state.stamp_messages(now);
        let mut buf = Buffer::empty(area);
        crate::ui::render(area, &mut buf, state, &theme, &keymap);
        buf
    }

    /// Over a simulated minute of 8 GPUs (each second's sample, then a repeat of it), on the GPUs
    /// tab (compact rows, an idle GPU selected; and 2 GPUs with sparklines) and the Topology tab:
    /// whenever the tracker says nothing shown changed, the frame is the same as the last one.
    #[test]
    fn no_change_means_the_same_frame() {
        // (machine, tab, selected GPU, whether some update must be found unchanged: not where a
        // busy GPU's graph is shown, which moves every second)
        for (spec, tab, select, some_unchanged) in [
            ("gpus=8,seed=42", Tab::Gpus, 7, true),
            ("gpus=8,seed=42", Tab::Gpus, 0, false),
            ("gpus=2,seed=7", Tab::Gpus, 1, false),
            ("gpus=8,seed=42", Tab::Topology, 3, true),
        ] {
            let (mut state, _) = state_on(spec);
            state.update(Action::SelectTab(tab));
            state.selected_gpu = select;
            let area = Rect::new(0, 0, 160, 50);
            let mut tracker = ShownTracker::default();
            let mut last = frame(&mut state, 0, area);
            tracker.changed(&state, 0);
            let mut skipped = 0;
            for t in 0..60 {
                let samples = samples_at(spec, t);
                for _ in 0..2 {
                    state.apply_gpu(GpuUpdate::Sampled(samples.clone()));
                    let now = i64::from(t);
                    let changed = tracker.changed(&state, now);
                    let drawn = frame(&mut state, now, area);
                    if !changed {
                        skipped += 1;
                        assert_eq!(drawn, last, "{spec} {tab:?} at {t} s: the frame changed");
                    }
                    last = drawn;
                }
            }
            assert!(
                skipped > 0 || !some_unchanged,
                "{spec} {tab:?}: no update was found unchanged"
            );
        }
    }
}
