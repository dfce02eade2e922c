//! Colour themes: the embedded ones, user theme files layered over dark, and monochrome.

use std::fmt;
use std::fs;
use std::io;
use std::path::Path;
use std::str::FromStr;

use ratatui::style::Color;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::error::ConfigError;
use super::layer::{layered, LayerError};
use super::words;

/// The theme used when none is named, and the base a user theme is layered over.
pub const DEFAULT_THEME: &str = "dark";

const DARK_TOML: &str = include_str!("../../themes/dark.toml");

/// Every theme compiled into the binary, by name.
pub const BUILTIN_THEMES: [(&str, &str); 3] = [
    (DEFAULT_THEME, DARK_TOML),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

/// The colours of every part of the UI. Meaning never rests on colour alone: renderers pair
/// each status colour with a symbol or modifier, so `monochrome` loses nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Theme {
    #[serde(deserialize_with = "color")]
    pub fg: Color,
    #[serde(deserialize_with = "color")]
    pub bg: Color,
    #[serde(deserialize_with = "color")]
    pub muted: Color,
    #[serde(deserialize_with = "color")]
    pub accent: Color,
    #[serde(deserialize_with = "color")]
    pub border: Color,
    #[serde(deserialize_with = "color")]
    pub title: Color,
    #[serde(deserialize_with = "color")]
    pub tab_active: Color,
    #[serde(deserialize_with = "color")]
    pub tab_inactive: Color,
    #[serde(deserialize_with = "color")]
    pub header: Color,
    #[serde(deserialize_with = "color")]
    pub selected_fg: Color,
    #[serde(deserialize_with = "color")]
    pub selected_bg: Color,
    #[serde(deserialize_with = "color")]
    pub ok: Color,
    #[serde(deserialize_with = "color")]
    pub warn: Color,
    #[serde(deserialize_with = "color")]
    pub error: Color,
    #[serde(deserialize_with = "color")]
    pub graph_util: Color,
    #[serde(deserialize_with = "color")]
    pub graph_mem: Color,
    #[serde(deserialize_with = "color")]
    pub graph_power: Color,
    #[serde(deserialize_with = "color")]
    pub gauge_bg: Color,
}

impl Theme {
    /// One of the embedded themes.
    pub fn builtin(name: &str) -> Result<Self, ConfigError> {
        let (_, text) = BUILTIN_THEMES
            .iter()
            .find(|(builtin, _)| *builtin == name)
            .ok_or_else(|| ConfigError::UnknownTheme {
                name: name.to_owned(),
                available: builtin_names(),
                expected_file: None,
            })?;
        layered(DARK_TOML, text).map_err(|error| builtin_error(name, error))
    }

    /// For `NO_COLOR`: the terminal's own colours everywhere, so the UI carries meaning with
    /// bold, reverse and underline alone.
    pub fn monochrome() -> Self {
        let reset = Color::Reset;
        Self {
            fg: reset,
            bg: reset,
            muted: reset,
            accent: reset,
            border: reset,
            title: reset,
            tab_active: reset,
            tab_inactive: reset,
            header: reset,
            selected_fg: reset,
            selected_bg: reset,
            ok: reset,
            warn: reset,
            error: reset,
            graph_util: reset,
            graph_mem: reset,
            graph_power: reset,
            gauge_bg: reset,
        }
    }
}

fn builtin_names() -> Vec<String> {
    BUILTIN_THEMES
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect()
}

fn builtin_error(name: &str, error: LayerError) -> ConfigError {
    let reason = match error {
        LayerError::Base(reason) => reason,
        LayerError::User(mistake) => mistake.reason,
    };
    ConfigError::Builtin {
        what: format!("theme `{name}`"),
        reason,
    }
}

/// Finds a theme by name: `<themes_dir>/<name>.toml` first, so a user can adjust a built-in
/// theme by giving their file its name, then the embedded themes.
pub(crate) fn find_theme(name: &str, themes_dir: &Path) -> Result<Theme, ConfigError> {
    let path = themes_dir.join(format!("{name}.toml"));
    // A name that is not a plain file stem could reach outside the themes directory.
    let plain = !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\']);
    if plain {
        match fs::read_to_string(&path) {
            Ok(text) => return user_theme(&path, &text),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(ConfigError::Read { path, source }),
        }
    }
    if BUILTIN_THEMES.iter().any(|(builtin, _)| *builtin == name) {
        return Theme::builtin(name);
    }
    Err(ConfigError::UnknownTheme {
        name: name.to_owned(),
        available: available_themes(themes_dir),
        expected_file: plain.then_some(path),
    })
}

pub(super) fn user_theme(path: &Path, text: &str) -> Result<Theme, ConfigError> {
    layered(DARK_TOML, text).map_err(|error| match error {
        LayerError::User(mistake) => ConfigError::Invalid {
            path: path.to_path_buf(),
            position: mistake.position,
            reason: words::explain(&mistake, words::theme_expects),
        },
        LayerError::Base(reason) => ConfigError::Builtin {
            what: format!("theme `{DEFAULT_THEME}`"),
            reason,
        },
    })
}

