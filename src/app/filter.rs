//! The `/` filter every list shares: what is typed, whether it is being typed, which rows it keeps,
//! and the title words that say so.

use super::action::Action;

/// A list's filter: case-insensitive text that a row's visible text must contain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub text: String,
    /// Keys go into the text until Enter (keep it) or Esc (drop it).
    pub editing: bool,
}

impl ListFilter {
    /// A filter set to `text` (not being typed).
    pub fn with_text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            editing: false,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The text as rows are compared with it: lower case, without surrounding spaces.
    pub fn needle(&self) -> String {
        self.text.trim().to_lowercase()
    }

    /// Whether a row whose visible text is `row_text` stays listed.
    pub fn matches(&self, row_text: &str) -> bool {
        let needle = self.needle();
        needle.is_empty() || row_text.to_lowercase().contains(&needle)
    }

    /// The indices of `rows` the filter keeps, given each row's visible text.
    pub fn keep<T>(&self, rows: &[T], row_text: impl Fn(&T) -> String) -> Vec<usize> {
        let needle = self.needle();
        rows.iter()
            .enumerate()
            .filter(|(_, r)| needle.is_empty() || row_text(r).to_lowercase().contains(&needle))
            .map(|(i, _)| i)
            .collect()
    }

    /// Applies a filter action (`/`, a typed character, Backspace, Enter, Esc); false for any
    /// other action, which the list handles itself.
    pub fn apply(&mut self, action: &Action) -> bool {
        match action {
            Action::StartFilter => self.editing = true,
            Action::FilterInput(c) if self.editing => self.text.push(*c),
            Action::FilterBackspace if self.editing => {
                self.text.pop();
            }
            Action::FilterDone if self.editing => self.editing = false,
            Action::FilterClear if self.editing || !self.text.is_empty() => {
                self.text.clear();
                self.editing = false;
            }
            _ => return false,
        }
        true
    }

    /// What a table title adds while a filter is set or typed: `filter: xyz · 3 of 40`
    /// (a cursor while typing).
    pub fn title(&self, shown: usize, total: usize) -> Option<String> {
        if self.text.is_empty() && !self.editing {
            return None;
        }
        let cursor = if self.editing { "▏" } else { "" };
        Some(format!(
            "filter: {}{cursor} · {shown} of {total}",
            self.text
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> ListFilter {
        let mut f = ListFilter::default();
        assert!(f.apply(&Action::StartFilter));
        for c in text.chars() {
            assert!(f.apply(&Action::FilterInput(c)));
        }
        f
    }

    #[test]
    fn typing_builds_the_text_until_enter_and_esc_clears_it() {
        let mut f = typed("ResN");
        assert!(f.editing);
        assert_eq!(f.text, "ResN");
        assert!(f.apply(&Action::FilterBackspace));
        assert!(f.apply(&Action::FilterDone));
        assert!(!f.editing);
        assert_eq!(f.text, "Res");
        // Not typing: characters are the list's keys, not the filter's.
        assert!(!f.apply(&Action::FilterInput('x')));
        assert_eq!(f.text, "Res");
        assert!(f.apply(&Action::FilterClear));
        assert_eq!(f, ListFilter::default());
        // Esc with nothing to clear is the list's own (it may close a view).
        assert!(!f.apply(&Action::FilterClear));
    }

    #[test]
    fn rows_match_case_insensitively_on_a_substring() {
        let f = typed("RESNET");
        assert!(f.matches("20261122-173500-resnet-3f9a running"));
        assert!(!f.matches("bert-base failed"));
        let rows = ["alpha", "Resnet-50", "beta", "my-resnet"];
        assert_eq!(f.keep(&rows, |r| r.to_string()), vec![1, 3]);
        assert_eq!(
            ListFilter::default().keep(&rows, |r| r.to_string()),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn the_title_says_the_filter_and_how_many_rows_it_keeps() {
        assert_eq!(ListFilter::default().title(40, 40), None);
        let mut f = typed("xyz");
        assert_eq!(f.title(3, 40).as_deref(), Some("filter: xyz▏ · 3 of 40"));
        f.apply(&Action::FilterDone);
        assert_eq!(f.title(3, 40).as_deref(), Some("filter: xyz · 3 of 40"));
    }
}
