//! A logs view's state, shared by the Containers and Runs tabs: the newest lines, follow or
//! scroll, search.

use std::collections::VecDeque;

use crate::docker::LogLine;

/// Lines a logs view keeps; older lines fall off (the full log stays in Docker or the run's files).
pub const LOG_LINES: usize = 10_000;

/// An open logs view: a container's, or a run rank's.
#[derive(Clone, Debug, PartialEq)]
pub struct LogsView {
    pub container: String,
    pub name: String,
    pub lines: VecDeque<LogLine>,
    /// Keep the newest line in view as lines arrive.
    pub follow: bool,
    /// Lines scrolled up from the bottom when not following.
    pub scroll: usize,
    pub search: String,
    pub editing_search: bool,
    /// Why the stream ended, if it did (container stopped, engine gone).
    pub ended: Option<String>,
}

impl LogsView {
    pub fn new(container: String, name: String) -> Self {
        Self {
            container,
            name,
            lines: VecDeque::new(),
            follow: true,
            scroll: 0,
            search: String::new(),
            editing_search: false,
            ended: None,
        }
    }

    pub fn push(&mut self, lines: Vec<LogLine>) {
        for line in lines {
            if self.lines.len() == LOG_LINES {
                self.lines.pop_front();
            }
            self.lines.push_back(line);
            if !self.follow {
                // Keep the same lines on screen while new ones arrive below.
                self.scroll += 1;
            }
        }
        self.scroll = self.scroll.min(self.lines.len());
    }

    /// Scrolls up to the next older line containing the search text, making it the bottom line.
    pub fn next_match(&mut self) {
        if self.search.is_empty() || self.lines.is_empty() {
            return;
        }
        let needle = self.search.to_lowercase();
        let current = self.lines.len() - 1 - self.scroll.min(self.lines.len() - 1);
        let hit = (0..current)
            .rev()
            .find(|&i| self.lines[i].text.to_lowercase().contains(&needle));
        if let Some(i) = hit {
            self.follow = false;
            self.scroll = self.lines.len() - 1 - i;
        }
    }
}
