//! The messages the dashboard has shown (results, errors, warnings): a bounded log, their age,
//! and the scrolling of the views that show text whole (the messages view and help).

use std::collections::VecDeque;

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

    pub(super) fn stamp(&mut self, now: i64) {
        for m in self.entries.iter_mut().filter(|m| m.shown_at.is_none()) {
            m.shown_at = Some(now);
        }
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
