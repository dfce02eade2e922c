//! Which environment variables hold secrets, and hiding their values in everything gpudeck
//! prints or shows (`runs --json`, `export`, the dashboard), so a paste carries no token.

use std::collections::BTreeMap;

/// What a secret's value is shown as.
pub const REDACTED: &str = "<redacted>";

/// Names that look like secrets whatever the config says; `*` stands for any text.
pub const BUILTIN_SECRET_NAMES: [&str; 4] = ["*TOKEN*", "*KEY*", "*SECRET*", "*PASSWORD*"];

/// Decides which values to hide: names matching the built-in patterns or the config's
/// `[general] secret_names`, case-insensitively; nothing when `--show-secrets` was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secrets {
    patterns: Vec<String>,
    shown: bool,
}

impl Default for Secrets {
    fn default() -> Self {
        Self::hidden(&[])
    }
}

impl Secrets {
    /// Hides the built-in names and `extra` (names or `*` patterns from the config).
    pub fn hidden(extra: &[String]) -> Self {
        let patterns = BUILTIN_SECRET_NAMES
            .iter()
            .map(|p| p.to_string())
            .chain(extra.iter().cloned())
            .map(|p| p.to_ascii_uppercase())
            .collect();
        Self {
            patterns,
            shown: false,
        }
    }

    /// `--show-secrets`: every value as it is.
    pub fn shown() -> Self {
        Self {
            patterns: Vec::new(),
            shown: true,
        }
    }

    /// The config's list, or nothing hidden when `show` is set.
    pub fn from_config(extra: &[String], show: bool) -> Self {
        if show {
            Self::shown()
        } else {
            Self::hidden(extra)
        }
    }

    /// Whether the value of the variable `name` is hidden.
    pub fn is_secret(&self, name: &str) -> bool {
        let name = name.to_ascii_uppercase();
        !self.shown && self.patterns.iter().any(|p| glob_match(p, &name))
    }

    /// `value`, or [`REDACTED`] when `name` is a secret's.
    pub fn show<'a>(&self, name: &str, value: &'a str) -> &'a str {
        if self.is_secret(name) {
            REDACTED
        } else {
            value
        }
    }

    /// Hides the secrets of a name -> value map in place.
    pub fn redact_map(&self, env: &mut BTreeMap<String, String>) {
        for (name, value) in env.iter_mut() {
            if self.is_secret(name) {
                *value = REDACTED.to_string();
            }
        }
    }

    /// A `NAME=VALUE` line (Docker's form) with a secret's value hidden.
    pub fn redact_assignment(&self, line: &str) -> String {
        match line.split_once('=') {
            Some((name, value)) => format!("{name}={}", self.show(name, value)),
            None => line.to_string(),
        }
    }
}

/// `*` matches any run of characters, everything else itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        // No `*`: the whole name must match.
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_look_like_secrets_are_hidden_case_insensitively() {
        let s = Secrets::default();
        for name in [
            "HF_TOKEN",
            "hf_token",
            "AWS_SECRET_ACCESS_KEY",
            "WANDB_API_KEY",
            "DB_PASSWORD",
            "TOKEN",
        ] {
            assert!(s.is_secret(name), "{name}");
        }
        for name in ["CUDA_VISIBLE_DEVICES", "RANK", "MASTER_ADDR", "PATH"] {
            assert!(!s.is_secret(name), "{name}");
        }
    }

    #[test]
    fn the_configs_names_are_hidden_too_exactly_or_by_pattern() {
        let s = Secrets::hidden(&["my_creds".into(), "DB_*".into()]);
        assert!(s.is_secret("MY_CREDS"));
        assert!(
            !s.is_secret("MY_CREDS_PATH"),
            "a name without * matches whole"
        );
        assert!(s.is_secret("DB_URL"));
        assert!(!s.is_secret("OLD_DB_URL"));
    }

    #[test]
    fn show_secrets_hides_nothing() {
        let s = Secrets::from_config(&["MY_CREDS".into()], true);
        assert!(!s.is_secret("HF_TOKEN") && !s.is_secret("MY_CREDS"));
    }

    #[test]
    fn maps_and_assignments_keep_names_and_lose_values() {
        let s = Secrets::default();
        let mut env = BTreeMap::from([
            ("HF_TOKEN".to_string(), "hf_abc".to_string()),
            ("RANK".to_string(), "0".to_string()),
        ]);
        s.redact_map(&mut env);
        assert_eq!(env["HF_TOKEN"], REDACTED);
        assert_eq!(env["RANK"], "0");
        assert_eq!(s.redact_assignment("API_KEY=a=b"), "API_KEY=<redacted>");
        assert_eq!(s.redact_assignment("LANG=C.UTF-8"), "LANG=C.UTF-8");
        assert_eq!(s.redact_assignment("NOVALUE"), "NOVALUE");
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("*KEY*", "KEY"));
        assert!(glob_match("A*B*C", "AXXBYYC"));
        assert!(!glob_match("A*B*C", "AXXBYYCD"));
        assert!(!glob_match("AB*BA", "ABA"));
        assert!(glob_match("*", ""));
    }
}
