//! Sizes as people write them in config files and on the command line ("8GiB", "512m").

use super::error::ShellError;

/// Parses a size: a whole number with an optional binary unit (B, K/KiB/KB, M/MiB/MB, G/GiB/GB,
/// T/TiB/TB, any case). Units are binary either way, as `docker run --shm-size` reads them.
pub fn parse_size(text: &str) -> Result<u64, ShellError> {
    let bad = |why: &str| ShellError::BadSize {
        value: text.to_string(),
        why: why.to_string(),
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    if number.is_empty() {
        return Err(bad("it does not start with a number"));
    }
    let number: u64 = number.parse().map_err(|_| bad("the number is too large"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad("unknown unit")),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| bad("the size is too large"))
}

/// A ulimit value: "unlimited" (-1, as Docker spells it), a size in bytes, or "default"
/// (`None`: whatever Docker gives containers).
pub fn parse_limit(text: &str) -> Result<Option<i64>, ShellError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "unlimited" => return Ok(Some(-1)),
        "default" => return Ok(None),
        _ => {}
    }
    let bytes = parse_size(text)?;
    i64::try_from(bytes)
        .map(Some)
        .map_err(|_| ShellError::BadSize {
            value: text.to_string(),
            why: "the size is too large".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_units() {
        let cases = [
            ("8GiB", 8 << 30),
            ("64MiB", 64 << 20),
            ("512m", 512 << 20),
            ("16g", 16 << 30),
            ("1 TiB", 1 << 40),
            ("100", 100),
            ("4kb", 4096),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text).ok(), Some(want), "{text}");
        }
        for bad in [
            "",
            "GiB",
            "8 parsecs",
            "-1",
            "99999999999999999999",
            "20000000T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_may_be_unlimited() {
        assert_eq!(parse_limit("unlimited").ok(), Some(Some(-1)));
        assert_eq!(parse_limit("64MiB").ok(), Some(Some(64 << 20)));
        assert_eq!(parse_limit("default").ok(), Some(None));
        assert!(parse_limit("lots").is_err());
    }
}
