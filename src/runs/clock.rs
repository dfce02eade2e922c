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
    crate::units::timestamp(ms)
        .strftime("%Y%m%d-%H%M%S")
        .to_string()
}

/// `YYYY-mm-ddTHH:MM:SSZ`.
pub(crate) fn rfc3339_utc(ms: u64) -> String {
    crate::units::timestamp(ms)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `3h04m`, `12m05s` or `42s`: see [`crate::units::run_duration`].
pub(crate) fn duration(ms: u64) -> String {
    crate::units::run_duration(ms)
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
        // Milliseconds are cut, not rounded: the text sorts with the moment.
        assert_eq!(rfc3339_utc(1_795_368_900_999), "2026-11-22T17:35:00Z");
    }

    #[test]
    fn formats_durations() {
        assert_eq!(duration(42_900), "42s");
        assert_eq!(duration(725_000), "12m05s");
        assert_eq!(duration(11_040_000), "3h04m");
    }
}
