//! Errors from loading configuration and themes, worded for the person who wrote the file.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A syntax error, unknown key or wrong value in a file.
    #[error("{}", Located { path, position: *position, reason })]
    Invalid {
        path: PathBuf,
        /// 1-based line and column, when the parser knows them.
        position: Option<(usize, usize)>,
        reason: String,
    },

    #[error("cannot read {}: {source}", display_path(path))]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error(
        "unknown theme `{name}`; available themes: {}{}",
        available.join(", "),
        expected_file.as_deref().map(create_hint).unwrap_or_default()
    )]
    UnknownTheme {
        name: String,
        available: Vec<String>,
        /// Where a user theme of this name would be read from.
        expected_file: Option<PathBuf>,
    },

    #[error("the built-in {what} is invalid, a bug in gpudeck: {reason}")]
    Builtin { what: String, reason: String },
}

/// `path:line:col: reason`, the form editors and terminals turn into a jump to the spot.
struct Located<'a> {
    path: &'a Path,
    position: Option<(usize, usize)>,
    reason: &'a str,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", display_path(self.path))?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

fn create_hint(path: &Path) -> String {
    format!(" (or create {})", display_path(path))
}

/// Shows paths under the home directory as `~/...`, the way people recognise their own files.
pub(crate) fn display_path(path: &Path) -> String {
    let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
    match home
        .as_deref()
        .and_then(|home| path.strip_prefix(home).ok())
    {
        Some(rest) if !rest.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_home_are_shown_with_a_tilde() {
        let Some(base) = directories::BaseDirs::new() else {
            return;
        };
        let home = base.home_dir();
        let file = home.join(".config/gpudeck/config.toml");
        assert_eq!(display_path(&file), "~/.config/gpudeck/config.toml");
        assert_eq!(display_path(home), home.display().to_string());
        assert_eq!(display_path(Path::new("/etc/x.toml")), "/etc/x.toml");
    }

    #[test]
    fn invalid_file_message_has_the_location_when_known() {
        let error = |position| ConfigError::Invalid {
            path: PathBuf::from("/etc/gpudeck.toml"),
            position,
            reason: "unknown field `x`".to_owned(),
        };
        assert_eq!(
            error(Some((3, 9))).to_string(),
            "/etc/gpudeck.toml:3:9: unknown field `x`"
        );
        assert_eq!(
            error(None).to_string(),
            "/etc/gpudeck.toml: unknown field `x`"
        );
    }
}
