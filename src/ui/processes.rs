//! The processes table: every GPU process with its user, memory and container; sortable, filterable, killable.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use super::fastline;
use super::scroll::{table_offset, table_row_at};
use super::style::Styles;
use crate::app::processes::sort_label;
use crate::app::state::AppState;
use crate::gpu::{GpuProcess, ProcessKind};
use crate::units::{self, NA};

/// What a column shows.
#[derive(Clone, Copy)]
enum Field {
    Gpu,
    Pid,
    User,
    Kind,
    GpuMem,
    GpuPct,
    CpuPct,
    Container,
    Command,
}

/// A column: its header, width (`None`: the spare width) and whether it holds a number.
struct Column {
    field: Field,
    title: &'static str,
    width: Option<u16>,
    numeric: bool,
}

const fn col(field: Field, title: &'static str, width: u16, numeric: bool) -> Column {
    Column {
        field,
        title,
        width: Some(width),
        numeric,
    }
}

/// PIDs reach 7 digits (pid_max 4194304), memory 9 characters ("143771MiB" on an H200).
const GPU: Column = col(Field::Gpu, "GPU", 3, true);
const PID: Column = col(Field::Pid, "PID", 7, true);
const USER: Column = col(Field::User, "USER", 8, false);
const TYPE: Column = col(Field::Kind, "TYPE", 4, false);
const GPU_MEM: Column = col(Field::GpuMem, "GPU MEM", 9, true);
const GPU_PCT: Column = col(Field::GpuPct, "GPU%", 4, true);
const CPU_PCT: Column = col(Field::CpuPct, "CPU%", 5, true);
const CONTAINER: Column = col(Field::Container, "CONTAINER", 12, false);
const COMMAND: Column = Column {
    field: Field::Command,
    title: "COMMAND",
    width: None,
    numeric: false,
};
const SPACING: u16 = 1;

/// Draws a process table; `selected` is an index into `procs`. `watched`: the Processes tab,
/// where each process's GPU share and CPU are read, so their columns are worth their width.
pub fn process_table(
    area: Rect,
    buf: &mut Buffer,
    procs: &[&GpuProcess],
    selected: Option<usize>,
    title: &str,
    watched: bool,
    s: &Styles,
) {
    // The box drawn apart, the cheap way, and the table inside it, as `.block(..)` would.
    let title = Line::from(Span::styled(title, s.title()));
    let area = fastline::bordered(area, buf, &title, s.border());
    if procs.is_empty() {
        Paragraph::new(Line::styled("no processes", s.muted())).render(area, buf);
        return;
    }
    let columns: Vec<&Column> = if watched {
        vec![
            &GPU, &PID, &USER, &TYPE, &GPU_MEM, &GPU_PCT, &CPU_PCT, &CONTAINER, &COMMAND,
        ]
    } else {
        vec![&GPU, &PID, &USER, &TYPE, &GPU_MEM, &CONTAINER, &COMMAND]
    };
    let fixed: u16 = columns.iter().filter_map(|c| c.width).sum();
    let gaps = SPACING * (columns.len() as u16 - 1);
    let command_width = area.width.saturating_sub(fixed + gaps);
    let visible = area.height.saturating_sub(1) as usize;
    let first = table_offset(selected, visible);
    let rows = procs
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, p)| {
            let cells = columns
                .iter()
                .map(|c| cell(c, cell_text(c, p, usize::from(command_width))));
            let row = Row::new(cells.collect::<Vec<_>>());
            if Some(i) == selected {
                row.style(s.selected())
            } else {
                row.style(s.text())
            }
        });
    let header = Row::new(columns.iter().map(|c| cell(c, c.title.to_string()))).style(s.header());
    let widths: Vec<Constraint> = columns
        .iter()
        .map(|c| c.width.map_or(Constraint::Fill(1), Constraint::Length))
        .collect();
    Table::new(rows, widths)
        .header(header)
        .column_spacing(SPACING)
        .render(area, buf);
}

/// Numbers line up on their last digit; words on their first letter.
fn cell(column: &Column, text: String) -> Cell<'static> {
    let line = Line::from(text);
    Cell::from(if column.numeric {
        line.right_aligned()
    } else {
        line
    })
}

fn cell_text(column: &Column, p: &GpuProcess, command_width: usize) -> String {
    match column.field {
        Field::Gpu => p.gpu_index.to_string(),
        Field::Pid => p.pid.to_string(),
        Field::User => units::truncate(p.user.as_deref().unwrap_or(NA), 8),
        Field::Kind => match p.kind {
            ProcessKind::Compute => "C",
            ProcessKind::Graphics => "G",
        }
        .to_string(),
        Field::GpuMem => p
            .used_memory_bytes
            .map_or_else(|| NA.to_string(), units::mib),
        Field::GpuPct => units::pct(p.gpu_util.map(|u| u.sm_pct)),
        Field::CpuPct => p
            .cpu_pct
            .map_or_else(|| NA.to_string(), |c| format!("{c:.0}%")),
        Field::Container => p
            .container
            .as_ref()
            .map_or_else(|| "-".to_string(), |c| c.short_id().to_string()),
        Field::Command => units::truncate(p.command.as_deref().unwrap_or(NA), command_width),
    }
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
    let simulated = |p: &&GpuProcess| p.container.as_ref().is_some_and(|c| c.is_simulated());
    if procs.iter().any(simulated) {
        // The ids are the simulation's: the Containers tab (the real engine) has none of them.
        title.push_str("· containers simulated ");
    }
    if let Some(pid) = state.processes.view_pid {
        super::process_view::render(area, buf, state, pid, s);
        return;
    }
    process_table(area, buf, &procs, selected, &title, true, s);
}

/// The process row under a click on screen row `row` (none while a process's view is open).
pub fn row_at(body: Rect, state: &AppState, row: u16) -> Option<usize> {
    if state.processes.view_pid.is_some() {
        return None;
    }
    let len = state.visible_processes().len();
    table_row_at(body, state.selected_process_row(), len, row)
}