/// The embedded themes and the user's theme files, sorted, for "unknown theme" messages.
pub(crate) fn available_themes(themes_dir: &Path) -> Vec<String> {
    let mut names = builtin_names();
    if let Ok(entries) = fs::read_dir(themes_dir) {
        names.extend(entries.filter_map(|entry| {
            let path = entry.ok()?.path();
            let is_toml = path.extension().is_some_and(|ext| ext == "toml");
            is_toml.then(|| path.file_stem()?.to_str().map(str::to_owned))?
        }));
    }
    names.sort();
    names.dedup();
    names
}

/// Every theme that can be used: the embedded ones and the user's files that load, by name (a
/// broken file is left out; the startup warning already names it when it is the chosen one).
pub fn usable_themes(themes_dir: &Path) -> Vec<(String, Theme)> {
    available_themes(themes_dir)
        .into_iter()
        .filter_map(|name| find_theme(&name, themes_dir).ok().map(|t| (name, t)))
        .collect()
}

/// Reads a colour from a name ("red", "light-blue", "reset"), "#rrggbb", or a palette index
/// given as a number or a string; ratatui's own impl takes no bare numbers and reports only
/// "Failed to parse Colors".
fn color<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Color, D::Error> {
    deserializer.deserialize_any(ColorVisitor)
}

struct ColorVisitor;

impl Visitor<'_> for ColorVisitor {
    type Value = Color;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a colour: a name like \"red\", \"#rrggbb\", or a palette index 0-255")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Color, E> {
        Color::from_str(value).map_err(|_| {
            E::custom(format!(
                "unknown colour `{value}`: use a name like \"red\" or \"light-blue\", \"reset\", \"#rrggbb\", or a palette index 0-255"
            ))
        })
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Color, E> {
        u8::try_from(value)
            .map(Color::Indexed)
            .map_err(|_| E::custom(format!("palette index {value} is out of range 0-255")))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Color, E> {
        self.visit_i64(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::super::layer::standalone;
    use super::*;

    #[test]
    fn every_embedded_theme_is_complete_on_its_own() {
        for (name, text) in BUILTIN_THEMES {
            let alone: Result<Theme, _> = standalone(text);
            let alone = alone.unwrap_or_else(|e| panic!("theme {name}: {e:?}"));
            assert_eq!(Theme::builtin(name).unwrap(), alone, "theme {name}");
        }
    }

    #[test]
    fn embedded_themes_differ() {
        let themes: Vec<Theme> = BUILTIN_THEMES
            .iter()
            .map(|(name, _)| Theme::builtin(name).unwrap())
            .collect();
        for (i, a) in themes.iter().enumerate() {
            for b in &themes[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let dark = Theme::builtin("dark").unwrap();
        assert_eq!(dark.accent, Color::Rgb(0x89, 0xb4, 0xfa));
        assert_eq!(dark.bg, Color::Reset);
        let high_contrast = Theme::builtin("high-contrast").unwrap();
        assert_eq!(high_contrast.bg, Color::Black);
        assert_eq!(high_contrast.error, Color::LightRed);
    }

    #[test]
    fn unknown_builtin_lists_the_builtins() {
        let error = Theme::builtin("solarized").unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown theme `solarized`; available themes: dark, light, high-contrast"
        );
    }

    #[test]
    fn monochrome_resets_every_colour() {
        let mut all_reset: toml::Table = toml::from_str(DARK_TOML).unwrap();
        for (_, value) in all_reset.iter_mut() {
            *value = toml::Value::from("reset");
        }
        let all_reset = toml::to_string(&all_reset).unwrap();
        assert_eq!(
            standalone::<Theme>(&all_reset).unwrap(),
            Theme::monochrome()
        );
    }

    #[derive(Debug, Deserialize)]
    struct One {
        #[serde(deserialize_with = "color")]
        c: Color,
    }

    fn parse_colour(value: &str) -> Result<Color, String> {
        standalone::<One>(&format!("c = {value}"))
            .map(|one| one.c)
            .map_err(|e| e.reason)
    }

    #[test]
    fn colours_by_name_hex_and_index() {
        let cases = [
            ("\"red\"", Color::Red),
            ("\"light-blue\"", Color::LightBlue),
            ("\"bright_green\"", Color::LightGreen),
            ("\"dark-grey\"", Color::DarkGray),
            ("\"reset\"", Color::Reset),
            ("\"#1e66f5\"", Color::Rgb(0x1e, 0x66, 0xf5)),
            ("\"#FFFFFF\"", Color::Rgb(255, 255, 255)),
            ("42", Color::Indexed(42)),
            ("\"42\"", Color::Indexed(42)),
            ("255", Color::Indexed(255)),
        ];
        for (value, expected) in cases {
            assert_eq!(parse_colour(value), Ok(expected), "{value}");
        }
    }

    #[test]
    fn bad_colours_say_what_is_accepted() {
        assert_eq!(
            parse_colour("\"redd\""),
            Err("unknown colour `redd`: use a name like \"red\" or \"light-blue\", \"reset\", \"#rrggbb\", or a palette index 0-255".to_owned())
        );
        assert_eq!(
            parse_colour("256"),
            Err("palette index 256 is out of range 0-255".to_owned())
        );
        assert_eq!(
            parse_colour("-1"),
            Err("palette index -1 is out of range 0-255".to_owned())
        );
        assert!(parse_colour("true")
            .unwrap_err()
            .contains("a colour: a name like"));
    }
}
