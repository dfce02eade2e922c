//! Xid lines in a kernel log, in each form a user pastes: `dmesg`, `dmesg -T`, `journalctl -k`
//! (short and `-o short-iso`), syslog files and `/dev/kmsg` records. Everything else in the log
//! is ignored.

use std::time::Duration;

use jiff::civil::DateTime;
use jiff::Timestamp;
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use super::pci::PciAddress;

/// What marks a driver's Xid report, wherever the line's prefix ends.
const MARKER: &str = "NVRM: Xid";

/// One Xid the driver logged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct XidLine {
    /// 1-based line of the log it was found on.
    pub line: usize,
    /// The GPU's PCI address, None when the line's address could not be read (`bus_text` has it).
    pub bus: Option<PciAddress>,
    /// The address as the line writes it (`PCI:0000:3a:00`).
    pub bus_text: String,
    pub xid: u32,
    /// The process the driver names (Xid 13, 31, 43... carry `pid=1234, name=python`).
    pub pid: Option<u32>,
    pub process: Option<String>,
    /// The rest of the driver's message, after the number, pid and name.
    pub text: String,
    pub time: LogTime,
}

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

/// Every Xid line in `log`, in order. `year` dates the short syslog/journalctl stamps
/// (`Nov 24 03:14:07`), which leave it out: the current year, normally.
pub fn parse(log: &str, year: i16) -> Vec<XidLine> {
    log.lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let raw = raw.trim_end_matches('\r');
            let at = raw.find(MARKER)?;
            let mut xid = message(&raw[at + MARKER.len()..])?;
            xid.line = i + 1;
            xid.time = prefix_time(&raw[..at], year);
            Some(xid)
        })
        .collect()
}

/// ` (PCI:0000:3a:00): 79, pid=..., name=..., text` after the marker.
fn message(rest: &str) -> Option<XidLine> {
    let rest = rest.trim_start().strip_prefix('(')?;
    let close = rest.find(')')?;
    let bus_text = rest[..close].trim().to_string();
    let rest = rest[close + 1..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let xid: u32 = rest[..digits].parse().ok()?;
    let mut rest = rest[digits..].trim_start();
    rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    let (pid, rest) = field(rest, "pid=");
    let (name, rest) = field(rest, "name=");
    Some(XidLine {
        line: 0,
        bus: PciAddress::parse(&bus_text),
        bus_text,
        xid,
        // pid=0 is the kernel itself (Xid 79 and other hardware reports), no process.
        pid: pid.and_then(|p| p.parse().ok()).filter(|p| *p != 0),
        process: name
            .filter(|n| !n.is_empty() && *n != "<unknown>")
            .map(str::to_string),
        text: rest.trim().to_string(),
        time: LogTime::default(),
    })
}

/// `key=value, rest` -> (value, rest); the text unchanged when it does not start with `key`.
fn field<'a>(text: &'a str, key: &str) -> (Option<&'a str>, &'a str) {
    let Some(after) = text.strip_prefix(key) else {
        return (None, text);
    };
    let (value, rest) = match after.find(", ") {
        Some(end) => (&after[..end], &after[end + 2..]),
        None => (after.trim_end_matches(','), ""),
    };
    (Some(value.trim_matches('\'')), rest)
}

