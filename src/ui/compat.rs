//! The Compat tab: this host's driver, CUDA and container runtime, the best image per framework, and every image's verdict with its reasons.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::scroll::{table_offset, table_row_at};
use super::style::Styles;
use super::table::{self, Column, TableRow};
use crate::app::state::AppState;
use crate::compat::report::runtime_words;
use crate::compat::{Assessment, Board, GpuRuntime, Level, Reason, Scope};

/// Lines of the host summary above the table.
const SUMMARY_HEIGHT: u16 = 4;

/// The verdict as a mark and a style: the colour says it, the mark says it without colour.
pub fn level_mark(level: Level, s: &Styles) -> (&'static str, Style) {
    match level {
        Level::Runs => ("✓", s.ok()),
        Level::Compat => ("~", s.warn()),
        Level::Unknown => ("?", s.muted()),
        Level::WontRun => ("✗", s.error()),
    }
}

/// The host-wide problem that keeps every image from getting a GPU, if there is one.
pub fn host_problem(board: &Board) -> Option<&Reason> {
    board.images.first().and_then(|a| {
        a.verdict
            .reasons
            .iter()
            .find(|r| r.scope == Scope::Host && r.level > Level::Runs)
    })
}

/// The reasons behind a verdict that is not a plain "runs", each with its fix, as lines of at
/// most `width` columns' worth of text (for the dialogs that show a verdict).
pub fn problem_lines(a: &Assessment, s: &Styles) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for r in a.verdict.reasons.iter().filter(|r| r.level > Level::Runs) {
        let (mark, style) = level_mark(r.level, s);
        lines.push(Line::from(vec![
            Span::styled(format!("  {mark} "), style),
            Span::styled(r.text.clone(), s.text()),
        ]));
        if let Some(fix) = &r.fix {
            lines.push(Line::styled(format!("    fix: {fix}"), s.muted()));
        }
    }
    lines
}

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let Some(board) = &state.compat.board else {
        Paragraph::new(Line::styled("reading the driver…", s.muted()))
            .block(Block::bordered().border_style(s.border()))
            .render(area, buf);
        return;
    };
    let (summary, table, detail) = layout(area);
    render_summary(summary, buf, board, s);
    render_table(table, buf, state, board, s);
    if let Some(detail) = detail {
        render_detail(
            detail,
            buf,
            state.compat.selected_assessment(),
            board.runs_where(),
            s,
        );
    }
}

fn render_summary(area: Rect, buf: &mut Buffer, board: &Board, s: &Styles) {
    let host = &board.host;
    let mut lines = Vec::new();
    let driver = match (&host.driver, host.cuda, &host.problem) {
        (Some(d), Some(c), _) => format!("driver {d} · supports CUDA {c}"),
        (_, _, Some(problem)) => format!("driver: {problem}"),
        _ => "driver unknown".to_string(),
    };
    let gpus = gpu_summary(board);
    lines.push(Line::from(vec![
        Span::styled(" Host ", s.title()),
        Span::styled(driver, s.text()),
        Span::styled(format!(" · {gpus}"), s.text()),
    ]));
    let runtime_style = match host.runtime {
        r if r.gives_gpus() => s.ok(),
        GpuRuntime::Unknown => s.warn(),
        _ => s.error(),
    };
    let runtime_spans = vec![
        Span::styled(" Containers ", s.title()),
        Span::styled(runtime_words(host.runtime), runtime_style),
    ];
    let mut runtime_line = Line::from(runtime_spans);
    // The fix only where it fits whole; otherwise the reasons pane below carries it in full.
    let fix = " · fix: install nvidia-container-toolkit, `sudo nvidia-ctk runtime configure --runtime=docker`";
    let blocked = matches!(host.runtime, GpuRuntime::Missing | GpuRuntime::CdiTooOld);
    if blocked && runtime_line.width() + fix.chars().count() <= area.width as usize {
        runtime_line.push_span(Span::styled(fix, s.muted()));
    }
    lines.push(runtime_line);
    for best in &board.best {
        // Best for this driver and these GPUs; where no container gets a GPU it does not run
        // either, and its mark must not say otherwise.
        let level = if board.host_blocks() {
            Level::WontRun
        } else {
            best.level
        };
        let (mark, style) = level_mark(level, s);
        lines.push(Line::from(vec![
            Span::styled(format!(" Best {} ", best.framework.label()), s.title()),
            Span::styled(mark, style),
            Span::styled(format!(" {}", best.reference), s.accent()),
        ]));
    }
    Paragraph::new(lines).render(area, buf);
}

fn gpu_summary(board: &Board) -> String {
    let gpus = &board.host.gpus;
    let Some(first) = gpus.first() else {
        return "no GPUs".into();
    };
    let same = gpus.iter().all(|g| g.name == first.name);
    let cc = first
        .compute_capability
        .map(|c| format!(" (sm_{}{})", c.major(), c.minor()))
        .unwrap_or_default();
    match (gpus.len(), same) {
        (1, _) => format!("{}{cc}", first.name),
        (n, true) => format!("{n}x {}{cc}", first.name),
        (n, false) => format!("{n} GPUs of several kinds"),
    }
}

