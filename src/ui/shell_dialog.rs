//! The shell dialog: the image and its verdict, the GPUs to give it (busy ones flagged), network and keep.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::compat::{level_mark, problem_lines};
use super::style::Styles;
use crate::app::compat::CompatView;
use crate::app::shell_dialog::ShellDialog;

pub fn render(area: Rect, buf: &mut Buffer, d: &ShellDialog, compat: &CompatView, s: &Styles) {
    let w = area.width.min(90);
    let mut lines = vec![Line::from(vec![
        Span::styled("Image  ", s.accent()),
        Span::styled(d.image.clone(), s.text()),
    ])];
    // The same verdict as the Compat tab and `gpudeck compat`, with why and what to do when it
    // is not a plain "runs": the dialog must not promise what Enter then refuses.
    let mut problems = Vec::new();
    if let Some(a) = compat.assessment_of(&d.image) {
        let (mark, style) = level_mark(a.verdict.level, s);
        lines.push(Line::from(vec![
            Span::styled("Here   ", s.accent()),
            Span::styled(format!("{mark} {}", a.verdict.level.word()), style),
        ]));
        problems = problem_lines(a, s);
    }
    // Each problem line may wrap: count the rows it takes inside the border.
    let inner = w.saturating_sub(2).max(1) as usize;
    let problem_rows: usize = problems
        .iter()
        .map(|l| l.width().div_ceil(inner).max(1))
        .sum();
    lines.extend(problems);
    let h = (d.gpus.len() as u16 + 9 + problem_rows as u16).min(area.height.saturating_sub(2));
    let popup = Rect::new(area.x + (area.width - w) / 2, area.y + 1, w, h);
    Clear.render(popup, buf);
    lines.push(Line::from(vec![
        Span::styled("Mount  ", s.accent()),
        Span::styled(format!("{} -> /workspace", d.workdir.display()), s.text()),
    ]));
    if d.gpus.is_empty() {
        lines.push(Line::styled("no GPUs: the shell gets none", s.muted()));
    }
    for (i, g) in d.gpus.iter().enumerate() {
        let mark = if g.chosen { "[x]" } else { "[ ]" };
        let busy = g
            .busy
            .as_deref()
            .map(|b| format!("  busy: {b}"))
            .unwrap_or_default();
        let style = if i == d.selected {
            s.selected()
        } else {
            s.text()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} GPU {} {}", g.index, g.name), style),
            Span::styled(
                busy,
                if g.busy.is_some() {
                    s.warn()
                } else {
                    s.muted()
                },
            ),
        ]));
    }
    let network = if d.network_none { "none" } else { "bridge" };
    let keep = if d.keep {
        "kept after exit"
    } else {
        "removed on exit"
    };
    lines.push(Line::styled(
        format!("network {network} · container {keep}"),
        s.muted(),
    ));
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .title(Span::styled(
                    " Shell · Space GPU · a all · n network · k keep · Enter start · Esc ",
                    s.title(),
                ))
                .border_style(s.accent()),
        )
        .render(popup, buf);
}
