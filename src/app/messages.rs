//! The messages the dashboard has shown (results, errors, warnings): a bounded log, their age,
//! and the scrolling of the views that show text whole (the messages view and help).

use std::collections::VecDeque;

use super::action::Action;
use super::state::{AppState, Overlay};

/// Messages kept for the messages view; older ones drop off.
pub const KEPT_MESSAGES: usize = 50;
/// After this many seconds on screen the footer's message is dimmed: it is about the past.
pub const STALE_SECS: i64 = 10;
/// After this many seconds the footer's message line gives its row back (the view keeps it).
pub const SHOWN_SECS: i64 = 60;

/// One message: the result of an action, a warning or an error.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusMessage {
    pub text: String,
    pub is_error: bool,
    /// Unix seconds of the first frame that showed it; `None` until then.
    pub shown_at: Option<i64>,
}

impl StatusMessage {
    pub fn new(text: impl Into<String>, is_error: bool) -> Self {
        Self {
            text: text.into(),
            is_error,
            shown_at: None,
        }
    }

    /// Seconds since it was first drawn (0 before).
    pub fn age(&self, now: i64) -> i64 {
        self.shown_at.map_or(0, |at| (now - at).max(0))
    }

    pub fn is_stale(&self, now: i64) -> bool {
        self.age(now) >= STALE_SECS
    }
}

/// The recent messages, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageLog {
    entries: VecDeque<StatusMessage>,
}

impl MessageLog {
    /// Adds a message; the same message again only moves to the end, so a repeated error does
    /// not push the others out.
    pub fn push(&mut self, message: StatusMessage) {
        self.entries
            .retain(|m| !(m.text == message.text && m.is_error == message.is_error));
        self.entries.push_back(message);
        while self.entries.len() > KEPT_MESSAGES {
            self.entries.pop_front();
        }
    }

    /// Newest first, as the view lists them.
    pub fn newest_first(&self) -> impl Iterator<Item = &StatusMessage> {
        self.entries.iter().rev()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn stamp(&mut self, now: i64) {
        for m in self.entries.iter_mut().filter(|m| m.shown_at.is_none()) {
            m.shown_at = Some(now);
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_bounded_and_a_repeat_moves_to_the_end() {
        let mut log = MessageLog::default();
        for i in 0..KEPT_MESSAGES + 5 {
            log.push(StatusMessage::new(format!("m{i}"), false));
        }
        assert_eq!(log.len(), KEPT_MESSAGES);
        let last = format!("m{}", KEPT_MESSAGES + 4);
        assert_eq!(
            log.newest_first().next().map(|m| m.text.clone()),
            Some(last)
        );
        log.push(StatusMessage::new("m10", false));
        assert_eq!(log.len(), KEPT_MESSAGES);
        assert_eq!(
            log.newest_first().next().map(|m| m.text.as_str()),
            Some("m10")
        );
    }

    #[test]
    fn a_message_ages_from_its_first_frame() {
        let mut m = StatusMessage::new("x", true);
        assert!(!m.is_stale(1_000));
        m.shown_at = Some(1_000);
        assert!(!m.is_stale(1_000 + STALE_SECS - 1));
        assert!(m.is_stale(1_000 + STALE_SECS));
    }
}
