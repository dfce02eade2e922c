//! Checks on what a user gives the batch script: `#SBATCH` values in a safe character set,
//! extra lines, and shell quoting of everything that reaches shell code.

use super::SlurmError;

/// A value of an `#SBATCH` line (name, partition, account): sbatch reads these lines itself,
/// without a shell, so they are kept to characters that need no quoting anywhere.
pub(super) fn sbatch_word(field: &'static str, value: &str) -> Result<String, SlurmError> {
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+');
    if value.is_empty() || !value.chars().all(safe) {
        return Err(SlurmError::BadValue {
            field,
            value: value.to_string(),
            why: "only letters, digits and `_ - . +` are allowed",
        });
    }
    Ok(value.to_string())
}

/// A time limit: digits, `:` and `-` ("02:00:00", "1-12:00:00", "90").
pub(super) fn time_limit(value: &str) -> Result<String, SlurmError> {
    let safe = |c: char| c.is_ascii_digit() || c == ':' || c == '-';
    if value.is_empty()
        || !value.chars().all(safe)
        || !value.starts_with(|c: char| c.is_ascii_digit())
    {
        return Err(SlurmError::BadValue {
            field: "time limit",
            value: value.to_string(),
            why: "write it as sbatch takes it: MINUTES, HH:MM:SS or DAYS-HH:MM:SS",
        });
    }
    Ok(value.to_string())
}

/// A path on an `#SBATCH` line: no whitespace, quotes or control characters, which sbatch would
/// split or misread.
pub(super) fn sbatch_path(field: &'static str, value: &str) -> Result<String, SlurmError> {
    let bad = |c: char| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '\\');
    if value.is_empty() || value.chars().any(bad) {
        return Err(SlurmError::BadValue {
            field,
            value: value.to_string(),
            why: "a path on an #SBATCH line cannot hold spaces, quotes or control characters",
        });
    }
    Ok(value.to_string())
}

/// A work dir mounted into a container: pyxis splits `--container-mounts` at `,` and `:`, and
/// Apptainer's `--bind` at `:`, so a path holding either would mount something else.
pub(super) fn mount_source(path: &std::path::Path) -> Result<(), SlurmError> {
    let text = path.to_string_lossy();
    if text.contains([',', ':']) {
        return Err(SlurmError::BadValue {
            field: "work dir",
            value: text.into_owned(),
            why: "a directory mounted into a container cannot hold `,` or `:`",
        });
    }
    Ok(())
}

/// An extra `#SBATCH` option, kept as given once it is one option on one line.
pub(super) fn extra_line(line: &str) -> Result<String, SlurmError> {
    let bad = |why| SlurmError::BadExtra {
        line: line.to_string(),
        why,
    };
    if !line.starts_with("--") || line.len() < 3 {
        return Err(bad("it must be a long option starting with `--`"));
    }
    if line.chars().any(char::is_control) {
        return Err(bad("it must be one line without control characters"));
    }
    Ok(line.to_string())
}

/// An environment variable name: letters, digits and `_`, not starting with a digit.
pub(super) fn env_name(name: &str) -> Result<String, SlurmError> {
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(SlurmError::BadValue {
            field: "environment variable name",
            value: name.to_string(),
            why: "a name is letters, digits and `_`, not starting with a digit",
        });
    }
    Ok(name.to_string())
}

/// One word for bash, quoted so that it stays literal whatever it holds.
pub(super) fn quote(field: &'static str, value: &str) -> Result<String, SlurmError> {
    shlex::try_quote(value)
        .map(|q| q.into_owned())
        .map_err(|_| SlurmError::BadValue {
            field,
            value: value.to_string(),
            why: "it holds a NUL byte, which no shell word can carry",
        })
}

/// Several words, each quoted, joined by spaces.
pub(super) fn quote_all(field: &'static str, words: &[String]) -> Result<String, SlurmError> {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| quote(field, w))
        .collect::<Result<_, _>>()?;
    Ok(quoted.join(" "))
}
