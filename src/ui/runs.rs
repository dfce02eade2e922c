//! The Runs tab: every training run with its state, GPUs, duration, exit code and GPU use, the
//! selected run in detail below it, or its logs filling the tab.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::run_detail::{gpus, state_style};
use super::scroll::{table_offset, table_row_at};
use super::style::Styles;
use super::table::{self, Column, TableRow};
use super::{logs, run_detail};
use crate::app::state::AppState;
use crate::runs::watch::RunRow;
use crate::units;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let view = &state.runs;
    if view.log_open {
        if let Some(logs_view) = &view.logs {
            logs::render(area, buf, logs_view, state.page_size, s);
            return;
        }
    }
    if view.runs.is_empty() {
        empty(area, buf, state, s);
        return;
    }
    let (list, detail) = layout(area, view.runs.len());
    table(list, buf, state, s);
    if let Some(detail) = detail {
        let detail = warnings(detail, buf, &view.warnings, s);
        run_detail::render(detail, buf, state, s);
    }
}

/// Runs that could not be read (a damaged record, bad metrics lines), each naming the file and
/// why, above the detail (a third of it at most); the area left for the detail.
fn warnings(area: Rect, buf: &mut Buffer, warnings: &[String], s: &Styles) -> Rect {
    if warnings.is_empty() || area.width == 0 {
        return area;
    }
    let width = usize::from(area.width);
    let needed: usize = warnings
        .iter()
        .map(|w| w.chars().count().div_ceil(width).max(1))
        .sum();
    let height = (needed as u16).min(area.height / 3);
    let lines: Vec<Line> = warnings
        .iter()
        .map(|w| Line::styled(w.clone(), s.warn()))
        .collect();
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(Rect { height, ..area }, buf);
    Rect {
        y: area.y + height,
        height: area.height - height,
        ..area
    }
}

fn empty(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let mut lines = vec![if let Some(error) = &state.runs.store_error {
        Line::styled(error.replace('\n', " "), s.error())
    } else if state.runs.listed {
        Line::styled("No training runs yet.", s.text())
    } else {
        Line::styled("reading the runs…", s.muted())
    }];
    if state.runs.listed && state.runs.store_error.is_none() {
        lines.extend([
            Line::raw(""),
            Line::styled(
                "Start one from a shell; it keeps running when gpudeck or the SSH session goes:",
                s.muted(),
            ),
            Line::styled(
                "  gpudeck run --gpus 0,1 --launcher per-gpu -- python train.py",
                s.accent(),
            ),
            Line::styled(
                "It appears here with its GPUs, logs and training progress.",
                s.muted(),
            ),
        ]);
    }
    for w in &state.runs.warnings {
        lines.push(Line::styled(w.clone(), s.warn()));
    }
    if let Some(services) = services_elsewhere(state) {
        lines.extend([Line::raw(""), Line::styled(services, s.muted())]);
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .title(Span::styled(" Runs ", s.title()))
                .border_style(s.border()),
        )
        .render(area, buf);
}

/// Services are runs too, listed in their own tab (as `gpudeck runs` leaves them to `gpudeck
/// services`): how many, and where.
fn services_elsewhere(state: &AppState) -> Option<String> {
    match state.services.rows.len() {
        0 => None,
        n => Some(format!("{} in tab 9", units::plural(n, "service"))),
    }
}

/// The list on top, the detail below (the list alone under 14 lines).
fn layout(area: Rect, runs: usize) -> (Rect, Option<Rect>) {
    super::layout::list_and_detail(area, runs, 14)
}

/// The run row under a click, on the layout `render` draws.
pub fn row_at(area: Rect, state: &AppState, row: u16) -> Option<usize> {
    let view = &state.runs;
    if view.log_open || view.runs.is_empty() {
        return None;
    }
    let (list, _) = layout(area, view.runs.len());
    table_row_at(list, view.selected_shown(), view.shown().len(), row)
}

