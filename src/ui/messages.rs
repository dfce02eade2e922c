//! Messages on screen: the latest one on its own line above the key hints, and all recent ones
//! whole in the messages view (M).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::style::Styles;
use crate::app::state::{AppState, StatusMessage};
use crate::units;

/// What the message line adds when the message is cut.
const CUT_HINT: &str = " M: read it whole ";

fn mark(m: &StatusMessage) -> &'static str {
    if m.is_error {
        "✗ "
    } else {
        "› "
    }
}

/// The footer's message line: the latest message, dimmed once stale, cut with a hint to read
/// it whole when it does not fit.
pub fn line(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let Some(m) = state.footer_message() else {
        return;
    };
    let style = if m.is_stale(state.now) {
        s.stale()
    } else if m.is_error {
        s.error()
    } else {
        s.ok()
    };
    let text = format!(
        " {}{}",
        mark(m),
        m.text.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    let width = area.width as usize;
    let whole = text.chars().count() <= width && !m.text.contains('\n');
    let spans = if whole {
        vec![Span::styled(text, style)]
    } else {
        let room = width.saturating_sub(CUT_HINT.chars().count());
        vec![
            Span::styled(units::truncate(&text, room), style),
            Span::styled(CUT_HINT, s.accent()),
        ]
    };
    Line::from(spans).render(area, buf);
}

/// The messages view's lines at `width`: each message wrapped whole, newest first.
pub fn view_lines<'a>(state: &AppState, width: u16, s: &Styles) -> Vec<Line<'a>> {
    let width = usize::from(width.max(8));
    let options = textwrap::Options::new(width.saturating_sub(2))
        .break_words(true)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    let mut lines = Vec::new();
    for m in state.messages.newest_first() {
        let (style, kind) = if m.is_error {
            (s.error(), "error")
        } else {
            (s.ok(), "info")
        };
        let age = match m.shown_at {
            Some(_) => format!(" · {} ago", units::age(m.age(state.now))),
            None => String::new(),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{}{kind}", mark(m)), style),
            Span::styled(age, s.muted()),
        ]));
        for paragraph in m.text.lines() {
            for piece in textwrap::wrap(paragraph, &options) {
                lines.push(Line::styled(format!("  {piece}"), s.text()));
            }
        }
        lines.push(Line::raw(""));
    }
    if lines.is_empty() {
        lines.push(Line::styled("No messages yet.", s.muted()));
    }
    lines
}

/// The popup the messages view fills: nearly the whole screen.
pub fn view_area(area: Rect) -> Rect {
    let w = area
        .width
        .saturating_sub(4)
        .min(100)
        .max(area.width.min(20));
    let h = area.height.saturating_sub(2).max(area.height.min(5));
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// The most the view can be scrolled: its last line at the bottom of the popup.
pub fn scroll_limit(area: Rect, state: &AppState, s: &Styles) -> usize {
    let popup = view_area(area);
    let inner = popup.height.saturating_sub(2) as usize;
    view_lines(state, popup.width.saturating_sub(2), s)
        .len()
        .saturating_sub(inner)
}

pub fn view(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let popup = view_area(area);
    let lines = view_lines(state, popup.width.saturating_sub(2), s);
    let scroll = state.overlay_scroll.min(scroll_limit(area, state, s));
    let title = format!(
        " Messages, newest first ({} of the last {}) ",
        state.messages.len(),
        crate::app::messages::KEPT_MESSAGES
    );
    let hint = " ↑↓ PgUp PgDn Home End scroll · any other key closes ";
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
