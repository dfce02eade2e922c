//! Layering a user's TOML over an embedded default, with errors located in the user's text.

use serde::de::DeserializeOwned;
use toml::de::{DeTable, DeValue, Deserializer};

/// Why a layered document could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LayerError {
    /// The embedded base itself is broken: a bug, caught by the tests of the embedded files.
    Base(String),
    /// A mistake in the user's text.
    User(Mistake),
}

/// A mistake in a user's file, with its 1-based position when the parser knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mistake {
    pub(crate) position: Option<(usize, usize)>,
    /// The parser's own words (serde's type names included); `words::explain` rewords them.
    pub(crate) reason: String,
    /// Where in the document it is, as the user wrote the keys: `["general", "refresh_ms"]`.
    pub(crate) key: Vec<String>,
    /// The mistake is inside a list (one element of it), not the list itself.
    pub(crate) in_list: bool,
    /// What the user wrote at the spot, on one line and shortened.
    pub(crate) found: Option<String>,
}

/// Deserializes `user` laid over `base`: tables merge key by key, any other value in `user`
/// replaces the base's.
///
/// The merge is done on the parsed, span-carrying documents rather than on `toml::Table`, so a
/// wrong type or unknown key in the user's text still reports its line and column there. Every
/// node that can fail to deserialize after the merge is the user's: the base is checked alone
/// first, and its nodes only fill gaps the user left.
pub(crate) fn layered<T: DeserializeOwned>(base: &str, user: &str) -> Result<T, LayerError> {
    let base_doc = DeTable::parse(base).map_err(|e| LayerError::Base(e.message().to_owned()))?;
    T::deserialize(Deserializer::from(base_doc.clone()))
        .map_err(|e| LayerError::Base(e.message().to_owned()))?;

    let mut user_doc = DeTable::parse(user).map_err(|e| LayerError::User(mistake(user, &e)))?;
    merge(user_doc.get_mut(), base_doc.into_inner());
    T::deserialize(Deserializer::from(user_doc)).map_err(|e| LayerError::User(mistake(user, &e)))
}

fn merge<'a>(user: &mut DeTable<'a>, base: DeTable<'a>) {
    for (key, base_value) in base {
        match user.get_mut(&key) {
            None => {
                user.insert(key, base_value);
            }
            Some(user_value) => {
                if let (DeValue::Table(user_table), DeValue::Table(base_table)) =
                    (user_value.get_mut(), base_value.into_inner())
                {
                    merge(user_table, base_table);
                }
            }
        }
    }
}

fn mistake(text: &str, error: &toml::de::Error) -> Mistake {
    let span = error.span();
    let (key, in_list) = span
        .as_ref()
        .map(|span| key_at(text, span.start))
        .unwrap_or_default();
    Mistake {
        position: span.as_ref().map(|span| position(text, span.start)),
        reason: error.message().trim_end().to_owned(),
        key,
        in_list,
        found: span.and_then(|span| snippet(text, span)),
    }
}

/// The key path at a byte offset: from the parsed document when it parses (a value's span
/// is exact there, even in inline tables and lists), else from the line it is on.
fn key_at(text: &str, offset: usize) -> (Vec<String>, bool) {
    match DeTable::parse(text) {
        Ok(doc) => path_in(doc.get_ref(), offset).unwrap_or_default(),
        Err(_) => (key_on_line(text, offset), false),
    }
}

fn path_in(table: &DeTable<'_>, offset: usize) -> Option<(Vec<String>, bool)> {
    for (key, value) in table {
        let inside = |span: std::ops::Range<usize>| span.contains(&offset);
        let deeper = match value.get_ref() {
            DeValue::Table(inner) => path_in(inner, offset),
            DeValue::Array(items) => items.iter().find_map(|item| match item.get_ref() {
                DeValue::Table(inner) => path_in(inner, offset),
                _ => inside(item.span()).then(|| (Vec::new(), true)),
            }),
            _ => None,
        };
        if let Some((mut rest, in_list)) = deeper {
            rest.insert(0, key.get_ref().to_string());
            return Some((rest, in_list));
        }
        if inside(key.span()) || inside(value.span()) {
            return Some((vec![key.get_ref().to_string()], false));
        }
    }
    None
}

