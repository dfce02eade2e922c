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

/// The header's parts in the order they read, each with its rank: where the line is too narrow
/// for all of them, the least important (highest rank) drop out whole, so that no part is cut
/// (`CUDA` without its version at 40 columns was). What the data is (a demo, read-only) and how
/// many GPUs there are stay to the last; the host, driver and CUDA versions go first.
fn header_parts<'a>(state: &AppState, s: &Styles) -> Vec<(u8, Vec<Span<'a>>)> {
    let sep = || Span::styled(" │ ", s.muted());
    let mut parts = vec![
        (0, vec![Span::styled(" gpudeck", s.title())]),
        (7, vec![sep(), Span::styled(state.host.clone(), s.text())]),
    ];
    let idle = state.services.idle_alerts();
    if idle > 0 {
        // Looked at every 30 s off the Services tab too: a notebook idling on GPUs others may
        // wait for.
        let what = units::plural(idle, "idle notebook");
        parts.push((
            4,
            vec![sep(), Span::styled(format!("{what} (9)"), s.warn())],
        ));
    }
    let driver = |sys: &crate::gpu::SystemInfo| {
        [
            (
                5,
                vec![
                    sep(),
                    Span::styled("driver ", s.muted()),
                    Span::styled(units::opt(sys.driver_version.as_deref()), s.text()),
                ],
            ),
            (
                6,
                vec![
                    sep(),
                    Span::styled("CUDA ", s.muted()),
                    Span::styled(units::opt(sys.cuda_driver_version), s.text()),
                ],
            ),
        ]
    };
    match &state.gpu {
        GpuStatus::Ready(d) => {
            parts.extend(driver(&d.inventory.system));
            let count = units::plural(d.inventory.gpus.len(), "GPU");
            parts.push((2, vec![sep(), Span::styled(count, s.text())]));
        }
        // The driver answered but found no GPU: its facts are true, the GPUs are missing.
        GpuStatus::Failed(e) => match e.system() {
            Some(sys) => {
                parts.extend(driver(sys));
                parts.push((2, vec![sep(), Span::styled("no GPUs found", s.error())]));
            }
            None => parts.push((2, vec![sep(), Span::styled("no GPU data", s.error())])),
        },
        GpuStatus::Loading => parts.push((2, vec![sep(), Span::styled("loading…", s.muted())])),
    }
    if state.is_demo() {
        parts.push((1, vec![sep(), Span::styled("DEMO (simulated)", s.warn())]));
    }
    if state.read_only {
        parts.push((3, vec![sep(), Span::styled("read-only", s.warn())]));
    }
    parts
}

