//! The processes table: every GPU process with its user, memory and container; sortable, filterable, killable.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Widget};

use super::style::Styles;
use super::{table_offset, table_row_at};
use crate::app::processes::sort_label;
use crate::app::state::AppState;
use crate::gpu::{GpuProcess, ProcessKind};
use crate::units::{self, NA};

const COLUMNS: [&str; 7] = [
    "GPU",
    "PID",
    "USER",
    "TYPE",
    "GPU MEM",
    "CONTAINER",
    "COMMAND",
];

/// Draws a process table; `selected` is an index into `procs`.
pub fn process_table(
    area: Rect,
    buf: &mut Buffer,
    procs: &[&GpuProcess],
    selected: Option<usize>,
    title: &str,
    s: &Styles,
) {
    let block = Block::bordered()
        .title(Span::styled(title.to_string(), s.title()))
        .border_style(s.border());
    if procs.is_empty() {
        Paragraph::new(Line::styled("no processes", s.muted()))
            .block(block)
            .render(area, buf);
        return;
    }
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    let rows = procs
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, p)| {
            let row = Row::new(vec![
                Cell::from(p.gpu_index.to_string()),
                Cell::from(p.pid.to_string()),
                Cell::from(p.user.clone().unwrap_or_else(|| NA.into())),
                Cell::from(match p.kind {
                    ProcessKind::Compute => "C",
                    ProcessKind::Graphics => "G",
                }),
                Cell::from(
                    p.used_memory_bytes
                        .map_or_else(|| NA.to_string(), units::mib),
                ),
                Cell::from(
                    p.container
                        .as_ref()
                        .map_or_else(|| "-".to_string(), |c| c.short_id().to_string()),
                ),
                Cell::from(p.command.clone().unwrap_or_else(|| NA.into())),
            ]);
            if Some(i) == selected {
                row.style(s.selected())
            } else {
                row.style(s.text())
            }
        });
    let header = Row::new(COLUMNS.iter().map(|c| Cell::from(*c))).style(s.header());
    let widths = [
        Constraint::Length(3),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Length(4),
        Constraint::Length(9),
        Constraint::Length(12),
        Constraint::Min(10),
    ];
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .block(block)
        .render(area, buf);
}

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let procs = state.visible_processes();
    let selected = state.selected_process_row();
    let order = if state.processes.descending {
        "↓"
    } else {
        "↑"
    };
    let mut title = format!(
        " Processes · {} · sorted by {} {} ",
        procs.len(),
        sort_label(state.processes.sort),
        order
    );
    if !state.processes.filter.is_empty() {
        title.push_str(&format!("· filter \"{}\" ", state.processes.filter.text));
    }
    process_table(area, buf, &procs, selected, &title, s);
}

/// The process row under a click on screen row `row`.
pub fn row_at(body: Rect, state: &AppState, row: u16) -> Option<usize> {
    let len = state.visible_processes().len();
    table_row_at(body, state.selected_process_row(), len, row)
}
