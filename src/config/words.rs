//! The parser's and serde's messages reworded for the person who edits the file: what a key
//! takes in their terms ("a number of milliseconds"), never a Rust type name ("u64").

use super::layer::Mistake;

/// What the value at a key path must be, in a user's words; `None` where the generic wording
/// of the expected type is the best there is.
pub(crate) type Expectations = fn(&[&str]) -> Option<String>;

/// What `config.toml` takes at each key (the keys of `config/default.toml`).
pub(crate) fn config_expects(key: &[&str]) -> Option<String> {
    let words = match key {
        [section] => return Some(format!("a table of settings (like [{section}])")),
        ["general", "theme"] => "a theme name in quotes (like \"dark\")",
        ["general", "refresh_ms"] => "a number of milliseconds (like 1000)",
        ["general", "history_secs"] => "a number of seconds (like 600)",
        ["general", "mouse" | "read_only"]
        | ["processes", "sort_descending"]
        | ["shell", "keep"] => "true or false",
        ["gpu", "graph"] => "\"utilization\", \"memory\" or \"power\"",
        ["gpu", "compact_threshold"] => "a number of GPUs (like 8)",
        ["processes", "sort"] => "\"memory\", \"pid\", \"user\", \"gpu\" or \"command\"",
        ["shell", "shm_size"] => "a size in quotes (like \"8GiB\")",
        ["shell", "memlock" | "stack"] => {
            "\"unlimited\", \"default\" or a size in quotes (like \"64MiB\")"
        }
        ["shell", "network"] => "a Docker network name in quotes (like \"bridge\" or \"none\")",
        ["shell", "user"] => "\"host\", \"root\" or \"image\"",
        ["shell", "cap_drop"] => "a list of capability names (like [\"NET_RAW\", \"MKNOD\"])",
        ["shell", "mount_point"] => "a path in quotes (like \"/workspace\")",
        ["metrics", "listen"] => "an address and port in quotes (like \"127.0.0.1:9400\")",
        ["runs", "backend"] => "\"local\" or \"slurm\"",
        ["slurm", "partition" | "account"] => "a name in quotes",
        ["slurm", "time"] => "a time limit in quotes (like \"02:00:00\")",
        ["slurm", "container"] => "\"pyxis\" or \"apptainer\"",
        _ => return None,
    };
    Some(words.to_owned())
}

/// Every key of a theme is a colour.
pub(crate) fn theme_expects(key: &[&str]) -> Option<String> {
    (key.len() == 1)
        .then(|| "a colour: a name (like \"red\"), \"#rrggbb\" or a palette index 0-255".to_owned())
}

/// The mistake in words a user knows, without its location (the caller adds `file:line:col`).
pub(crate) fn explain(mistake: &Mistake, expects: Expectations) -> String {
    let key: Vec<&str> = mistake.key.iter().map(String::as_str).collect();
    let reason = mistake.reason.as_str();
    if let Some(rest) = reason.strip_prefix("unknown field ") {
        return unknown_key(&key, rest, expects);
    }
    if reason == "duplicate key" {
        let name = match key.as_slice() {
            [] => mistake.found.clone().unwrap_or_default(),
            _ => key.join("."),
        };
        return format!("`{name}` is set twice; keep one of them");
    }
    if reason.starts_with("string values must be quoted") {
        return match expects(&key) {
            Some(expected) if !key.is_empty() => wrong_value(mistake, &key, &expected),
            _ => format!(
                "text must be in quotes (like name = \"value\"), found {}",
                mistake.found.as_deref().unwrap_or("a bare word")
            ),
        };
    }
    if key.is_empty() || !is_value_problem(reason) {
        return reason.to_owned();
    }
    let expected = expects(&key)
        .or_else(|| generic_expectation(reason))
        .unwrap_or_else(|| "text in quotes".to_owned());
    wrong_value(mistake, &key, &expected)
}

/// serde's messages for a value of the wrong type or out of its range.
fn is_value_problem(reason: &str) -> bool {
    ["invalid type: ", "invalid value: ", "unknown variant "]
        .iter()
        .any(|prefix| reason.starts_with(prefix))
        || reason == "wanted string or table"
        || reason == "invalid socket address syntax"
}

fn wrong_value(mistake: &Mistake, key: &[&str], expected: &str) -> String {
    let mut text = format!("{}: expected {expected}", key.join("."));
    if let Some(found) = &mistake.found {
        text.push_str(&format!(", found {found}"));
        if mistake.in_list {
            text.push_str(" in the list");
        }
    }
    let reason = &mistake.reason;
    if reason.starts_with("invalid value: integer") || reason.contains(" as i128") {
        text.push_str(" (out of range)");
    }
    text
}

