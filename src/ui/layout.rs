//! The fixed regions of the screen (header, tabs, body, message line, footer), which drawing and
//! mouse hit-testing share.

use ratatui::layout::Rect;

use crate::app::state::AppState;

/// The fixed regions of the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Screen {
    pub header: Rect,
    pub tabs: Rect,
    pub body: Rect,
    /// The latest message's own line above the footer; no rows when there is none to show.
    pub message: Rect,
    pub footer: Rect,
}

impl Screen {
    pub fn new(area: Rect) -> Self {
        Self::with_message_line(area, false)
    }

    /// The regions for this state: a message line only while a message is shown, so the key
    /// hints never give way to it.
    pub fn for_state(area: Rect, state: &AppState) -> Self {
        Self::with_message_line(area, state.footer_message().is_some() && area.height > 6)
    }

    fn with_message_line(area: Rect, message: bool) -> Self {
        let line = |y: u16| Rect::new(area.x, y, area.width, 1.min(area.height));
        let extra = u16::from(message);
        let body_height = area.height.saturating_sub(3 + extra);
        let footer = line(area.y + area.height.saturating_sub(1));
        let message_y = area.y + area.height.saturating_sub(2);
        Self {
            header: line(area.y),
            tabs: line(area.y + 1.min(area.height)),
            body: Rect::new(area.x, area.y + 2.min(area.height), area.width, body_height),
            message: Rect::new(area.x, message_y, area.width, extra),
            footer,
        }
    }
}

/// A list of `rows` on top (at most a third of `area`, at least 4 lines) and the selected
/// item's detail below, for the tabs built that way (Runs, Services); the list alone when
/// `area` is lower than `min_height`.
pub fn list_and_detail(area: Rect, rows: usize, min_height: u16) -> (Rect, Option<Rect>) {
    if area.height < min_height {
        return (area, None);
    }
    let list_h = u16::try_from(rows + 3)
        .unwrap_or(u16::MAX)
        .min(area.height / 3)
        .max(4);
    let list = Rect {
        height: list_h,
        ..area
    };
    let detail = Rect {
        y: area.y + list_h,
        height: area.height - list_h,
        ..area
    };
    (list, Some(detail))
}
