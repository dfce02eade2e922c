//! Setting the footer's message (kept in the messages view), aging messages by the frame clock,
//! and what the keys do in the messages view and help: scroll, or close.

use super::action::Action;
use super::messages::{StatusMessage, SHOWN_SECS};
use super::state::{AppState, Overlay};

impl AppState {
    /// Shows a message in the footer and keeps it in the messages view.
    pub fn set_status(&mut self, text: impl Into<String>, is_error: bool) {
        let message = StatusMessage::new(text, is_error);
        self.messages.push(message.clone());
        self.status = Some(message);
    }

    /// The message the footer shows now: the latest, until it has been on screen for
    /// [`SHOWN_SECS`].
    pub fn footer_message(&self) -> Option<&StatusMessage> {
        self.status
            .as_ref()
            .filter(|m| m.age(self.now) < SHOWN_SECS)
    }

    /// Called once a frame with the clock: messages drawn for the first time start to age.
    pub fn stamp_messages(&mut self, now: i64) {
        self.now = now;
        if let Some(m) = self.status.as_mut().filter(|m| m.shown_at.is_none()) {
            m.shown_at = Some(now);
        }
        self.messages.stamp(now);
    }

    pub(super) fn open_messages(&mut self) {
        self.overlay_scroll = 0;
        self.overlay = Overlay::Messages;
    }

    /// Scrolls help or the messages view; false for any other action (which closes them).
    pub(super) fn scroll_overlay(&mut self, action: &Action) -> bool {
        let page = self.page_size.max(1);
        let scroll = &mut self.overlay_scroll;
        *scroll = match action {
            Action::Up => scroll.saturating_sub(1),
            Action::Down => scroll.saturating_add(1),
            Action::PageUp => scroll.saturating_sub(page),
            Action::PageDown => scroll.saturating_add(page),
            Action::Top => 0,
            // The renderer stops at the end; the app clamps it back to the last page each frame.
            Action::Bottom => usize::MAX / 2,
            _ => return false,
        };
        true
    }
}
