//! When a kernel-log line was written, read from its prefix in each format (`dmesg`, `dmesg -T`,
//! journalctl, syslog, `/dev/kmsg`), and shown to people.

use std::time::Duration;

use jiff::civil::DateTime;
use jiff::Timestamp;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// When a line was logged, as far as its format tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogTime {
    /// Time since boot (`dmesg`, `/dev/kmsg`, and syslog lines that carry the kernel's stamp).
    pub since_boot: Option<Duration>,
    /// Wall-clock time (`dmesg -T`, journalctl, syslog).
    pub wall: Option<WallTime>,
}

/// A wall-clock time: with its offset known (an instant), or the machine's local time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WallTime {
    Utc(Timestamp),
    /// Local time of the machine that wrote the log; its time zone is not in the line.
    Local(DateTime),
}

impl LogTime {
    /// The instant, when the line has one or its boot-relative time can be placed with `boot`.
    pub fn instant(&self, boot: Option<Timestamp>) -> Option<Timestamp> {
        if let Some(WallTime::Utc(t)) = self.wall {
            return Some(t);
        }
        let since = jiff::SignedDuration::try_from(self.since_boot?).ok()?;
        boot?.checked_add(since).ok()
    }

    /// Whether `other` is at most `gap` away: both known in the same terms (boot-relative,
    /// instants or local times) and close. Unknown times are never close.
    pub fn within(&self, other: &LogTime, gap: Duration) -> bool {
        let gap = jiff::SignedDuration::try_from(gap).unwrap_or(jiff::SignedDuration::MAX);
        if let (Some(a), Some(b)) = (self.since_boot, other.since_boot) {
            return a.abs_diff(b) <= gap.unsigned_abs();
        }
        match (self.wall, other.wall) {
            (Some(WallTime::Utc(a)), Some(WallTime::Utc(b))) => a.duration_until(b).abs() <= gap,
            (Some(WallTime::Local(a)), Some(WallTime::Local(b))) => {
                a.duration_until(b).abs() <= gap
            }
            _ => false,
        }
    }

    /// For people: `2026-11-24 03:14:07 UTC`, `Nov 24 03:14:07 (local time)` or
    /// `12345.7 s after boot`.
    pub fn describe(&self, boot: Option<Timestamp>) -> String {
        if let Some(t) = self.instant(boot) {
            return t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string();
        }
        if let Some(WallTime::Local(dt)) = self.wall {
            return dt.strftime("%Y-%m-%d %H:%M:%S (local time)").to_string();
        }
        match self.since_boot {
            Some(d) => format!("{:.1} s after boot", d.as_secs_f64()),
            None => "at a time the log does not say".to_string(),
        }
    }
}

/// `{since_boot_s, utc, local}`, each null when the line does not tell.
impl Serialize for LogTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("LogTime", 3)?;
        s.serialize_field("since_boot_s", &self.since_boot.map(|d| d.as_secs_f64()))?;
        let (utc, local) = match self.wall {
            Some(WallTime::Utc(t)) => (Some(t.to_string()), None),
            Some(WallTime::Local(dt)) => (None, Some(dt.to_string())),
            None => (None, None),
        };
        s.serialize_field("utc", &utc)?;
        s.serialize_field("local", &local)?;
        s.end()
    }
}
/// The time in what comes before the marker, in whichever format it is.
pub(super) fn prefix_time(prefix: &str, year: i16) -> LogTime {
    let prefix = prefix.trim();
    if let Some(since_boot) = kmsg_time(prefix) {
        return LogTime {
            since_boot: Some(since_boot),
            wall: None,
        };
    }
    let mut time = LogTime::default();
    let mut rest = prefix;
    if let Some(inner) = bracketed(prefix) {
        // `dmesg`: [12345.678901]; `dmesg -T`: [Tue Nov 24 03:14:07 2026].
        time.since_boot = seconds(inner);
        if time.since_boot.is_none() {
            time.wall = ctime(inner).map(WallTime::Local);
        }
        return time;
    }
    let words: Vec<&str> = prefix.split_whitespace().collect();
    if let Some(first) = words.first() {
        if let Some(wall) = iso(first) {
            time.wall = Some(wall);
            rest = &prefix[first.len()..];
        } else if words.len() >= 3 {
            let stamp = format!("{year} {} {} {}", words[0], words[1], words[2]);
            if let Ok(dt) = DateTime::strptime("%Y %b %d %H:%M:%S", &stamp) {
                time.wall = Some(WallTime::Local(dt));
            }
        }
    }
    // A syslog or journal line may carry the kernel's own stamp too: `kernel: [ 179.437933]`.
    if let Some(open) = rest.find('[') {
        time.since_boot = bracketed(&rest[open..]).and_then(seconds);
    }
    time
}

