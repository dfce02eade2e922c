//! What a key does to a logs view (Containers and Runs tabs): scroll, follow, search, save or
//! close.

use super::action::{Action, Command};
use super::logs_view::LogsView;
use crate::docker::LogStream;

/// What a key did to a logs view.
#[derive(Debug, PartialEq)]
pub enum LogsOutcome {
    Stay,
    /// Write the lines to a file.
    Save(Command),
    Close,
}

impl LogsView {
    /// Applies a key's action: scrolling, follow, search, save or close.
    pub fn apply(&mut self, action: Action, page: usize) -> LogsOutcome {
        if self.editing_search {
            self.edit_search(action);
            return LogsOutcome::Stay;
        }
        match action {
            Action::Up => self.scroll_by(1),
            Action::Down => self.scroll_by(-1),
            Action::PageUp => self.scroll_by(page as isize),
            Action::PageDown => self.scroll_by(-(page as isize)),
            Action::Top => self.scroll_by(isize::MAX / 2),
            Action::Bottom => self.scroll_by(isize::MIN / 2),
            Action::ToggleFollow => {
                self.follow = !self.follow;
                if self.follow {
                    self.scroll = 0;
                }
            }
            Action::StartFilter => self.editing_search = true,
            Action::NextMatch => self.next_match(),
            Action::SaveLogs => return LogsOutcome::Save(self.save_command()),
            Action::CloseView | Action::Cancel | Action::FilterClear => return LogsOutcome::Close,
            _ => {}
        }
        LogsOutcome::Stay
    }

    fn edit_search(&mut self, action: Action) {
        match action {
            Action::FilterInput(c) => self.search.push(c),
            Action::FilterBackspace => {
                self.search.pop();
            }
            Action::FilterDone => {
                self.editing_search = false;
                self.next_match();
            }
            Action::FilterClear => {
                self.search.clear();
                self.editing_search = false;
            }
            _ => {}
        }
    }

    fn scroll_by(&mut self, delta: isize) {
        let max = self.lines.len().saturating_sub(1) as isize;
        self.scroll = (self.scroll as isize + delta).clamp(0, max.max(0)) as usize;
        self.follow = self.scroll == 0;
    }

    fn save_command(&self) -> Command {
        let text: String = self
            .lines
            .iter()
            .map(|l| {
                let marker = if l.stream == LogStream::Stderr {
                    "[stderr] "
                } else {
                    ""
                };
                format!("{marker}{}\n", l.text)
            })
            .collect();
        Command::SaveLogs {
            name: self.name.clone(),
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::logs_view::LOG_LINES;
    use super::*;
    use crate::docker::LogLine;

    fn line(text: &str) -> LogLine {
        LogLine {
            stream: LogStream::Stdout,
            timestamp: None,
            text: text.into(),
        }
    }

    #[test]
    fn logs_are_bounded_and_keep_their_place_when_not_following() {
        let mut logs = LogsView::new("id".into(), "name".into());
        logs.push((0..LOG_LINES + 5).map(|i| line(&i.to_string())).collect());
        assert_eq!(logs.lines.len(), LOG_LINES);
        assert_eq!(logs.lines.front().map(|l| l.text.as_str()), Some("5"));
        logs.follow = false;
        logs.scroll = 3;
        logs.push(vec![line("new")]);
        assert_eq!(logs.scroll, 4);
    }

    #[test]
    fn keys_scroll_search_save_and_close() {
        let mut logs = LogsView::new("id".into(), "name".into());
        logs.push((0..20).map(|i| line(&format!("line {i}"))).collect());
        assert_eq!(logs.apply(Action::PageUp, 5), LogsOutcome::Stay);
        assert_eq!((logs.scroll, logs.follow), (5, false));
        logs.apply(Action::StartFilter, 5);
        for c in "line 3".chars() {
            logs.apply(Action::FilterInput(c), 5);
        }
        logs.apply(Action::FilterDone, 5);
        assert_eq!(logs.scroll, 16, "line 3 at the bottom");
        logs.apply(Action::ToggleFollow, 5);
        assert_eq!((logs.scroll, logs.follow), (0, true));
        let LogsOutcome::Save(Command::SaveLogs { text, .. }) = logs.apply(Action::SaveLogs, 5)
        else {
            panic!("save");
        };
        assert_eq!(text.lines().count(), 20);
        assert_eq!(logs.apply(Action::CloseView, 5), LogsOutcome::Close);
    }

    #[test]
    fn search_jumps_to_older_matches() {
        let mut logs = LogsView::new("id".into(), "name".into());
        logs.push(vec![
            line("epoch 1 loss 0.9"),
            line("x"),
            line("epoch 2 loss 0.5"),
            line("y"),
            line("z"),
        ]);
        logs.search = "epoch".into();
        logs.next_match();
        assert!(!logs.follow);
        assert_eq!(logs.scroll, 2, "epoch 2 is two lines above the bottom");
        logs.next_match();
        assert_eq!(logs.scroll, 4);
    }
}