pub fn header(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let parts = header_parts(state, s);
    let width = |spans: &[Span]| spans.iter().map(Span::width).sum::<usize>();
    // The most important parts that fit, taken rank by rank; shown in their own order.
    let mut ranks: Vec<u8> = parts.iter().map(|(rank, _)| *rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let mut room = usize::from(area.width);
    let mut shown = Vec::new();
    for rank in ranks {
        for (i, (r, spans)) in parts.iter().enumerate() {
            if *r == rank && width(spans) <= room {
                room -= width(spans);
                shown.push(i);
            }
        }
    }
    shown.sort_unstable();
    let spans: Vec<Span> = shown.into_iter().flat_map(|i| parts[i].1.clone()).collect();
    fastline::render(&Line::from(spans), area, buf);
}

/// One tab in the tab bar: its label (`" 3 Topology "`, `" 3 Topo"` or just `" 3"`) and its
/// columns from `start` to `end` (exclusive), shared by drawing and clicking.
struct TabLabel {
    tab: Tab,
    label: String,
    start: u16,
    end: u16,
}

/// The tab bar's labels, and whether tabs are hidden to the left and to the right.
struct TabBar {
    labels: Vec<TabLabel>,
    more_left: bool,
    more_right: bool,
}

/// How a tab reads in the bar.
#[derive(Clone, Copy, PartialEq)]
enum Label {
    Full,
    Short,
    Number,
}

/// The tab bar at `width` for `current`: a label is never cut. The full titles when they fit,
/// else the short ones (padded on both sides where that fits, under 88 columns, e.g. 80, on the
/// left only); narrower, the current tab keeps its short title, as many of its neighbours as
/// fit (nearest first) theirs, and the others read as their number key (`│ 7│`); narrower
/// still, tabs far from the current one are left out, and `‹`/`›` say so.
fn tab_bar(width: u16, current: Tab) -> TabBar {
    let width = usize::from(width);
    // The leading space (or `‹`), then each label and its `│`.
    let needed = |labels: &[(Tab, Label)], pad: usize| -> usize {
        1 + labels
            .iter()
            .map(|(t, l)| label_text(*t, *l, pad).chars().count() + 1)
            .sum::<usize>()
    };
    let all = |label: Label| Tab::ALL.iter().map(|t| (*t, label)).collect::<Vec<_>>();
    for (label, pad) in [(Label::Full, 2), (Label::Short, 2), (Label::Short, 1)] {
        let labels = all(label);
        if needed(&labels, pad) <= width {
            return place(&labels, pad, false, false);
        }
    }
    // Numbers, then the current tab's title, then its neighbours' titles nearest first.
    let at = current.position();
    let mut labels = all(Label::Number);
    labels[at].1 = Label::Short;
    let mut by_distance: Vec<usize> = (0..Tab::ALL.len()).filter(|i| *i != at).collect();
    by_distance.sort_by_key(|i| (i.abs_diff(at), *i));
    if needed(&labels, 1) <= width {
        for i in by_distance {
            labels[i].1 = Label::Short;
            if needed(&labels, 1) > width {
                labels[i].1 = Label::Number;
            }
        }
        return place(&labels, 1, false, false);
    }
    // Too narrow for every number: the tabs nearest the current one, with a marker on each
    // side that hides some (the trailing `›` takes a column).
    let (mut lo, mut hi) = (at, at);
    for i in by_distance {
        let (l, h) = (lo.min(i), hi.max(i));
        let right = usize::from(h + 1 < Tab::ALL.len());
        if needed(&labels[l..=h], 1) + right <= width {
            (lo, hi) = (l, h);
        }
    }
    place(&labels[lo..=hi], 1, lo > 0, hi + 1 < Tab::ALL.len())
}

fn label_text(tab: Tab, label: Label, pad: usize) -> String {
    let n = tab.position() + 1;
    match (label, pad) {
        (Label::Number, _) => format!(" {n}"),
        (Label::Full, 2) => format!(" {n} {} ", tab.title()),
        (Label::Full, _) => format!(" {n} {}", tab.title()),
        (Label::Short, 2) => format!(" {n} {} ", tab.short_title()),
        (Label::Short, _) => format!(" {n} {}", tab.short_title()),
    }
}

fn place(labels: &[(Tab, Label)], pad: usize, more_left: bool, more_right: bool) -> TabBar {
    let mut x = 1u16;
    let labels = labels
        .iter()
        .map(|(tab, label)| {
            let label = label_text(*tab, *label, pad);
            let start = x;
            let end = start + label.chars().count() as u16;
            x = end + 1;
            TabLabel {
                tab: *tab,
                label,
                start,
                end,
            }
        })
        .collect();
    TabBar {
        labels,
        more_left,
        more_right,
    }
}

pub fn tabs(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let bar = tab_bar(area.width, state.tab);
    let lead = if bar.more_left { "‹" } else { " " };
    let mut spans = vec![Span::styled(lead, s.muted())];
    for l in bar.labels {
        spans.push(Span::styled(l.label, s.tab(l.tab == state.tab)));
        spans.push(Span::styled("│", s.muted()));
    }
    if bar.more_right {
        spans.push(Span::styled("›", s.muted()));
    }
    fastline::render(&Line::from(spans), area, buf);
}

/// The tab under a click in the tab bar `area`, as drawn while `current` is shown.
pub fn tab_at(area: Rect, column: u16, current: Tab) -> Option<Tab> {
    let x = column.checked_sub(area.x)?;
    tab_bar(area.width, current)
        .labels
        .into_iter()
        .find(|l| x >= l.start && x < l.end)
        .map(|l| l.tab)
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

    /// The header drops whole parts where it is narrow, the least important first: at every
    /// width it reads as some of its parts in their order, none cut, `gpudeck` always, and
    /// `read-only` (what the screen may do) whenever it fits beside the GPUs' state, before
    /// the host.
    #[test]
    fn the_header_drops_whole_parts_and_cuts_none() {
        let theme = crate::config::Theme::builtin("dark").unwrap();
        let styles = Styles::new(&theme);
        let state = AppState::new(&Config::default(), "a-rather-long-hostname".into(), true);
        let parts = [
            " gpudeck",
            " │ a-rather-long-hostname",
            " │ loading…",
            " │ read-only",
        ];
        for width in 8..=120u16 {
            let area = Rect::new(0, 0, width, 1);
            let mut buf = Buffer::empty(area);
            header(area, &mut buf, &state, &styles);
            let row: String = (0..width).map(|x| buf[(x, 0)].symbol()).collect();
            let row = row.trim_end();
            let mut rest = row;
            let mut shown = Vec::new();
            for part in parts {
                if let Some(after) = rest.strip_prefix(part) {
                    rest = after;
                    shown.push(part);
                }
            }
            assert_eq!(rest, "", "at {width}: {row:?} is not whole parts in order");
            assert_eq!(shown.first(), Some(&" gpudeck"), "at {width}: {row:?}");
            let fits = usize::from(width) >= " gpudeck │ loading… │ read-only".chars().count();
            assert_eq!(shown.contains(&" │ read-only"), fits, "at {width}: {row:?}");
        }
    }

    /// The tab bar is whole labels at every width: each reads `N`, `N Title` or `N Short`
    /// (never `5 Ima`, as it did at 40 columns), the current tab's with its title, every tab
    /// from 40 columns up, `‹`/`›` where some are left out below; and a click on a label picks
    /// its tab.
    #[test]
    fn the_tab_bar_shows_whole_labels_at_every_width() {
        let theme = crate::config::Theme::builtin("dark").unwrap();
        let styles = Styles::new(&theme);
        for current in Tab::ALL {
            let mut state = AppState::new(&Config::default(), "testhost".into(), false);
            state.tab = current;
            for width in 12..=200u16 {
                let area = Rect::new(0, 0, width, 1);
                let mut buf = Buffer::empty(area);
                tabs(area, &mut buf, &state, &styles);
                let cells: Vec<&str> = (0..width).map(|x| buf[(x, 0)].symbol()).collect();
                let row = cells.concat();
                let at = |what: &str| format!("{current:?} at {width}: {row:?}: {what}");
                let body = row.trim_end();
                let more_right = body.ends_with('›');
                let body = body.strip_suffix('›').unwrap_or(body);
                let more_left = body.starts_with('‹');
                let body = &body[body.chars().next().map_or(0, char::len_utf8)..];
                let mut numbers = Vec::new();
                let mut x = 1u16;
                for label in body.split_terminator('│') {
                    let (n, title) = match label.trim().split_once(' ') {
                        Some((n, title)) => (n, Some(title)),
                        None => (label.trim(), None),
                    };
                    let n: usize = n.parse().unwrap_or_else(|_| panic!("{}", at(label)));
                    let tab = Tab::ALL[n - 1];
                    if let Some(title) = title {
                        assert!(
                            title == tab.title() || title == tab.short_title(),
                            "{}",
                            at(label)
                        );
                    } else {
                        assert_ne!(tab, current, "{}", at("the current tab has its title"));
                    }
                    let end = x + label.chars().count() as u16;
                    for column in x..end {
                        assert_eq!(tab_at(area, column, current), Some(tab), "{}", at(label));
                    }
                    assert_eq!(tab_at(area, end, current), None, "{}", at("a separator"));
                    x = end + 1;
                    numbers.push(n);
                }
                let (first, last) = (numbers[0], numbers[numbers.len() - 1]);
                assert_eq!(
                    numbers,
                    (first..=last).collect::<Vec<_>>(),
                    "{}",
                    at("order")
                );
                assert!(
                    numbers.contains(&(current.position() + 1)),
                    "{}",
                    at("current")
                );
                assert_eq!(more_left, first > 1, "{}", at("the left marker"));
                assert_eq!(more_right, last < 9, "{}", at("the right marker"));
                assert!(width < 40 || numbers.len() == 9, "{}", at("every tab"));
            }
        }
    }

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
