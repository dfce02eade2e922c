//! The Docker tabs when the engine cannot be used: connecting, or what went wrong and what to do.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::app::docker::EngineStatus;

/// Draws the engine's status if it is not ready; returns true if it drew something.
pub fn render(area: Rect, buf: &mut Buffer, host: &str, status: &EngineStatus, s: &Styles) -> bool {
    let lines = match status {
        EngineStatus::Ready(_) => return false,
        EngineStatus::Connecting => vec![Line::styled(
            format!("Connecting to the Docker Engine at {host}…"),
            s.muted(),
        )],
        EngineStatus::Unavailable {
            title,
            message,
            fix,
        } => vec![
            Line::styled(title.clone(), s.error()),
            Line::raw(""),
            Line::from(vec![
                Span::styled("Why: ", s.accent()),
                Span::styled(message.clone(), s.text()),
            ]),
            Line::raw(""),
            Line::from(vec![
                Span::styled("Fix: ", s.accent()),
                Span::styled(fix.clone(), s.text()),
            ]),
            Line::raw(""),
            Line::styled(
                "gpudeck keeps trying and reconnects by itself; the GPU tabs work meanwhile.",
                s.muted(),
            ),
        ],
    };
    let border = if matches!(status, EngineStatus::Connecting) {
        s.border()
    } else {
        s.error()
    };
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(
            Block::bordered()
                .title(Span::styled(format!(" Docker · {host} "), s.title()))
                .border_style(border),
        )
        .render(area, buf);
    true
}
