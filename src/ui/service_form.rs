//! The Services tab's start form: where the notebook runs (this machine or a local image) and on
//! which GPUs, the command line it amounts to, and why Enter refused it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::app::service_form::{ServiceField, ServiceForm};

pub fn render(area: Rect, buf: &mut Buffer, form: &ServiceForm, s: &Styles) {
    let field = |name: &str, value: &str, which: ServiceField| {
        let typing = form.field == which;
        let style = if typing { s.selected() } else { s.text() };
        let cursor = if typing { "▏" } else { "" };
        Line::from(vec![
            Span::styled(format!("{name:<7}"), s.accent()),
            Span::styled(format!("{value}{cursor}"), style),
        ])
    };
    let mut lines = vec![
        field("Where", &form.place, ServiceField::Place),
        Line::styled(
            "       host (the jupyter on PATH), or a local image with JupyterLab",
            s.muted(),
        ),
        field("GPUs", &form.gpus, ServiceField::Gpus),
        Line::styled("       none, count:N, 0,1 or all", s.muted()),
        Line::raw(""),
        Line::from(vec![
            Span::styled("As     ", s.muted()),
            Span::styled(form.command_line(), s.text()),
        ]),
    ];
    if let Some(error) = &form.error {
        lines.push(Line::styled(error.clone(), s.error()));
    }
    lines.push(Line::styled(
        "Tab next field  Enter start  Esc cancel",
        s.muted(),
    ));
    let w = area.width.min(76);
    // An error may wrap once at 80 columns.
    let h = (lines.len() as u16 + 3).min(area.height.saturating_sub(2));
    let popup = Rect::new(area.x + (area.width - w) / 2, area.y + 2, w, h);
    Clear.render(popup, buf);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .title(Span::styled(" Start a notebook ", s.title()))
                .border_style(s.border()),
        )
        .render(popup, buf);
}
