//! Modals drawn over the tabs: the help generated from the keymap, and the kill confirmation.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::app::keymap::{help_contexts, help_lines, Binding};
use crate::app::state::AppState;
use crate::app::state::Confirmation;

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

pub fn help(area: Rect, buf: &mut Buffer, state: &AppState, keymap: &[Binding], s: &Styles) {
    let mut lines = Vec::new();
    let mut section = "";
    for (sec, label, desc) in help_lines(keymap, &help_contexts(state)) {
        if sec != section {
            if !section.is_empty() {
                lines.push(Line::raw(""));
            }
            lines.push(Line::styled(sec, s.header()));
            section = sec;
        }
        lines.push(Line::from(vec![
            Span::styled(format!("  {label:<11}"), s.accent()),
            Span::styled(desc, s.text()),
        ]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Other tabs have keys of their own: go there and press ?. Mouse: click a tab or a row, wheel scrolls. Any key closes this help.",
        s.muted(),
    ));
    let popup = centered(area, 64, lines.len() as u16 + 3);
    Clear.render(popup, buf);
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(
            Block::bordered()
                .title(Span::styled(" Keys ", s.title()))
                .border_style(s.accent()),
        )
        .render(popup, buf);
}

pub fn confirm(area: Rect, buf: &mut Buffer, c: &Confirmation, s: &Styles) {
    let mut lines = vec![Line::styled(c.question.clone(), s.warn())];
    lines.extend(c.details.iter().map(|d| Line::styled(d.clone(), s.text())));
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled(" y ", s.selected()),
        Span::styled(" yes   ", s.text()),
        Span::styled(" any other key ", s.accent()),
        Span::styled(" no", s.text()),
    ]));
    let popup = centered(area, 64, lines.len() as u16 + 4);
    Clear.render(popup, buf);
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(
            Block::bordered()
                .title(Span::styled(format!(" {} ", c.title), s.title()))
                .border_style(s.warn()),
        )
        .render(popup, buf);
}