/// For text that does not parse: the `[table]` header above the offset and the key before
/// `=` on its line, as written.
fn key_on_line(text: &str, offset: usize) -> Vec<String> {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or_default();
    let Some((key, _)) = line.split_once('=') else {
        return Vec::new();
    };
    let header = before[..line_start].lines().rev().find_map(|line| {
        let line = line.trim();
        let name = line.strip_prefix('[')?.trim_start_matches('[');
        Some(name.split(']').next()?.trim().to_owned())
    });
    let mut path: Vec<String> = header
        .into_iter()
        .chain(std::iter::once(key.trim().to_owned()))
        .flat_map(|part| {
            part.split('.')
                .map(|piece| piece.trim().trim_matches(['"', '\'']).to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    path.retain(|piece| !piece.is_empty());
    path
}

/// The text at `span`, cut at the line's end and at 40 characters.
fn snippet(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let raw = text.get(span.start..span.end.max(span.start))?;
    let line = raw.lines().next().unwrap_or_default().trim();
    if line.is_empty() {
        return None;
    }
    let mut shown: String = line.chars().take(40).collect();
    if line.chars().count() > 40 || raw.trim().contains('\n') {
        shown.push('…');
    }
    Some(shown)
}

/// Every `*.toml` file in a user directory, in name order, each with its text and the name to
/// show in messages; a file that cannot be read, or a directory that cannot be listed, is a
/// warning. A missing directory is no warning: it is where a user may add files.
pub(crate) fn user_toml_files(
    dir: &std::path::Path,
    warnings: &mut Vec<String>,
) -> Vec<(String, String)> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(format!("{}: cannot list the directory: {e}", dir.display()));
            return Vec::new();
        }
    };
    let mut paths: Vec<_> = listing
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let shown = path.display().to_string();
            match std::fs::read_to_string(&path) {
                Ok(text) => Some((shown, text)),
                Err(e) => {
                    warnings.push(format!("{shown}: cannot read: {e}; the file is skipped"));
                    None
                }
            }
        })
        .collect()
}

/// `origin:line:col: reason` (or `origin: reason` without a position), as editors jump to it.
pub(crate) fn located(origin: &str, position: Option<(usize, usize)>, reason: &str) -> String {
    match position {
        Some((line, column)) => format!("{origin}:{line}:{column}: {reason}"),
        None => format!("{origin}: {reason}"),
    }
}

/// A TOML error in `text` from `origin`, located.
pub(crate) fn located_toml_error(origin: &str, text: &str, error: &toml::de::Error) -> String {
    let m = mistake(text, error);
    located(origin, m.position, &m.reason)
}

/// 1-based line and column (in characters, as editors count) of a byte offset.
pub(crate) fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Checks that `text` deserializes as `T` on its own, with nothing layered under it.
#[cfg(test)]
pub(crate) fn standalone<T: DeserializeOwned>(text: &str) -> Result<T, Mistake> {
    let doc = DeTable::parse(text).map_err(|e| mistake(text, &e))?;
    T::deserialize(Deserializer::from(doc)).map_err(|e| mistake(text, &e))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq, Eq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        a: Section,
        top: u32,
    }

    #[derive(Debug, PartialEq, Eq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Section {
        x: u32,
        y: String,
    }

    const BASE: &str = "top = 1\n[a]\nx = 1\ny = \"base\"\n";

    #[test]
    fn user_values_win_and_gaps_come_from_the_base() {
        let doc: Doc = layered(BASE, "[a]\ny = \"user\"\n").unwrap();
        assert_eq!(doc.top, 1);
        assert_eq!(
            doc.a,
            Section {
                x: 1,
                y: "user".to_owned()
            }
        );
    }

    #[test]
    fn dotted_keys_merge_like_tables() {
        let doc: Doc = layered(BASE, "a.x = 7\ntop = 2\n").unwrap();
        assert_eq!((doc.a.x, doc.a.y.as_str(), doc.top), (7, "base", 2));
    }

    #[test]
    fn empty_user_text_gives_the_base() {
        let doc: Doc = layered(BASE, "").unwrap();
        assert_eq!(doc.a.y, "base");
    }

    #[test]
    fn errors_point_into_the_user_text() {
        let user = "# comment\n[a]\n  zz = 1\n";
        let Err(LayerError::User(mistake)) = layered::<Doc>(BASE, user) else {
            panic!("expected a user error");
        };
        assert_eq!(mistake.position, Some((3, 3)));
        assert_eq!(mistake.reason, "unknown field `zz`, expected `x` or `y`");
    }

    #[test]
    fn a_table_replaced_by_a_value_is_a_type_error() {
        let Err(LayerError::User(mistake)) = layered::<Doc>(BASE, "a = 5\n") else {
            panic!("expected a user error");
        };
        assert_eq!(mistake.position, Some((1, 5)));
        assert!(
            mistake.reason.contains("invalid type: integer `5`"),
            "{mistake:?}"
        );
    }

    #[test]
    fn syntax_errors_are_located() {
        let Err(LayerError::User(mistake)) = layered::<Doc>(BASE, "top = 1\n[a\n") else {
            panic!("expected a user error");
        };
        assert_eq!(mistake.position.map(|p| p.0), Some(2));
    }

    #[test]
    fn a_broken_base_is_reported_as_such() {
        let result = layered::<Doc>("top = \n", "");
        assert!(matches!(result, Err(LayerError::Base(_))), "{result:?}");
        let result = layered::<Doc>("top = 1\n", "");
        assert!(matches!(result, Err(LayerError::Base(_))), "{result:?}");
    }

    #[test]
    fn columns_count_characters() {
        assert_eq!(position("é = 1\nab", 8), (2, 2));
        assert_eq!(position("abc", 0), (1, 1));
        assert_eq!(position("abc", 99), (1, 4));
    }
}
