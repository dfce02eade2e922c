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
    let mut lines = vec![
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
    ];
    // The fix for a missing driver already ends on `--demo`: say it once.
    if !e.fix().contains("--demo") {
        lines.push(Line::raw(""));
        lines.push(Line::from(Span::styled(
            "No GPU at hand? `gpudeck --demo` shows the dashboard on simulated GPUs.",
            s.muted(),
        )));
    }
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(
            Block::bordered()
                .title(Span::styled(" GPUs ", s.title()))
                .border_style(s.error()),
        )
        .render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Theme, DEFAULT_THEME};

    fn screen(e: &GpuError) -> String {
        let area = Rect::new(0, 0, 80, 20);
        let mut buf = Buffer::empty(area);
        let theme = Theme::builtin(DEFAULT_THEME).expect("the default theme");
        render(area, &mut buf, e, &Styles::new(&theme));
        (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_demo_is_offered_once_whatever_the_error() {
        let missing = GpuError::LibraryNotFound {
            library: "libnvidia-ml.so.1".into(),
            detail: "cannot open shared object file".into(),
        };
        let text = screen(&missing);
        assert_eq!(text.matches("--demo").count(), 1, "{text}");
        let mismatch = screen(&GpuError::VersionMismatch);
        assert_eq!(mismatch.matches("--demo").count(), 1, "{mismatch}");
    }
}
