//! Wall-clock times for run records: Unix milliseconds, UTC text, and durations as people read
//! them; and waiting, with a deadline, for something to come true.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `YYYYmmdd-HHMMSS` in UTC: sorts as text in time order, which run ids rely on.
pub(crate) fn compact_utc(ms: u64) -> String {
    let (date, (h, m, s)) = civil(ms);
    format!("{:04}{:02}{:02}-{h:02}{m:02}{s:02}", date.0, date.1, date.2)
}

/// `YYYY-mm-ddTHH:MM:SSZ`.
pub(crate) fn rfc3339_utc(ms: u64) -> String {
    let (date, (h, m, s)) = civil(ms);
    format!(
        "{:04}-{:02}-{:02}T{h:02}:{m:02}:{s:02}Z",
        date.0, date.1, date.2
    )
}

/// `3h04m`, `12m05s` or `42s`: see [`crate::units::run_duration`].
pub(crate) fn duration(ms: u64) -> String {
    crate::units::run_duration(ms)
}

fn civil(ms: u64) -> ((i64, u32, u32), (u64, u64, u64)) {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    (civil_from_days(days), (rem / 3600, rem / 60 % 60, rem % 60))
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// How often [`wait_for`] looks again.
const POLL: Duration = Duration::from_millis(50);

/// Polls `done` until it holds or `limit` passes; whether it held.
pub(crate) fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_times() {
        assert_eq!(compact_utc(0), "19700101-000000");
        assert_eq!(rfc3339_utc(1_795_368_900_000), "2026-11-22T17:35:00Z");
        assert_eq!(compact_utc(951_782_400_000 + 3_723_000), "20000229-010203");
    }

    #[test]
    fn formats_durations() {
        assert_eq!(duration(42_900), "42s");
        assert_eq!(duration(725_000), "12m05s");
        assert_eq!(duration(11_040_000), "3h04m");
    }
}
