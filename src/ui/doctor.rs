//! The Doctor tab: every check with its status, and the selected check's whole finding and fix.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::scroll::{range_marker, table_offset, table_row_at};
use super::style::Styles;
use super::table::{self, Column, TableRow};
use crate::app::doctor::DoctorView;
use crate::app::state::AppState;
use crate::doctor::{Check, Status};
use crate::units;

/// Height of the pane that shows the selected check in full: less on a short terminal.
const DETAIL_HEIGHT: u16 = 9;
const DETAIL_HEIGHT_SHORT: u16 = 6;

pub fn status_style(status: Status, s: &Styles) -> Style {
    match status {
        Status::Pass => s.ok(),
        Status::Warn => s.warn(),
        Status::Fail => s.error(),
        Status::Skip => s.muted(),
    }
}

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let view = &state.doctor;
    let Some(report) = &view.report else {
        let text = if view.running {
            "diagnosing the driver, the GPUs, Docker and CUDA…"
        } else {
            "press r to diagnose this machine"
        };
        Paragraph::new(Line::styled(text, s.muted()))
            .wrap(Wrap { trim: false })
            .block(
                Block::bordered()
                    .title(Span::styled(" Doctor ", s.title()))
                    .border_style(s.border()),
            )
            .render(area, buf);
        return;
    };
    let (list, detail) = layout(area, view.len());
    let summary = report.summary();
    let age = match (view.made_at, view.running) {
        (_, true) => "running again…".to_string(),
        (Some(at), false) => format!("{}s ago · r again", (state.now - at).max(0)),
        (None, false) => String::new(),
    };
    let block = Block::bordered()
        .title(Line::from(vec![
            Span::styled(" Doctor · ", s.title()),
            Span::styled(format!("{} passed", summary.passed), s.ok()),
            Span::styled(" · ", s.title()),
            Span::styled(units::plural(summary.warnings, "warning"), s.warn()),
            Span::styled(" · ", s.title()),
            Span::styled(format!("{} failed", summary.failed), s.error()),
            Span::styled(" · ", s.title()),
            Span::styled(format!("{} skipped", summary.skipped), s.muted()),
            Span::styled(format!(" · {age} "), s.muted()),
        ]))
        .border_style(s.border());
    let visible = list.height.saturating_sub(3) as usize;
    let first = table_offset(Some(view.selected), visible);
    // The area column only where the finding still gets room; there, check names are whole.
    let wide = list.width >= 110;
    let rows = report
        .checks
        .iter()
        .skip(first)
        .take(visible)
        .map(|c| {
            let mut cells = vec![Span::styled(c.status.word(), status_style(c.status, s))];
            if wide {
                cells.push(Span::raw(c.family.heading()));
            }
            cells.extend([Span::raw(c.title), Span::raw(c.detail.clone())]);
            TableRow::new(cells, s.text())
        })
        .collect();
    let mut columns = vec![Column::fixed("", 5).keep(9)];
    if wide {
        columns.push(Column::fixed("AREA", 14).keep(1));
    }
    columns.extend([
        Column::fit("CHECK", 12, if wide { 60 } else { 25 }).keep(8),
        Column::flex("FINDING", 20).keep(7),
    ]);
    let selected = view.selected.checked_sub(first);
    table::render(list, buf, block, &columns, rows, selected, s);
    if let Some(detail) = detail {
        render_detail(detail, buf, view, s);
    }
}

fn render_detail(area: Rect, buf: &mut Buffer, view: &DoctorView, s: &Styles) {
    let block = Block::bordered().border_style(s.border());
    let Some(c) = view.selected_check() else {
        block.render(area, buf);
        return;
    };
    let text = Paragraph::new(detail_lines(c, s)).wrap(Wrap { trim: false });
    let inner = block.inner(area);
    let (first, lines) = detail_window(&text, inner, view.detail_scroll);
    let mut block = block.title(Span::styled(format!(" {} · {} ", c.title, c.id), s.title()));
    // A detail longer than its pane says which lines it shows and how to see the others.
    let shown = usize::from(inner.height).min(lines - first);
    if let Some(marker) = range_marker(first, shown, lines) {
        block = block
            .title_bottom(Line::styled(format!(" lines {marker} J/K "), s.warn()).right_aligned());
    }
    text.scroll((u16::try_from(first).unwrap_or(u16::MAX), 0))
        .block(block)
        .render(area, buf);
}

/// The first line shown of a detail scrolled `scroll` lines into `inner` (stopping where its
/// last line is at the bottom), and how many lines it has wrapped to that width.
fn detail_window(text: &Paragraph<'_>, inner: Rect, scroll: usize) -> (usize, usize) {
    let lines = text.line_count(inner.width);
    let last_top = lines.saturating_sub(usize::from(inner.height));
    (scroll.min(last_top), lines)
}

/// The furthest the selected check's detail scrolls on a screen of `area` (the whole terminal):
/// the app clamps the scroll to it each frame, so that `K` moves at once after many `J`s.
pub fn detail_scroll_limit(area: Rect, state: &AppState) -> usize {
    let body = super::layout::Screen::for_state(area, state).body;
    let (Some(c), (_, Some(detail))) = (
        state.doctor.selected_check(),
        layout(body, state.doctor.len()),
    ) else {
        return 0;
    };
    let theme = crate::config::Theme::monochrome();
    let s = Styles::new(&theme);
    let text = Paragraph::new(detail_lines(c, &s)).wrap(Wrap { trim: false });
    detail_window(&text, Block::bordered().inner(detail), usize::MAX).0
}

/// The fix first (it is what the user came for, and a short pane still shows it), then the
/// finding.
fn detail_lines<'a>(c: &'a Check, s: &Styles) -> Vec<Line<'a>> {
    let status = Span::styled(format!("{} ", c.status.word()), status_style(c.status, s));
    match &c.fix {
        Some(fix) => vec![
            Line::from(vec![
                status,
                Span::styled(format!("fix: {fix}"), s.accent()),
            ]),
            Line::from(vec![
                Span::styled("found: ", s.muted()),
                Span::styled(c.detail.as_str(), s.text()),
            ]),
        ],
        None => vec![Line::from(vec![
            status,
            Span::styled(c.detail.as_str(), s.text()),
        ])],
    }
}

/// The checks list and, when there is room, the pane for the selected check: the list as tall
/// as its `checks` need (at least 8 rows), the pane the rest, at least `DETAIL_HEIGHT` rows
/// (`DETAIL_HEIGHT_SHORT` on a short terminal).
fn layout(area: Rect, checks: usize) -> (Rect, Option<Rect>) {
    let detail_h = if area.height >= 30 {
        DETAIL_HEIGHT
    } else {
        DETAIL_HEIGHT_SHORT
    };
    if area.height < detail_h + 8 {
        return (area, None);
    }
    let wanted = u16::try_from(checks + 3).unwrap_or(u16::MAX).max(8);
    let list = Rect {
        height: wanted.min(area.height - detail_h),
        ..area
    };
    let detail = Rect {
        y: area.y + list.height,
        height: area.height - list.height,
        ..area
    };
    (list, Some(detail))
}

/// The check row under a click, on the layout `render` draws.
pub fn row_at(area: Rect, state: &AppState, row: u16) -> Option<usize> {
    let (list, _) = layout(area, state.doctor.len());
    table_row_at(list, Some(state.doctor.selected), state.doctor.len(), row)
}