/// `4,1234,5678901,-;` (priority, sequence, microseconds since boot, flags[, more]).
fn kmsg_time(prefix: &str) -> Option<Duration> {
    let fields = prefix.strip_suffix(';')?;
    let mut parts = fields.split(',');
    numeric(parts.next())?;
    numeric(parts.next())?;
    let micros: u64 = numeric(parts.next())?.parse().ok()?;
    parts.next()?;
    Some(Duration::from_micros(micros))
}

fn numeric(part: Option<&str>) -> Option<&str> {
    part.filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The text inside a leading `[...]`.
fn bracketed(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('[')?;
    Some(inner[..inner.find(']')?].trim())
}

/// `12345.678901` seconds.
fn seconds(text: &str) -> Option<Duration> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: u32 = format!("{frac:0<9}").parse().ok()?;
    Some(Duration::new(whole.parse().ok()?, nanos))
}

/// `Tue Nov 24 03:14:07 2026` (dmesg -T), with the day possibly padded by a space.
fn ctime(text: &str) -> Option<DateTime> {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    DateTime::strptime("%a %b %d %H:%M:%S %Y", &words).ok()
}

/// `2026-11-24T03:14:07+0000` (short-iso), `...07.123456+00:00` (syslog, short-iso-precise),
/// `...07,123456+00:00` (dmesg --time-format iso), or without an offset (local time).
fn iso(word: &str) -> Option<WallTime> {
    let bytes = word.as_bytes();
    if bytes.len() < 19 || bytes[4] != b'-' || bytes[10] != b'T' {
        return None;
    }
    let mut text = word.replace(',', ".");
    // ±HHMM -> ±HH:MM, as RFC 3339 writes it.
    let n = text.len();
    if let Some(tail) = text.get(n.saturating_sub(5)..).filter(|t| t.len() == 5) {
        let sign = tail.as_bytes()[0];
        if (sign == b'+' || sign == b'-') && tail[1..].bytes().all(|b| b.is_ascii_digit()) {
            text.insert(n - 2, ':');
        }
    }
    if let Ok(t) = text.parse::<Timestamp>() {
        return Some(WallTime::Utc(t));
    }
    text.parse::<DateTime>().ok().map(WallTime::Local)
}
#[cfg(test)]
mod tests {
    use super::*;

    fn local(text: &str) -> Option<WallTime> {
        Some(WallTime::Local(text.parse().unwrap()))
    }

    #[test]
    fn times_are_described_and_placed_with_the_boot_time() {
        let boot: Timestamp = "2026-11-24T00:00:00Z".parse().unwrap();
        let since = LogTime {
            since_boot: Some(Duration::from_secs(90)),
            wall: None,
        };
        assert_eq!(
            since.instant(Some(boot)),
            "2026-11-24T00:01:30Z".parse().ok()
        );
        assert_eq!(since.describe(Some(boot)), "2026-11-24 00:01:30 UTC");
        assert_eq!(since.describe(None), "90.0 s after boot");
        let loc = LogTime {
            since_boot: None,
            wall: local("2026-11-24T03:14:07"),
        };
        assert_eq!(loc.instant(Some(boot)), None);
        assert_eq!(loc.describe(None), "2026-11-24 03:14:07 (local time)");
        let json = serde_json::to_value(since).unwrap();
        assert_eq!(json["since_boot_s"], 90.0);
        assert!(json["utc"].is_null());
        assert_eq!(
            LogTime::default().describe(None),
            "at a time the log does not say"
        );
        let later = LogTime {
            since_boot: Some(Duration::from_millis(90_400)),
            wall: None,
        };
        assert!(since.within(&later, Duration::from_secs(1)));
        assert!(!since.within(&later, Duration::from_millis(100)));
        let loc2 = LogTime {
            since_boot: None,
            wall: local("2026-11-24T03:14:08"),
        };
        assert!(loc.within(&loc2, Duration::from_secs(1)));
        assert!(
            !loc.within(&since, Duration::from_secs(1000)),
            "different terms"
        );
        assert!(!LogTime::default().within(&LogTime::default(), Duration::from_secs(1)));
    }
}