/// The columns: the short id as wide as the ids shown (cut in the middle past 28), the command
/// gets what is left; figures are never cut. Narrower than every column, they drop out in this
/// order: LAUNCHER, GPU UTIL, STARTED, TIME, GPUS, EXIT, COMMAND, STATE; the id stays.
const COLUMNS: [Column; 9] = [
    Column::fit("RUN", 3, 28).ident().keep(9),
    Column::fixed("STATE", 9).keep(8),
    Column::fixed("GPUS", 7).number().keep(5),
    Column::fixed("LAUNCHER", 8).keep(1),
    Column::fixed("STARTED", 8).number().keep(3),
    Column::fixed("TIME", 7).number().keep(4),
    Column::fixed("EXIT", 4).number().keep(6),
    Column::fixed("GPU UTIL", 8).number().keep(2),
    Column::flex("COMMAND", 8).keep(7),
];

fn table(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let view = &state.runs;
    let shown = view.shown();
    let running = view.running();
    let mut title = vec![Span::styled(
        format!(" Runs · {} · {running} running ", view.runs.len()),
        s.title(),
    )];
    if let Some(filter) = view.filter.title(shown.len(), view.runs.len()) {
        title.push(Span::styled(format!("· {filter} "), s.accent()));
    }
    if !view.warnings.is_empty() {
        title.push(Span::styled(
            format!("· {} ", units::plural(view.warnings.len(), "warning")),
            s.warn(),
        ));
    }
    if let Some(services) = services_elsewhere(state) {
        title.push(Span::styled(format!("· {services} "), s.muted()));
    }
    let block = Block::bordered()
        .title(Line::from(title))
        .border_style(s.border());
    let selected = view.selected_shown();
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    let now_ms = state.now.max(0) as u64 * 1000;
    let rows = shown
        .iter()
        .skip(first)
        .take(visible)
        .map(|&i| run_row(&view.runs[i], now_ms, s))
        .collect();
    let selected = selected.and_then(|row| row.checked_sub(first));
    table::render(area, buf, block, &COLUMNS, rows, selected, s);
    if shown.is_empty() && !view.filter.is_empty() {
        table::no_match(area, buf, &view.filter.text, s);
    }
}

fn run_row(r: &RunRow, now_ms: u64, s: &Styles) -> TableRow {
    let started = r.started_ms.unwrap_or(r.created_ms);
    let ago = if now_ms > 0 {
        format!(
            "{} ago",
            units::age(now_ms.saturating_sub(started) as i64 / 1000)
        )
    } else {
        "-".into()
    };
    let duration = r.started_ms.map_or_else(
        || "-".into(),
        |start| {
            let end = r.ended_ms.unwrap_or(now_ms.max(start));
            units::run_duration(end.saturating_sub(start))
        },
    );
    let util = r
        .summary
        .as_ref()
        .and_then(|s| s.mean_util_pct())
        .map_or_else(|| "-".into(), |u| format!("{u:.0}%"));
    let text = Span::raw;
    TableRow::new(
        vec![
            text(short_id(&r.id).to_string()),
            Span::styled(r.state.to_string(), state_style(r.state, s)),
            text(match &r.job {
                Some(job) => job.gpus.clone(),
                None => gpus(&r.gpus),
            }),
            text(launcher(r)),
            text(ago),
            text(duration),
            text(r.exit_code.map_or_else(|| "-".into(), |c| c.to_string())),
            text(util),
            match crate::runs::recorded::xids::telling(&r.xids) {
                Some(hit) => Span::styled(format!("Xid {} · {}", hit.xid, r.command), s.error()),
                None => text(r.command.clone()),
            },
        ],
        s.text(),
    )
}

/// The id without its date and time (the STARTED column has them; the detail the whole id):
/// `resnet-3f9a` fits 80 columns where `20261122-173500-resnet-3f9a` would not.
pub(super) fn short_id(id: &str) -> &str {
    let date_time = id
        .char_indices()
        .filter(|(_, c)| *c == '-')
        .nth(1)
        .map(|(i, _)| i + 1);
    match date_time {
        Some(i) if id[..i].chars().all(|c| c.is_ascii_digit() || c == '-') => &id[i..],
        _ => id,
    }
}

fn launcher(r: &RunRow) -> String {
    let name = r.launcher.as_str();
    if r.image.is_some() {
        format!("{name}·ctr")
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_longer_than_a_u16_still_gets_a_third_of_the_tab() {
        let area = Rect::new(0, 0, 80, 60);
        for runs in [65_533, 65_535, 70_000, 1_000_000] {
            let (list, detail) = layout(area, runs);
            assert_eq!(list.height, 20, "{runs} runs");
            assert_eq!(detail.map(|d| d.height), Some(40), "{runs} runs");
        }
    }
}
