//! Modals drawn over the tabs: the help generated from the keymap (scrollable), and the kill confirmation.

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

/// Help's width: 64 columns, or the screen's when narrower.
fn help_area(area: Rect, lines: usize) -> Rect {
    centered(area, 64, lines as u16 + 2)
}

/// Help's lines at the given inner width: the current tab's keys first, each description
/// wrapped under itself, so the number of lines is known and the end can be scrolled to.
fn help_text<'a>(state: &AppState, keymap: &[Binding], width: u16, s: &Styles) -> Vec<Line<'a>> {
    let desc_width = usize::from(width).saturating_sub(13).max(10);
    let options = textwrap::Options::new(desc_width).break_words(true);
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
        for (i, piece) in textwrap::wrap(desc, &options).into_iter().enumerate() {
            let key = if i == 0 { label } else { "" };
            lines.push(Line::from(vec![
                Span::styled(format!("  {key:<11}"), s.accent()),
                Span::styled(piece.into_owned(), s.text()),
            ]));
        }
    }
    lines.push(Line::raw(""));
    let note = "Other tabs have keys of their own: go there and press ?. Mouse: click a tab or a \
                row, wheel scrolls. Any key but the scrolling ones closes this help.";
    let note_options = textwrap::Options::new(usize::from(width).max(10));
    for piece in textwrap::wrap(note, &note_options) {
        lines.push(Line::styled(piece.into_owned(), s.muted()));
    }
    lines
}

/// The most help can be scrolled on this screen: its last line at the bottom.
pub fn help_scroll_limit(area: Rect, state: &AppState, keymap: &[Binding], s: &Styles) -> usize {
    let inner_width = centered(area, 64, 1).width.saturating_sub(2);
    let lines = help_text(state, keymap, inner_width, s).len();
    let popup = help_area(area, lines);
    lines.saturating_sub(popup.height.saturating_sub(2) as usize)
}

pub fn help(area: Rect, buf: &mut Buffer, state: &AppState, keymap: &[Binding], s: &Styles) {
    let inner_width = centered(area, 64, 1).width.saturating_sub(2);
    let lines = help_text(state, keymap, inner_width, s);
    let popup = help_area(area, lines.len());
    let limit = help_scroll_limit(area, state, keymap, s);
    let scroll = state.overlay_scroll.min(limit);
    let title = format!(" Keys: {} first ", state.tab.title());
    let hint = match (scroll, limit) {
        (_, 0) => " any key closes ",
        (at, end) if at >= end => " end · ↑ PgUp Home scroll back · other keys close ",
        _ => " more below: ↓ PgDn End · other keys close ",
    };
    Clear.render(popup, buf);
    Paragraph::new(lines)
        .scroll((scroll.min(u16::MAX as usize) as u16, 0))
        .block(
            Block::bordered()
                .title(Span::styled(title, s.title()))
                .title_bottom(Span::styled(hint, s.muted()))
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
