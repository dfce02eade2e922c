//! The Doctor tab: every check with its status, and the selected check's whole finding and fix.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Widget, Wrap};

use super::scroll::{table_offset, table_row_at};
use super::style::Styles;
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
    let rows = report
        .checks
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, c)| {
            let row = Row::new(vec![
                Cell::from(Span::styled(c.status.word(), status_style(c.status, s))),
                Cell::from(c.family.heading()),
                Cell::from(c.title),
                Cell::from(c.detail.clone()),
            ]);
            if i == view.selected {
                row.style(s.selected())
            } else {
                row.style(s.text())
            }
        });
    // The area column only where the finding still gets room.
    let area_w = if list.width >= 110 { 14 } else { 0 };
    let widths = [
        Constraint::Length(5),
        Constraint::Length(area_w),
        Constraint::Length(25),
        Constraint::Min(20),
    ];
    Table::new(rows, widths)
        .header(Row::new(["", "AREA", "CHECK", "FINDING"]).style(s.header()))
        .block(block)
        .render(list, buf);
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
