//! The processes table: every GPU process with its user, memory and container; sortable, filterable, killable.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use super::fastline;
use super::scroll::{table_offset, table_row_at};
use super::style::Styles;
use super::table::{self, Column, TableRow};
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

/// PIDs reach 7 digits (pid_max 4194304), memory 9 characters ("143771MiB" on an H200); a
/// number column grows to its widest value and is never cut. Narrower than every column, they
/// drop out in this order: TYPE, CONTAINER, CPU%, GPU%, USER, GPU, COMMAND; the PID and the
/// memory stay to the last (docs/keys.md says so).
const COLUMNS: [(Field, Column); 9] = [
    (Field::Gpu, Column::fixed("GPU", 3).number().keep(6)),
    (Field::Pid, Column::fixed("PID", 7).number().keep(9)),
    // A user name as long as the longest shown (24 at most), cut in the middle past that.
    (Field::User, Column::fit("USER", 8, 24).ident().keep(5)),
    (Field::Kind, Column::fixed("TYPE", 4).keep(1)),
    (Field::GpuMem, Column::fixed("GPU MEM", 9).number().keep(8)),
    (Field::GpuPct, Column::fixed("GPU%", 4).number().keep(4)),
    (Field::CpuPct, Column::fixed("CPU%", 5).number().keep(3)),
    // A short container id is copied, so it is shown whole or not at all.
    (
        Field::Container,
        Column::fixed("CONTAINER", 12).number().keep(2),
    ),
    (Field::Command, Column::flex("COMMAND", 8).keep(7)),
];

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
    let title = fit_title(title, area.width.saturating_sub(2));
    let title = Line::from(Span::styled(title, s.title()));
    let area = fastline::bordered(area, buf, &title, s.border());
    if procs.is_empty() {
        Paragraph::new(Line::styled("no processes", s.muted())).render(area, buf);
        return;
    }
    let (fields, columns): (Vec<Field>, Vec<Column>) = COLUMNS
        .iter()
        .filter(|(f, _)| watched || !matches!(f, Field::GpuPct | Field::CpuPct))
        .copied()
        .unzip();
    let visible = area.height.saturating_sub(1) as usize;
    let first = table_offset(selected, visible);
    let on_screen: Vec<(usize, TableRow)> = procs
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, p)| {
            let cells = fields.iter().map(|f| Span::raw(cell_text(*f, p))).collect();
            (i, TableRow::new(cells, s.text()))
        })
        .collect();
    let rows: Vec<TableRow> = on_screen.iter().map(|(_, r)| r.clone()).collect();
    // Only the rows on screen size the number columns, as they are the ones drawn.
    let shown: Vec<(usize, u16)> = table::widths(&columns, &rows, area.width)
        .into_iter()
        .enumerate()
        .filter_map(|(i, w)| w.map(|w| (i, w)))
        .collect();
    let rows = on_screen.into_iter().map(|(i, r)| {
        let cells = shown.iter().map(|&(c, w)| {
            let column = &columns[c];
            cell(fields[c], table::fit_cell(&r.cells[c].content, column, w))
        });
        let row = Row::new(cells.collect::<Vec<_>>());
        if Some(i) == selected {
            row.style(s.selected())
        } else {
            row.style(s.text())
        }
    });
    let header = Row::new(
        shown
            .iter()
            .map(|&(c, w)| cell(fields[c], table::header_cell(columns[c].title, w))),
    )
    .style(s.header());
    let widths: Vec<Constraint> = shown.iter().map(|&(_, w)| Constraint::Length(w)).collect();
    Table::new(rows, widths)
        .header(header)
        .column_spacing(table::SPACING)
        .render(area, buf);
}

/// A box title of ` a · b · c ` parts in `width` columns: the last parts drop out whole (at 60
/// columns it read `containers simulate`, cut with no mark); a first part alone too long ends
/// in `…`.
fn fit_title(title: &str, width: u16) -> String {
    let mut parts: Vec<&str> = title.trim().split(" · ").collect();
    loop {
        let text = format!(" {} ", parts.join(" · "));
        if Span::raw(text.as_str()).width() <= usize::from(width) || parts.len() == 1 {
            return match parts.len() {
                1 => super::table::cut(&text, width),
                _ => text,
            };
        }
        parts.pop();
    }
}

/// Numbers line up on their last digit; words and container ids on their first letter.
fn cell(field: Field, text: String) -> Cell<'static> {
    let line = Line::from(text);
    let number = matches!(
        field,
        Field::Gpu | Field::Pid | Field::GpuMem | Field::GpuPct | Field::CpuPct
    );
    Cell::from(if number { line.right_aligned() } else { line })
}

fn cell_text(field: Field, p: &GpuProcess) -> String {
    match field {
        Field::Gpu => p.gpu_index.to_string(),
        Field::Pid => p.pid.to_string(),
        Field::User => p.user.as_deref().unwrap_or(NA).to_string(),
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
        Field::Command => p.command.as_deref().unwrap_or(NA).to_string(),
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

#[cfg(test)]
mod title_tests {
    use super::fit_title;

    #[test]
    fn a_title_drops_its_last_parts_whole_and_a_lone_part_is_cut_visibly() {
        let title = " Processes · 7 · sorted by GPU MEM ↓ · containers simulated ";
        assert_eq!(fit_title(title, 78), title);
        assert_eq!(
            fit_title(title, 58),
            " Processes · 7 · sorted by GPU MEM ↓ "
        );
        assert_eq!(fit_title(title, 36), " Processes · 7 ");
        assert_eq!(fit_title(title, 8), " Proces…");
    }
}
