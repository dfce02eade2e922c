//! The colour themes the dashboard can switch between (`T`), loaded before it starts.

use crate::config::Theme;

/// The themes to cycle through and the one in use; empty until the app is given a theme.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThemeChoice {
    themes: Vec<(String, Theme)>,
    current: usize,
    /// Why there is nothing to switch to, when that is so (NO_COLOR).
    fixed: Option<String>,
}

impl ThemeChoice {
    /// `name`'s theme among `all`; it is added when missing (a theme given some other way).
    pub fn new(all: Vec<(String, Theme)>, name: &str, theme: Theme) -> Self {
        let mut themes = all;
        let current = match themes.iter().position(|(n, _)| n == name) {
            Some(i) => {
                themes[i].1 = theme;
                i
            }
            None => {
                themes.insert(0, (name.to_owned(), theme));
                0
            }
        };
        Self {
            themes,
            current,
            fixed: None,
        }
    }

    /// One theme that is not to be switched, and why.
    pub fn fixed(name: &str, theme: Theme, why: &str) -> Self {
        Self {
            themes: vec![(name.to_owned(), theme)],
            current: 0,
            fixed: Some(why.to_owned()),
        }
    }

    pub fn current(&self) -> Option<&Theme> {
        self.themes.get(self.current).map(|(_, t)| t)
    }

    pub fn current_name(&self) -> Option<&str> {
        self.themes.get(self.current).map(|(n, _)| n.as_str())
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.themes.iter().map(|(n, _)| n.as_str())
    }

    /// Switches to the next theme; the line that says which it is and how to keep it, or why
    /// there is none to switch to.
    pub fn advance(&mut self) -> Result<String, String> {
        if let Some(why) = &self.fixed {
            return Err(why.clone());
        }
        if self.themes.len() < 2 {
            return Err(
                "no other theme to switch to: add one as <config dir>/themes/NAME.toml".into(),
            );
        }
        self.current = (self.current + 1) % self.themes.len();
        let name = self.current_name().unwrap_or_default().to_owned();
        let all: Vec<&str> = self.names().collect();
        Ok(format!(
            "theme: {name} (of {}); T switches, `theme = \"{name}\"` in config.toml keeps it",
            all.join(", ")
        ))
    }
}