/// The time in what comes before the marker, in whichever format it is.
fn prefix_time(prefix: &str, year: i16) -> LogTime {
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
    if n > 5 {
        let tail = &text[n - 5..];
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

    fn one(line: &str) -> XidLine {
        let found = parse(line, 2026);
        assert_eq!(found.len(), 1, "{line}: {found:?}");
        found.into_iter().next().unwrap()
    }

    fn utc(text: &str) -> Option<WallTime> {
        Some(WallTime::Utc(text.parse().unwrap()))
    }

    fn local(text: &str) -> Option<WallTime> {
        Some(WallTime::Local(text.parse().unwrap()))
    }

    #[test]
    fn dmesg_lines_carry_seconds_since_boot() {
        let x = one("[14328.198504] NVRM: Xid (PCI:0000:0a:00): 31, pid=13332, name=cuda_plot_k32_v, Ch 00000010, intr 00000000. MMU Fault: ENGINE CE2 HUBCLIENT_CE0 faulted @ 0x7f29_5b8c9000. Fault is of type FAULT_PRIV_VIOLATION ACCESS_TYPE_VIRT_READ");
        assert_eq!(x.xid, 31);
        assert_eq!(
            x.bus.map(|b| b.to_string()).as_deref(),
            Some("00000000:0A:00.0")
        );
        assert_eq!(x.bus_text, "PCI:0000:0a:00");
        assert_eq!(
            (x.pid, x.process.as_deref()),
            (Some(13332), Some("cuda_plot_k32_v"))
        );
        assert!(
            x.text.starts_with("Ch 00000010, intr 00000000. MMU Fault"),
            "{}",
            x.text
        );
        assert_eq!(x.time.since_boot, Some(Duration::new(14328, 198_504_000)));
        assert_eq!(x.time.wall, None);
        assert_eq!(x.line, 1);
    }

    #[test]
    fn unknown_pids_and_names_are_none() {
        let x = one("[14370.687545] NVRM: Xid (PCI:0000:0a:00): 62, pid='<unknown>', name=<unknown>, 2023b230 20238a3a 2023e8b6 2023eac4");
        assert_eq!((x.xid, x.pid, x.process), (62, None, None));
        assert_eq!(x.text, "2023b230 20238a3a 2023e8b6 2023eac4");
        let old = one("[ 4909.922970] NVRM: Xid (0000:01:00): 13, 0005 00000000 0000502d 00000104");
        assert_eq!(
            old.bus.map(|b| b.to_string()).as_deref(),
            Some("00000000:01:00.0")
        );
        assert_eq!(
            (old.pid, old.text.as_str()),
            (None, "0005 00000000 0000502d 00000104")
        );
    }

    #[test]
    fn dmesg_t_lines_carry_local_time() {
        let x = one("[Tue Nov 24 03:14:07 2026] NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus.");
        assert_eq!(x.time.wall, local("2026-11-24T03:14:07"));
        assert_eq!(x.time.since_boot, None);
        assert_eq!(
            (x.xid, x.pid, x.text.as_str()),
            (79, None, "GPU has fallen off the bus.")
        );
        let padded =
            one("[Wed Nov  4 09:00:01 2026] NVRM: Xid (PCI:0000:18:00): 48, pid=0, DBE (0x1,0x0)");
        assert_eq!(padded.time.wall, local("2026-11-04T09:00:01"));
    }

    #[test]
    fn journalctl_short_lines_are_local_time_in_the_given_year() {
        let x = one("Sep 09 15:53:19 saturn kernel: NVRM: Xid (PCI:0000:10:00): 79, pid=0, GPU has fallen off the bus.");
        assert_eq!(x.time.wall, local("2026-09-09T15:53:19"));
        // A syslog file: the kernel's own stamp follows the host and tag.
        let s = one("Dec 23 23:30:56 rescue kernel: [  179.437933] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000005 intr 00008000");
        assert_eq!(s.time.wall, local("2026-12-23T23:30:56"));
        assert_eq!(s.time.since_boot, Some(Duration::new(179, 437_933_000)));
    }

    #[test]
    fn iso_stamps_are_instants() {
        let x = one("2026-11-24T03:14:07+0000 gpubox kernel: NVRM: Xid (PCI:0000:9a:00): 94, pid=2211, name=python3, Ch 00000008, errorString CTX SWITCH TIMEOUT");
        assert_eq!(x.time.wall, utc("2026-11-24T03:14:07Z"));
        let y = one("2026-11-24T04:14:07.250000+01:00 gpubox kernel: NVRM: Xid (PCI:0000:9a:00): 94, pid=2211, name=python3, Ch 00000008");
        assert_eq!(y.time.wall, utc("2026-11-24T03:14:07.25Z"));
        let z = one("2026-11-24T03:14:07,000001+00:00 NVRM: Xid (PCI:0000:9a:00): 95, pid=0, x");
        assert_eq!(z.time.wall, utc("2026-11-24T03:14:07.000001Z"));
        let naive = one("2026-11-24T03:14:07 gpubox kernel: NVRM: Xid (PCI:0000:9a:00): 95, x");
        assert_eq!(naive.time.wall, local("2026-11-24T03:14:07"));
    }

    #[test]
    fn kmsg_records_carry_microseconds_since_boot() {
        let x = one(
            "4,1234,5678901,-;NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus.",
        );
        assert_eq!(x.time.since_boot, Some(Duration::from_micros(5_678_901)));
        let caller = one("4,1235,5678999,-,caller=T412;NVRM: Xid (PCI:0000:3a:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)");
        assert_eq!(caller.xid, 154);
        assert!(caller.text.ends_with("(Node Reboot Required)"));
    }

    #[test]
    fn lines_quoted_from_real_machines_read_whole() {
        // dmesg --ctime and a journal grep, as pasted in public bug reports.
        let t = one("[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005");
        assert_eq!(
            (t.xid, t.pid, t.process.as_deref()),
            (109, Some(1797828), Some("pt_main_thread"))
        );
        assert_eq!(
            t.text,
            "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005"
        );
        assert_eq!(t.time.wall, local("2024-08-30T11:43:14"));
        let g = one("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149");
        assert_eq!(
            (g.xid, g.pid, g.time),
            (45, Some(1818990), LogTime::default())
        );
        assert_eq!(g.text, "Ch 00000001 caused by previous Xid 149");
        let n = one("NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)");
        assert_eq!(
            n.bus.map(|b| b.to_string()).as_deref(),
            Some("00000018:01:00.0")
        );
        assert!(n.text.starts_with("RLW_RXPIPE Nonfatal"), "{}", n.text);
    }

    #[test]
    fn a_noisy_log_with_crlf_yields_only_the_xid_lines() {
        let log = "[    0.000000] Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103)\r\n\
            [   12.501123] nvidia: loading out-of-tree module taints kernel.\r\n\
            [   13.000001] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.65.06\r\n\
            \r\n\
            [14328.198496] NVRM: GPU at PCI:0000:0a:00: GPU-760d0170-b7c5-6817-9414-6cc7112645de\r\n\
            [14328.198504] NVRM: Xid (PCI:0000:0a:00): 31, pid=13332, name=python, Ch 00000010\r\n\
            [14372.273528] sched: RT throttling activated\r\n\
            [14380.000000] NVRM: Xid garbled\r\n\
            [14390.000000] NVRM: Xid (PCI:0000:0a:00): abc, not a number\r\n\
            [14400.337883] NVRM: Xid (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, Ch 0000000f\r\n";
        let found = parse(log, 2026);
        let got: Vec<(usize, u32)> = found.iter().map(|x| (x.line, x.xid)).collect();
        assert_eq!(got, vec![(6, 31), (10, 45)]);
        assert_eq!(found[0].text, "Ch 00000010", "no carriage return left");
        assert_eq!(parse("", 2026), Vec::new());
    }

    #[test]
    fn an_xid_the_catalog_lacks_is_still_read_and_a_bad_address_kept_as_written() {
        let x = one("[100.5] NVRM: Xid (PCI:0000:5e:00): 999, pid=0, something new");
        assert_eq!((x.xid, x.text.as_str()), (999, "something new"));
        let odd = one("[100.5] NVRM: Xid (GPU-3): 79, GPU has fallen off the bus.");
        assert_eq!((odd.bus, odd.bus_text.as_str()), (None, "GPU-3"));
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
    }
}
