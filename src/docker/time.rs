//! The engine's RFC 3339 timestamps: to Unix seconds, and split off the front of log lines.

/// Unix seconds of an RFC 3339 time such as `2026-11-22T17:35:00.123456789Z`; `None` for the
/// engine's "never" (`0001-01-01T00:00:00Z`) and for anything that does not parse.
pub(crate) fn unix_seconds(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = number(text.get(0..4)?)?;
    if year <= 1 {
        return None;
    }
    let (month, day) = (number(text.get(5..7)?)?, number(text.get(8..10)?)?);
    let (hour, minute, second) = (
        number(text.get(11..13)?)?,
        number(text.get(14..16)?)?,
        number(text.get(17..19)?)?,
    );
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let offset = zone_offset(text.get(19..)?)?;
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second - offset)
}

/// Splits a leading timestamp (as `docker logs --timestamps` writes it) from the rest of a line.
pub(crate) fn split_timestamp(line: &str) -> (Option<&str>, &str) {
    match line.split_once(' ') {
        Some((stamp, rest)) if unix_seconds(stamp).is_some() => (Some(stamp), rest),
        _ => (None, line),
    }
}

fn number(digits: &str) -> Option<i64> {
    if digits.bytes().all(|c| c.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// Seconds east of UTC from the part after the seconds: `.123Z`, `Z`, `+01:00`, `.5-07:30`.
fn zone_offset(rest: &str) -> Option<i64> {
    let zone = match rest.strip_prefix('.') {
        Some(fraction) => fraction.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => rest,
    };
    if zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = zone.get(1..)?.split_once(':')?;
    Some(sign * (number(hours)? * 3_600 + number(minutes)? * 60))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