fn render_table(area: Rect, buf: &mut Buffer, state: &AppState, board: &Board, s: &Styles) {
    let view = &state.compat;
    let counts: Vec<String> = board
        .counts()
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(l, n)| format!("{n} {}", l.word()))
        .collect();
    let shown = view.shown();
    // The filter before the counts: at 80 columns it is what the border must not cut.
    let title = match view.filter.title(shown.len(), board.images.len()) {
        Some(filter) => format!(" Will it run here? · {filter} · {} ", counts.join(" · ")),
        None => format!(" Will it run here? · {} ", counts.join(" · ")),
    };
    let block = Block::bordered()
        .title(Span::styled(title, s.title()))
        .border_style(s.border());
    let narrow = area.width < 100;
    let selected = view.selected_shown();
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    let rows = shown
        .iter()
        .skip(first)
        .take(visible)
        .map(|&i| {
            let a = &board.images[i];
            let (mark, style) = level_mark(a.verdict.level, s);
            let verdict = if narrow {
                mark.to_string()
            } else {
                format!("{mark} {}", a.verdict.level.word())
            };
            let mut cells = vec![
                Span::styled(verdict, style),
                Span::raw(a.image.reference.clone()),
                Span::raw(a.image.source.label()),
            ];
            if !narrow {
                cells.push(Span::raw(a.image.framework_label().unwrap_or_default()));
            }
            cells.push(Span::raw(
                a.image
                    .cuda
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "–".into()),
            ));
            TableRow::new(cells, s.text())
        })
        .collect();
    // Below 100 columns the verdict is its mark and the framework column goes: the image
    // name is what must stay readable (cut in the middle, keeping its tag). Narrower still,
    // FROM drops out, then CUDA; a version is never cut.
    let mut columns = vec![
        Column::fixed("VERDICT", if narrow { 1 } else { 17 }).keep(9),
        Column::flex("IMAGE", 24).ident().keep(8),
        Column::fixed("FROM", 8).keep(2),
    ];
    if !narrow {
        columns.push(Column::fixed("FRAMEWORK", 18).number().keep(3));
    }
    columns.push(Column::fixed("CUDA", 7).number().keep(7));
    let selected = selected.and_then(|row| row.checked_sub(first));
    table::render(area, buf, block, &columns, rows, selected, s);
    if shown.is_empty() && !view.filter.is_empty() {
        table::no_match(area, buf, &view.filter.text, s);
    }
}

fn render_detail(
    area: Rect,
    buf: &mut Buffer,
    a: Option<&Assessment>,
    runs_where: &str,
    s: &Styles,
) {
    let block = Block::bordered()
        .title(Span::styled(" Why ", s.title()))
        .border_style(s.border());
    let Some(a) = a else {
        block.render(area, buf);
        return;
    };
    let mut lines = Vec::new();
    // A host-wide problem (no way to hand over GPUs) is shown here too when it is what makes
    // this row's verdict: the row must not say "will not run" without saying why.
    let mut shown: Vec<&Reason> = a
        .verdict
        .reasons
        .iter()
        .filter(|r| r.scope == Scope::Image || r.level > Level::Runs)
        .collect();
    // Worst first: on a small terminal the pane shows what stops the image and its fix.
    shown.sort_by_key(|r| std::cmp::Reverse(r.level));
    for r in shown {
        let (mark, style) = level_mark(r.level, s);
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} "), style),
            Span::styled(r.text.clone(), s.text()),
        ]));
        if let Some(fix) = &r.fix {
            lines.push(Line::styled(format!("  fix: {fix}"), s.muted()));
        }
    }
    if let Some(alt) = &a.alternative {
        lines.push(Line::from(vec![
            Span::styled("→ ", s.ok()),
            Span::styled(format!("{alt} {runs_where}"), s.accent()),
        ]));
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(block)
        .render(area, buf);
}

/// The summary, the table and (when there is room) the reasons pane.
fn layout(area: Rect) -> (Rect, Rect, Option<Rect>) {
    let summary = Rect {
        height: SUMMARY_HEIGHT.min(area.height),
        ..area
    };
    let rest_h = area.height - summary.height;
    let detail_h = match rest_h {
        24.. => 8,
        14.. => 6,
        _ => 0,
    };
    let table = Rect {
        y: area.y + summary.height,
        height: rest_h - detail_h,
        ..area
    };
    let detail = (detail_h > 0).then_some(Rect {
        y: table.y + table.height,
        height: detail_h,
        ..area
    });
    (summary, table, detail)
}

/// The verdict row under a click, on the same layout `render` draws.
pub fn row_at(area: Rect, state: &AppState, row: u16) -> Option<usize> {
    let (_, table, _) = layout(area);
    let view = &state.compat;
    table_row_at(table, view.selected_shown(), view.shown().len(), row)
}
