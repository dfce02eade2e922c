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
