//! Configuration and theme layering: embedded defaults, the user's files over them, and where
//! those files live.

mod dirs;
mod error;
pub(crate) mod layer;
mod runs;
mod settings;
mod theme;
mod words;

#[cfg(test)]
mod fuzz_tests {
    //! Property tests: any text as `config.toml` or a theme file gives settings or one mistake
    //! located at `file:line:col` and said in a user's words; never a panic.

    use std::path::Path;

    use proptest::prelude::*;

    use super::theme::user_theme;
    use super::{parse_config, BUILTIN_THEMES, DEFAULT_CONFIG_TOML};
    use crate::fuzz::{self, assert_located};

    /// serde's own words, which `words::explain` must have replaced.
    const SERDE_WORDS: [&str; 7] = [
        "invalid type:",
        "invalid value:",
        "expected u64",
        "expected usize",
        "expected struct",
        "expected a sequence",
        "unknown field",
    ];

    fn check_config(text: &str) {
        if let Err(error) = parse_config(Path::new("config.toml"), text) {
            let message = error.to_string();
            assert_located(&message, "config.toml", text);
            for words in SERDE_WORDS {
                assert!(!message.contains(words), "{words:?} in {message}");
            }
        }
    }

    fn check_theme(text: &str) {
        if let Err(error) = user_theme(Path::new("mine.toml"), text) {
            let message = error.to_string();
            assert_located(&message, "mine.toml", text);
            for words in SERDE_WORDS {
                assert!(!message.contains(words), "{words:?} in {message}");
            }
        }
    }

    proptest! {
        #![proptest_config(fuzz::config())]

        #[test]
        fn any_text_as_config(text in fuzz::any_text()) {
            check_config(&text);
        }

        #[test]
        fn the_default_config_with_mistakes(text in fuzz::near_miss(&[DEFAULT_CONFIG_TOML])) {
            check_config(&text);
        }

        #[test]
        fn any_text_as_theme(text in fuzz::any_text()) {
            check_theme(&text);
        }

        #[test]
        fn a_theme_with_mistakes(text in fuzz::near_miss(&[BUILTIN_THEMES[1].1])) {
            check_theme(&text);
        }
    }
}

use std::fs;
use std::io;
use std::path::Path;

pub use dirs::{Dirs, UnsafeFallback, DIR_VARIABLES};
pub use error::ConfigError;
pub use runs::{Backend, SlurmContainer, SlurmSettings};
pub use settings::{
    Config, GeneralConfig, GpuConfig, GraphMetric, MetricsConfig, ProcessConfig, ProcessSort,
    ShellConfig, UserMode, DEFAULT_CONFIG_TOML, MIN_REFRESH_MS,
};
pub use theme::{usable_themes, Theme, BUILTIN_THEMES, DEFAULT_THEME};

use error::display_path;
use layer::{layered, LayerError};

/// Everything loading produced: what to run with, and what to tell the user about it.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub theme: Theme,
    /// The theme actually in use, which differs from `config.general.theme` when that was unknown.
    pub theme_name: String,
    /// Problems that were worked around; the UI shows them, the program carries on.
    pub warnings: Vec<String>,
}

/// Loads the configuration and theme.
///
/// Mistakes in files gpudeck finds on its own (`<config dir>/config.toml`, the theme it names)
/// become warnings and the built-in defaults are used, so a typo never stops the dashboard.
/// What the user named on the command line (`explicit_config` and the theme it names,
/// `theme_override`) must work: any problem with it is an `Err`.
pub fn load(
    dirs: &Dirs,
    explicit_config: Option<&Path>,
    theme_override: Option<&str>,
) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();
    let mut config = match explicit_config {
        Some(path) => {
            let text = fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            parse_config(path, &text)?
        }
        None => implicit_config(&dirs.config_file(), &mut warnings)?,
    };
    settings::clamp(&mut config, &mut warnings);

    let themes_dir = dirs.themes_dir();
    let (theme_name, theme) = match theme_override {
        Some(name) => (name.to_owned(), theme::find_theme(name, &themes_dir)?),
        None => {
            let name = &config.general.theme;
            match theme::find_theme(name, &themes_dir) {
                Ok(theme) => (name.clone(), theme),
                // The theme an explicit config names is as explicit as the config itself.
                Err(error) if explicit_config.is_some() => return Err(error),
                Err(error @ ConfigError::Builtin { .. }) => return Err(error),
                Err(error) => {
                    warnings.push(format!("{error} — using the {DEFAULT_THEME} theme"));
                    (DEFAULT_THEME.to_owned(), Theme::builtin(DEFAULT_THEME)?)
                }
            }
        }
    };
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    Ok(Loaded {
        config,
        theme,
        theme_name,
        warnings,
    })
}

/// The built-in configuration, from the embedded `config/default.toml`.
pub fn builtin_config() -> Result<Config, ConfigError> {
    parse_config(Path::new("config/default.toml"), "")
}

/// The config at the default location: a missing file is normal, a broken one is a warning.
fn implicit_config(path: &Path, warnings: &mut Vec<String>) -> Result<Config, ConfigError> {
    let problem = match fs::read_to_string(path) {
        Ok(text) => match parse_config(path, &text) {
            Ok(config) => return Ok(config),
            Err(error @ ConfigError::Builtin { .. }) => return Err(error),
            Err(error) => error.to_string(),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => return builtin_config(),
        Err(e) => format!("cannot read {}: {e}", display_path(path)),
    };
    warnings.push(format!("{problem} — using the built-in defaults"));
    builtin_config()
}

/// `text` (the contents of `path`) layered over the embedded defaults.
fn parse_config(path: &Path, text: &str) -> Result<Config, ConfigError> {
    layered(DEFAULT_CONFIG_TOML, text).map_err(|error| match error {
        LayerError::User(mistake) => ConfigError::Invalid {
            path: path.to_path_buf(),
            position: mistake.position,
            reason: words::explain(&mistake, words::config_expects),
        },
        LayerError::Base(reason) => ConfigError::Builtin {
            what: "config/default.toml".to_owned(),
            reason,
        },
    })
}
