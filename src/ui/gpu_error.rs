//! The GPU view when there is no GPU data: what went wrong, why, and what to do (or that it is still loading).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::gpu::GpuError;

pub fn loading(area: Rect, buf: &mut Buffer, s: &Styles) {
    Paragraph::new(Line::styled(
        "Opening NVML and reading the GPUs…",
        s.muted(),
    ))
    .block(Block::bordered().border_style(s.border()))
    .render(area, buf);
}

pub fn render(area: Rect, buf: &mut Buffer, e: &GpuError, s: &Styles) {
    let lines = vec![
        Line::from(Span::styled(e.title(), s.error())),
        Line::raw(""),
        Line::from(vec![
            Span::styled("Why: ", s.accent()),
            Span::styled(e.to_string(), s.text()),
        ]),
        Line::raw(""),
        Line::from(vec![
            Span::styled("Fix: ", s.accent()),
            Span::styled(e.fix(), s.text()),
        ]),
        Line::raw(""),
        Line::from(Span::styled(
            "No GPU at hand? `gpudeck --demo` shows the dashboard on simulated GPUs.",
            s.muted(),
        )),
    ];
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(
            Block::bordered()
                .title(Span::styled(" GPUs ", s.title()))
                .border_style(s.error()),
        )
        .render(area, buf);
}
