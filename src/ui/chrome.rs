//! The frame around every tab: header (host, driver, CUDA, GPU count), tab bar and footer (key hints).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::fastline;
use super::style::Styles;
use crate::app::action::Tab;
use crate::app::keymap::{footer_hints, Binding};
use crate::app::state::{AppState, GpuStatus};
use crate::units;

pub fn header(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let sep = Span::styled(" │ ", s.muted());
    let mut spans = vec![
        Span::styled(" gpudeck", s.title()),
        sep.clone(),
        Span::styled(state.host.clone(), s.text()),
    ];
    let idle = state.services.idle_alerts();
    if idle > 0 {
        // Looked at every 30 s off the Services tab too: a notebook idling on GPUs others may
        // wait for. Before the driver's facts, which a narrow screen may cut.
        let what = units::plural(idle, "idle notebook");
        spans.extend([sep.clone(), Span::styled(format!("{what} (9)"), s.warn())]);
    }
    let driver = |sys: &crate::gpu::SystemInfo| {
        [
            sep.clone(),
            Span::styled("driver ", s.muted()),
            Span::styled(units::opt(sys.driver_version.as_deref()), s.text()),
            sep.clone(),
            Span::styled("CUDA ", s.muted()),
            Span::styled(units::opt(sys.cuda_driver_version), s.text()),
            sep.clone(),
        ]
    };
    match &state.gpu {
        GpuStatus::Ready(d) => {
            spans.extend(driver(&d.inventory.system));
            spans.push(Span::styled(
                units::plural(d.inventory.gpus.len(), "GPU"),
                s.text(),
            ));
        }
        // The driver answered but found no GPU: its facts are true, the GPUs are missing.
        GpuStatus::Failed(e) => match e.system() {
            Some(sys) => {
                spans.extend(driver(sys));
                spans.push(Span::styled("no GPUs found", s.error()));
            }
            None => spans.extend([sep.clone(), Span::styled("no GPU data", s.error())]),
        },
        GpuStatus::Loading => spans.extend([sep.clone(), Span::styled("loading…", s.muted())]),
    }
    if state.is_demo() {
        spans.extend([sep.clone(), Span::styled("DEMO (simulated)", s.warn())]);
    }
    if state.read_only {
        spans.extend([sep, Span::styled("read-only", s.warn())]);
    }
    fastline::render(&Line::from(spans), area, buf);
}

/// The tab titles with their x ranges, shared by drawing and clicking: the full titles when
/// they fit the width, else the short ones, padded on both sides when that fits (under 88
/// columns, e.g. 80, on the left only).
fn tab_spans(width: u16) -> Vec<(Tab, String, u16, u16)> {
    let needed = |title: fn(Tab) -> &'static str, pad: usize| -> usize {
        1 + Tab::ALL
            .iter()
            .map(|t| title(*t).chars().count() + 3 + pad)
            .sum::<usize>()
    };
    let width = width as usize;
    let (title, pad): (fn(Tab) -> &'static str, usize) = if needed(Tab::title, 2) <= width {
        (Tab::title, 2)
    } else if needed(Tab::short_title, 2) <= width {
        (Tab::short_title, 2)
    } else {
        (Tab::short_title, 1)
    };
    let mut x = 1u16;
    Tab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let label = match pad {
                2 => format!(" {} {} ", i + 1, title(*t)),
                _ => format!(" {} {}", i + 1, title(*t)),
            };
            let width = label.chars().count() as u16;
            let start = x;
            x += width + 1;
            (*t, label, start, start + width)
        })
        .collect()
}

pub fn tabs(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let mut spans = vec![Span::raw(" ")];
    for (tab, label, _, _) in tab_spans(area.width) {
        spans.push(Span::styled(label, s.tab(tab == state.tab)));
        spans.push(Span::styled("│", s.muted()));
    }
    fastline::render(&Line::from(spans), area, buf);
}

pub fn tab_at(area: Rect, column: u16) -> Option<Tab> {
    let x = column.checked_sub(area.x)?;
    tab_spans(area.width)
        .into_iter()
        .find(|(_, _, start, end)| x >= *start && x < *end)
        .map(|(t, ..)| t)
}

pub fn footer(area: Rect, buf: &mut Buffer, state: &AppState, keymap: &[Binding], s: &Styles) {
    // The latest message has a line of its own (`messages::line`): the hints always show.
    let mut spans = Vec::new();
    if let Some(filter) = state.list_filter().filter(|f| f.editing) {
        spans.push(Span::styled(" filter: ", s.accent()));
        spans.push(Span::styled(format!("{}▏", filter.text), s.text()));
        spans.push(Span::styled("  Enter done  Esc clear", s.muted()));
    } else {
        // Whole hints only: one that does not fit is left out, never cut (`Tab ta`).
        let mut room = usize::from(area.width);
        for (label, desc) in footer_hints(state, keymap) {
            let key = Span::styled(format!(" {label}"), s.accent());
            let what = Span::styled(format!(" {desc} "), s.muted());
            // The trailing space may fall off the edge; the words may not.
            let needed = key.width() + what.width() - 1;
            if needed > room {
                continue;
            }
            room = room.saturating_sub(needed + 1);
            spans.push(key);
            spans.push(what);
        }
    }
    fastline::render(&Line::from(spans), area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::action::Tab;
    use crate::app::keymap::bindings;
    use crate::config::Config;

    /// The footer's row is whole hints one after another: at no width is one cut (`Tab ta` at
    /// 80 columns in the logs view was).
    #[test]
    fn the_footer_shows_whole_hints_at_every_width() {
        let keymap = bindings();
        let theme = crate::config::Theme::builtin("dark").unwrap();
        let styles = Styles::new(&theme);
        for tab in Tab::ALL {
            let mut state = AppState::new(&Config::default(), "testhost".into(), false);
            state.tab = tab;
            let hints = footer_hints(&state, &keymap);
            for width in 20..=200u16 {
                let area = Rect::new(0, 0, width, 1);
                let mut buf = Buffer::empty(area);
                footer(area, &mut buf, &state, &keymap, &styles);
                let row: String = (0..width).map(|x| buf[(x, 0)].symbol()).collect();
                let row = row.trim_end();
                let mut rest = row;
                for (label, desc) in &hints {
                    let hint = format!(" {label} {desc}");
                    if let Some(after) = rest.strip_prefix(&hint) {
                        rest = after.strip_prefix(' ').unwrap_or(after);
                    }
                }
                assert!(
                    rest.is_empty(),
                    "{tab:?} at {width}: {rest:?} left of {row:?}"
                );
                let (label, desc) = hints[0];
                assert!(
                    width < 40 || row.starts_with(&format!(" {label} {desc}")),
                    "{tab:?} at {width}: {row:?}"
                );
            }
        }
    }
}
