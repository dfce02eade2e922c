//! The new-run form over the Runs tab: each field of the spec, the focused one marked, the GPUs
//! with the busy ones flagged, and why Enter did not start it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::compat::{level_mark, problem_lines};
use super::style::Styles;
use crate::app::run_form::{Field, GpuMode, RunForm};
use crate::compat::Assessment;

/// `verdict` is the typed image's compatibility verdict, when it is a local image.
pub fn render(area: Rect, buf: &mut Buffer, f: &RunForm, verdict: Option<&Assessment>, s: &Styles) {
    let w = area.width.min(90);
    let verdict = verdict_lines(f, verdict, w, s);
    let body = if f.backend.takes_slurm_settings() {
        4
    } else {
        f.gpus.len() as u16 + 1
    };
    let h = (body + 11 + verdict.1).min(area.height.saturating_sub(2));
    let popup = Rect::new(area.x + (area.width - w) / 2, area.y + 1, w, h);
    Clear.render(popup, buf);
    let text_field = |field: Field, label: &'static str, value: &str, hint: &'static str| {
        let focused = f.field == field;
        let shown = match (value.is_empty(), focused) {
            (true, false) => Span::styled(hint, s.muted()),
            (_, true) => Span::styled(format!("{value}▏"), s.selected()),
            (false, false) => Span::styled(value.to_string(), s.text()),
        };
        Line::from(vec![Span::styled(label, s.accent()), shown])
    };
    let mut lines = vec![
        text_field(
            Field::Command,
            "Command   ",
            &f.command,
            "python train.py --epochs 10 (argv: quotes group words, no shell)",
        ),
        text_field(Field::Name, "Name      ", &f.name, "(the program's name)"),
        text_field(Field::Workdir, "Work dir  ", &f.workdir, ""),
        text_field(
            Field::Image,
            "Image     ",
            &f.image,
            "(none: on the host; a local image runs it in containers)",
        ),
    ];
    lines.extend(verdict.0);
    let launcher_style = if f.field == Field::Launcher {
        s.selected()
    } else {
        s.text()
    };
    lines.push(Line::from(vec![
        Span::styled("Launcher  ", s.accent()),
        Span::styled(f.launcher.as_str(), launcher_style),
        Span::styled("  (Space: single, torchrun, per-gpu)", s.muted()),
    ]));
    let backend_style = if f.field == Field::Backend {
        s.selected()
    } else {
        s.text()
    };
    lines.push(Line::from(vec![
        Span::styled("Backend   ", s.accent()),
        Span::styled(f.backend.as_str(), backend_style),
        Span::styled(
            "  (Space: local on this machine, slurm as a batch job)",
            s.muted(),
        ),
    ]));
    if f.backend.takes_slurm_settings() {
        lines.push(text_field(
            Field::Partition,
            "Partition ",
            &f.partition,
            "(the cluster's default)",
        ));
        lines.push(text_field(
            Field::Time,
            "Time      ",
            &f.time,
            "(the partition's default; e.g. 02:00:00)",
        ));
        lines.push(text_field(Field::Nodes, "Nodes     ", &f.nodes, "1"));
        lines.push(text_field(
            Field::Gpus,
            "GPUs/node ",
            &f.gpus_per_node,
            "0 (the scheduler picks which)",
        ));
    } else {
        lines.push(gpu_mode_line(f, s));
    }
    let rows_shown = f.backend.uses_this_machines_gpus() && f.gpu_mode == GpuMode::Chosen;
    for (i, g) in f.gpus.iter().enumerate().filter(|_| rows_shown) {
        let mark = if g.chosen { "[x]" } else { "[ ]" };
        let style = if f.field == Field::Gpus && i == f.gpu_row {
            s.selected()
        } else {
            s.text()
        };
        let mut spans = vec![Span::styled(
            format!("  {mark} GPU {} {}", g.index, g.name),
            style,
        )];
        if let Some(busy) = &g.busy {
            spans.push(Span::styled(format!("  busy: {busy}"), s.warn()));
        }
        lines.push(Line::from(spans));
    }
    if let Some(error) = &f.error {
        lines.push(Line::styled(error.clone(), s.error()));
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .title(Span::styled(
                    format!(
                        " New run · Tab next field · Enter {} · Esc cancel ",
                        f.backend.start_verb()
                    ),
                    s.title(),
                ))
                .border_style(s.accent()),
        )
        .render(popup, buf);
}

/// The local GPUs line: which of the rows, a count or none, and the keys that change it.
fn gpu_mode_line<'a>(f: &'a RunForm, s: &Styles) -> Line<'a> {
    let style = if f.field == Field::Gpus {
        s.selected()
    } else {
        s.text()
    };
    let cursor = if f.field == Field::Gpus { "▏" } else { "" };
    let (value, hint) = match f.gpu_mode {
        GpuMode::Chosen if f.gpus.is_empty() => (
            "none shown".to_string(),
            "  (no GPU here · m: count:N, none)",
        ),
        GpuMode::Chosen => (
            "the ones ticked".to_string(),
            "  (Space ticks, a all · m: count:N, none)",
        ),
        GpuMode::Count => (
            format!("count:{}{cursor}", f.gpu_count),
            "  (any N free GPUs · m: none)",
        ),
        GpuMode::None => ("none".to_string(), "  (a CPU run · m: GPUs ticked)"),
    };
    Line::from(vec![
        Span::styled("GPUs      ", s.accent()),
        Span::styled(value, style),
        Span::styled(hint, s.muted()),
    ])
}

/// The image's verdict when the run gets GPUs in a container here (the same verdict as the
/// Compat tab, which the start then enforces), with its reasons and fixes; and the rows they take
/// in a popup `width` wide.
fn verdict_lines(
    f: &RunForm,
    verdict: Option<&Assessment>,
    width: u16,
    s: &Styles,
) -> (Vec<Line<'static>>, u16) {
    let with_gpus = f.backend.uses_this_machines_gpus()
        && match f.gpu_mode {
            GpuMode::Chosen => f.gpus.iter().any(|g| g.chosen),
            GpuMode::Count => f.gpu_count.trim().parse::<usize>().is_ok_and(|n| n > 0),
            GpuMode::None => false,
        };
    let Some(a) = verdict.filter(|_| with_gpus) else {
        return (Vec::new(), 0);
    };
    let (mark, style) = level_mark(a.verdict.level, s);
    let mut lines = vec![Line::from(vec![
        Span::styled("Here      ", s.accent()),
        Span::styled(format!("{mark} {}", a.verdict.level.word()), style),
    ])];
    lines.extend(problem_lines(a, s));
    let inner = width.saturating_sub(2).max(1) as usize;
    let rows: usize = lines.iter().map(|l| l.width().div_ceil(inner).max(1)).sum();
    (lines, rows as u16)
}
