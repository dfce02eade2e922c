//! The Doctor tab: every check with its status, and the selected check's whole finding and fix.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::scroll::{table_offset, table_row_at};
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
            .block(
                Block::bordered()
                    .title(Span::styled(" Doctor ", s.title()))
                    .border_style(s.border()),
            )
            .render(area, buf);
        return;
    };
    let (list, detail) = layout(area);
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
    Paragraph::new(detail_lines(c, s))
        .wrap(Wrap { trim: false })
        .block(block.title(Span::styled(format!(" {} · {} ", c.title, c.id), s.title())))
        .render(area, buf);
}

fn detail_lines<'a>(c: &'a Check, s: &Styles) -> Vec<Line<'a>> {
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{} ", c.status.word()), status_style(c.status, s)),
        Span::styled(c.detail.as_str(), s.text()),
    ])];
    if let Some(fix) = &c.fix {
        lines.push(Line::styled(format!("fix: {fix}"), s.accent()));
    }
    lines
}

/// The checks list and, when there is room, the pane for the selected check.
fn layout(area: Rect) -> (Rect, Option<Rect>) {
    let detail_h = if area.height >= 30 {
        DETAIL_HEIGHT
    } else {
        DETAIL_HEIGHT_SHORT
    };
    if area.height < detail_h + 8 {
        return (area, None);
    }
    let list = Rect {
        height: area.height - detail_h,
        ..area
    };
    let detail = Rect {
        y: area.y + list.height,
        height: detail_h,
        ..area
    };
    (list, Some(detail))
}

/// The check row under a click, on the layout `render` draws.
pub fn row_at(area: Rect, state: &AppState, row: u16) -> Option<usize> {
    let (list, _) = layout(area);
    table_row_at(list, Some(state.doctor.selected), state.doctor.len(), row)
}