/// serde's "expected u64" and the like, in a user's words.
fn generic_expectation(reason: &str) -> Option<String> {
    let (_, expected) = reason.rsplit_once(", expected ")?;
    let words = match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        "a string" | "a borrowed string" | "a character" => "text in quotes",
        "a sequence" => "a list (like [\"a\", \"b\"])",
        "a map" => "a table",
        "socket address" => "an address and port in quotes (like \"127.0.0.1:9400\")",
        other if other.starts_with("struct ") => "a table",
        other if other.contains('`') => return Some(choices(other)),
        other => other,
    };
    Some(words.to_owned())
}

/// "one of `a`, `b`, `c`" or "`a` or `b`" as "\"a\", \"b\" or \"c\"", the way a value is written.
fn choices(expected: &str) -> String {
    let names: Vec<String> = backticked(expected)
        .map(|name| format!("\"{name}\""))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((only, _)) => only.clone(),
        None => expected.to_owned(),
    }
}

fn backticked(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// serde's "`x`, expected one of `a`, `b`" as a user's "unknown key", with a likely fix.
fn unknown_key(key: &[&str], rest: &str, expects: Expectations) -> String {
    let mut names = backticked(rest);
    let unknown = names.next().unwrap_or_default();
    let known: Vec<&str> = names.collect();
    let parent = key.split_last().map_or(&[][..], |(_, parent)| parent);
    let place = if parent.is_empty() {
        "at the top level".to_owned()
    } else {
        format!("in [{}]", parent.join("."))
    };
    let mut text = format!("unknown key `{unknown}` {place}");
    // A key written above its table's header.
    let home = known.iter().find(|table| {
        let mut inside: Vec<&str> = parent.to_vec();
        inside.extend([**table, unknown]);
        expects(&inside).is_some()
    });
    if let Some(table) = home {
        let mut path: Vec<&str> = parent.to_vec();
        path.push(table);
        return format!("{text}; it belongs in [{}]", path.join("."));
    }
    let closest = known
        .iter()
        .map(|name| (strsim::damerau_levenshtein(unknown, name), name))
        .filter(|(distance, name)| *distance <= (name.len() / 3).max(1))
        .min();
    if let Some((_, name)) = closest {
        text.push_str(&format!("; did you mean `{name}`?"));
    }
    if known.is_empty() {
        text.push_str("; nothing may be set there");
    } else {
        let list: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
        let sep = if closest.is_some() { " The" } else { "; the" };
        text.push_str(&format!("{sep} keys there are {}", list.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mistake(key: &[&str], reason: &str, found: Option<&str>) -> Mistake {
        Mistake {
            position: Some((1, 1)),
            reason: reason.to_owned(),
            key: key.iter().map(|k| (*k).to_owned()).collect(),
            in_list: false,
            found: found.map(str::to_owned),
        }
    }

    #[test]
    fn type_names_become_what_the_key_takes() {
        let m = mistake(
            &["general", "refresh_ms"],
            "invalid type: string \"fast\", expected u64",
            Some("\"fast\""),
        );
        assert_eq!(
            explain(&m, config_expects),
            "general.refresh_ms: expected a number of milliseconds (like 1000), found \"fast\""
        );
    }

    #[test]
    fn keys_without_words_get_the_type_in_words() {
        let m = mistake(
            &["x", "y"],
            "invalid value: integer `-5`, expected u64",
            Some("-5"),
        );
        assert_eq!(
            explain(&m, config_expects),
            "x.y: expected a whole number, 0 or more, found -5 (out of range)"
        );
        let m = mistake(
            &["x", "y"],
            "unknown variant `k8s`, expected `local` or `slurm`",
            None,
        );
        assert_eq!(
            explain(&m, config_expects),
            "x.y: expected \"local\" or \"slurm\""
        );
    }

    #[test]
    fn unknown_keys_suggest_the_closest() {
        let m = mistake(
            &["general", "refersh_ms"],
            "unknown field `refersh_ms`, expected one of `theme`, `refresh_ms`",
            None,
        );
        assert_eq!(
            explain(&m, config_expects),
            "unknown key `refersh_ms` in [general]; did you mean `refresh_ms`? The keys there \
             are `theme`, `refresh_ms`"
        );
        let m = mistake(&["zz"], "unknown field `zz`, expected `a` or `b`", None);
        assert_eq!(
            explain(&m, config_expects),
            "unknown key `zz` at the top level; the keys there are `a`, `b`"
        );
    }

    #[test]
    fn a_key_outside_its_table_is_told_where_it_belongs() {
        let m = mistake(
            &["refresh_ms"],
            "unknown field `refresh_ms`, expected one of `general`, `gpu`",
            None,
        );
        assert_eq!(
            explain(&m, config_expects),
            "unknown key `refresh_ms` at the top level; it belongs in [general]"
        );
    }

    #[test]
    fn other_messages_are_kept() {
        let m = mistake(&[], "unclosed table, expected `]`", None);
        assert_eq!(explain(&m, config_expects), "unclosed table, expected `]`");
        let m = mistake(&["accent"], "palette index 256 is out of range 0-255", None);
        assert_eq!(
            explain(&m, theme_expects),
            "palette index 256 is out of range 0-255"
        );
    }
}
