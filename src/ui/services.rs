//! The Services tab: every notebook, TensorBoard and Triton server with its state, GPUs, idle
//! time and place, as `gpudeck services` lists them; the selected one below, its URL and SSH line
//! whole (wrapped, never cut), its ports, kernels or models, and why it does not answer; or its
//! output filling the tab.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::logs;
use super::scroll::{table_offset, table_row_at};
use super::service_detail::{self, shown_state};
use super::style::Styles;
use super::table::{self, Column, TableRow};
use crate::app::state::AppState;

use crate::services::ServiceRow;
use crate::units;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let view = &state.services;
    if view.log_open {
        if let Some(logs_view) = &view.logs {
            logs::render(area, buf, logs_view, state.page_size, s);
            return;
        }
    }
    if view.rows.is_empty() {
        empty(area, buf, state, s);
        return;
    }
    let (list, detail) = layout(area, view.rows.len());
    table(list, buf, state, s);
    if let (Some(area), Some(service)) = (detail, view.selected_service()) {
        service_detail::render(area, buf, state, service, s);
    }
}

/// The list on top, the detail below (the list alone under 12 lines).
fn layout(area: Rect, rows: usize) -> (Rect, Option<Rect>) {
    super::layout::list_and_detail(area, rows, 12)
}

/// The service row under a click, on the layout `render` draws.
pub fn row_at(area: Rect, state: &AppState, row: u16) -> Option<usize> {
    let view = &state.services;
    if view.log_open || view.rows.is_empty() {
        return None;
    }
    let (list, _) = layout(area, view.rows.len());
    table_row_at(list, view.selected_row(), view.rows.len(), row)
}

/// The ways to start a service, each a command and what it starts.
const WAYS_TO_START: [(&str, &str); 4] = [
    (
        "gpudeck notebook --host --gpus 0",
        "JupyterLab from your PATH",
    ),
    (
        "gpudeck notebook IMAGE --gpus 0",
        "JupyterLab in a local image",
    ),
    ("gpudeck tensorboard RUN --host", "a run's TensorBoard"),
    (
        "gpudeck triton REPO --image IMAGE",
        "Triton on a model repository",
    ),
];

/// No service yet: how to start one. Every line is wrapped, never cut; where a command and
/// what it starts do not fit one line, what it starts goes on a line of its own above it.
fn empty(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let view = &state.services;
    let mut lines = vec![match (&view.store_error, view.listed) {
        (Some(error), _) => Line::styled(error.replace('\n', " "), s.error()),
        (None, true) => Line::styled("No services.", s.text()),
        (None, false) => Line::styled("looking for services…", s.muted()),
    }];
    if view.listed && view.store_error.is_none() {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            "n starts a notebook from here; or from a shell (it appears here):",
            s.muted(),
        ));
        let inner = usize::from(area.width.saturating_sub(2));
        let command_width = WAYS_TO_START
            .iter()
            .map(|(c, _)| c.len())
            .max()
            .unwrap_or(0);
        let one_line = WAYS_TO_START
            .iter()
            .all(|(_, what)| 2 + command_width + 2 + what.len() <= inner);
        for (command, what) in WAYS_TO_START {
            if one_line {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {command:<command_width$}  "), s.accent()),
                    Span::styled(what, s.muted()),
                ]));
            } else {
                lines.push(Line::styled(format!("{what}:"), s.muted()));
                lines.push(Line::styled(format!("  {command}"), s.accent()));
            }
        }
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .title(Span::styled(" Services ", s.title()))
                .border_style(s.border()),
        )
        .render(area, buf);
}

/// As `gpudeck services`: the whole id where the tab is wide, the id without its date where not
/// (cut in the middle past 34); figures are never cut. Narrower than every column, they drop
/// out in this order: KIND, WHERE, IDLE, GPUS, STATUS; the id stays.
/// STATUS is its HEALTH while the run runs, else its STATE.
const COLUMNS: [Column; 6] = [
    Column::fit("SERVICE", 7, 34).ident().keep(9),
    Column::fixed("KIND", 11).keep(2),
    Column::fixed("STATUS", 9).keep(8),
    Column::fit("GPUS", 4, 24).number().keep(6),
    Column::fixed("IDLE", 7).number().keep(5),
    Column::flex("WHERE", 9).keep(3),
];

fn table(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let view = &state.services;
    let mut title = vec![Span::styled(
        format!(" Services · {} · {} live ", view.rows.len(), view.live()),
        s.title(),
    )];
    let idle = view.idle_alerts();
    if idle > 0 {
        title.push(Span::styled(
            format!("· {} ", units::plural(idle, "idle notebook")),
            s.warn(),
        ));
    }
    let block = Block::bordered()
        .title(Line::from(title))
        .border_style(s.border());
    let selected = view.selected_row();
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    // The whole id when every one fits beside the other columns (at 120 columns and up).
    let whole = area.width >= 120;
    let rows = view
        .rows
        .iter()
        .skip(first)
        .take(visible)
        .map(|r| service_row(r, state, whole, s))
        .collect();
    let selected = selected.and_then(|row| row.checked_sub(first));
    table::render(area, buf, block, &COLUMNS, rows, selected, s);
}

fn service_row(r: &ServiceRow, state: &AppState, whole: bool, s: &Styles) -> TableRow {
    let (shown, style) = shown_state(r, s);
    let idle = match (r.idle_seconds, r.idle_alert) {
        (Some(secs), true) => {
            Span::styled(format!("{}!", units::run_duration(secs * 1000)), s.warn())
        }
        (Some(secs), false) => Span::raw(units::run_duration(secs * 1000)),
        (None, _) => Span::raw("-"),
    };
    let id = match whole {
        true => r.id.clone(),
        false => super::runs::short_id(&r.id).to_string(),
    };
    TableRow::new(
        vec![
            Span::raw(id),
            Span::raw(r.kind.as_str()),
            Span::styled(shown, style),
            Span::raw(gpus_with_memory(r, state)),
            idle,
            // As `gpudeck services`: the image is in the detail.
            Span::raw(match r.image {
                Some(_) => "container",
                None => "host",
            }),
        ],
        s.text(),
    )
}

/// "1 (3.2GiB)": the service's GPUs and the memory its own processes hold on them (its
/// kernels', its container's; not another job's on the same GPU), from the GPU data the
/// dashboard reads anyway, as `gpudeck services` shows it.
fn gpus_with_memory(r: &ServiceRow, state: &AppState) -> String {
    let memory = state.data().and_then(|d| r.own_gpu_memory(&d.samples));
    r.gpus_with_memory(memory)
}
