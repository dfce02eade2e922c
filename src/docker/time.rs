//! The engine's RFC 3339 timestamps: to Unix seconds, and split off the front of log lines.

use jiff::Timestamp;

/// Unix seconds of an RFC 3339 time such as `2026-11-22T17:35:00.123456789Z` or
/// `2026-11-22T18:35:00+01:00`; `None` for the engine's "never" (`0001-01-01T00:00:00Z`, Go's
/// zero time) and for anything that does not parse.
pub(crate) fn unix_seconds(text: &str) -> Option<i64> {
    let at: Timestamp = text.parse().ok()?;
    (at >= FIRST_REAL_TIME).then(|| at.as_second())
}

/// `0002-01-01T00:00:00Z`: anything in year 1 is the engine saying "never".
const FIRST_REAL_TIME: Timestamp = Timestamp::constant(-62_104_060_800, 0);

/// Splits a leading timestamp (as `docker logs --timestamps` writes it) from the rest of a line.
pub(crate) fn split_timestamp(line: &str) -> (Option<&str>, &str) {
    match line.split_once(' ') {
        Some((stamp, rest)) if unix_seconds(stamp).is_some() => (Some(stamp), rest),
        _ => (None, line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_engine_times() {
        let cases = [
            ("1970-01-01T00:00:00Z", Some(0)),
            ("2026-11-22T17:35:00.123456789Z", Some(1_795_368_900)),
            ("2026-11-22T18:35:00+01:00", Some(1_795_368_900)),
            ("2026-11-22T10:05:00.5-07:30", Some(1_795_368_900)),
            ("2000-02-29T00:00:00Z", Some(951_782_400)),
            ("0001-01-01T00:00:00Z", None),
            ("yesterday", None),
            ("2026-13-01T00:00:00Z", None),
            // Shapes the engine and RFC 3339 allow: nanoseconds with an offset, lower-case
            // separators, a space for the `T`.
            ("2026-11-22T18:35:00.999999999+01:00", Some(1_795_368_900)),
            ("2026-11-22t17:35:00z", Some(1_795_368_900)),
            ("2026-11-22 17:35:00Z", Some(1_795_368_900)),
            ("0001-12-31T23:59:59Z", None),
            ("0002-01-01T00:00:00Z", Some(-62_104_060_800)),
            ("2026-02-30T00:00:00Z", None),
            ("2026-11-22T17:35:00", None),
            ("2026-11-22T17:35:00Z trailing", None),
        ];
        for (text, want) in cases {
            assert_eq!(unix_seconds(text), want, "{text}");
        }
    }

    #[test]
    fn splits_log_timestamps() {
        assert_eq!(
            split_timestamp("2026-11-22T17:35:00.1Z hello world"),
            (Some("2026-11-22T17:35:00.1Z"), "hello world")
        );
        assert_eq!(split_timestamp("hello world"), (None, "hello world"));
        assert_eq!(
            split_timestamp("2026-11-22T17:35:00Z "),
            (Some("2026-11-22T17:35:00Z"), "")
        );
    }
}
