//! Xid lines in a kernel log, in each form a user pastes: `dmesg`, `dmesg -T`, `journalctl -k`
//! (short and `-o short-iso`), syslog files and `/dev/kmsg` records. Everything else in the log
//! is ignored.

use serde::Serialize;

use super::log_time::prefix_time;
pub use super::log_time::{LogTime, WallTime};
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
/// A line longer than this is cut here and the rest of it skipped: the kernel writes a record
/// of at most 1 KiB (printk's `PRINTKRB_RECORD_MAX`), so a longer line is not the kernel's, and
/// a log of one 200 MB line must not be held whole.
pub const MAX_LINE_BYTES: usize = 4096;

/// A process name is the kernel's `comm`: at most 15 bytes (`TASK_COMM_LEN` is 16 with its NUL).
/// Longer is not the kernel's; it is cut here.
pub const MAX_NAME_CHARS: usize = 16;

/// The bus as written (`PCI:0000:3a:00` is 14), cut here.
pub const MAX_BUS_TEXT_CHARS: usize = 32;

/// The driver's text after the number, pid and name, cut here.
pub const MAX_TEXT_CHARS: usize = 512;

/// The Xid lines a saved or live log keeps for the doctor: the last ones, which say how the GPU
/// is now; a log with more (an Xid storm, or a file made to exhaust memory) has the earlier
/// ones counted. About 30 MB at most with every field at its cap.
pub const MAX_XID_LINES: usize = 50_000;

/// How many lines from the start of a log are looked at to tell whether it is a kernel log.
const LOOKS_LINES: usize = 10_000;

/// Every Xid line in `log`, in order. `year` dates the short syslog/journalctl stamps
/// (`Nov 24 03:14:07`), which leave it out: the current year, normally.
pub fn parse(log: &str, year: i16) -> Vec<XidLine> {
    log.lines()
        .enumerate()
        .filter_map(|(i, raw)| xid_line(cut(raw), i + 1, year))
        .collect()
}

/// `raw` cut to [`MAX_LINE_BYTES`] at a character's boundary.
fn cut(raw: &str) -> &str {
    if raw.len() <= MAX_LINE_BYTES {
        return raw;
    }
    let mut end = MAX_LINE_BYTES;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    &raw[..end]
}

/// The Xid on line `number` (`raw`, without its `\n`), if it holds one.
fn xid_line(raw: &str, number: usize, year: i16) -> Option<XidLine> {
    let raw = raw.trim_end_matches('\r');
    let at = raw.find(MARKER)?;
    let mut xid = message(&raw[at + MARKER.len()..])?;
    xid.line = number;
    xid.time = prefix_time(&raw[..at], year);
    Some(xid)
}

/// Whether `log` reads as a kernel log in a form `parse` knows: some line begins with the time
/// stamp of `dmesg`, `dmesg -T`, journalctl, syslog or a `/dev/kmsg` record. A file with no Xid
/// that is not a kernel log at all (the wrong file, a binary) must not read as "no Xids".
pub fn looks_like_kernel_log(log: &str, year: i16) -> bool {
    log.lines()
        .take(LOOKS_LINES)
        .any(|raw| kernel_line(cut(raw), year))
}

/// Whether `raw` begins with a kernel log's time stamp.
fn kernel_line(raw: &str, year: i16) -> bool {
    let line = raw.trim_end_matches('\r').trim_start();
    let kmsg = line
        .find(';')
        .is_some_and(|end| prefix_time(&line[..=end], year).since_boot.is_some());
    let dmesg = line.starts_with('[')
        && line.find(']').is_some_and(|end| {
            let t = prefix_time(&line[..=end], year);
            t.since_boot.is_some() || t.wall.is_some()
        });
    let words: Vec<&str> = line.split_whitespace().take(3).collect();
    kmsg || dmesg || prefix_time(&words.join(" "), year).wall.is_some()
}

/// A log read as a stream, line by line: what the doctor needs of it, in memory that does not
/// grow with the log.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadLog {
    /// The last [`MAX_XID_LINES`] Xid lines, in order.
    pub xids: Vec<XidLine>,
    /// The Xid lines before those, counted and not kept.
    pub earlier_xids: usize,
    /// Whether it reads as a kernel log ([`looks_like_kernel_log`]).
    pub looks_like_kernel_log: bool,
    /// Whether it holds nothing but white space.
    pub blank: bool,
}

/// Reads `log` line by line: each line cut to [`MAX_LINE_BYTES`], each Xid's fields to their
/// caps, the last `keep` Xid lines kept. Bytes that are not UTF-8 are read as U+FFFD.
pub fn read(mut log: impl std::io::BufRead, year: i16, keep: usize) -> std::io::Result<ReadLog> {
    let mut read = ReadLog {
        blank: true,
        ..ReadLog::default()
    };
    let mut kept = std::collections::VecDeque::new();
    let mut line = Vec::with_capacity(256);
    let mut number = 0;
    while next_line(&mut log, &mut line)? {
        number += 1;
        let text = String::from_utf8_lossy(&line);
        if read.blank && !text.trim().is_empty() {
            read.blank = false;
        }
        if number <= LOOKS_LINES && !read.looks_like_kernel_log {
            read.looks_like_kernel_log = kernel_line(&text, year);
        }
        if let Some(xid) = xid_line(&text, number, year) {
            if kept.len() == keep {
                kept.pop_front();
                read.earlier_xids += 1;
            }
            if keep > 0 {
                kept.push_back(xid);
            } else {
                read.earlier_xids += 1;
            }
        }
    }
    read.xids = kept.into();
    Ok(read)
}

/// The next line of `log` into `line` (without its `\n`, cut to [`MAX_LINE_BYTES`], the rest
/// of it read past); false at the end.
fn next_line(log: &mut impl std::io::BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    let mut any = false;
    loop {
        let buf = match log.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let (part, used, ended) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], at + 1, true),
            None => (buf, buf.len(), false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        log.consume(used);
        if ended {
            return Ok(true);
        }
    }
}

/// `text` cut to `max` characters, with `…` where it was cut.
fn capped(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// ` (PCI:0000:3a:00): 79, pid=..., name=..., text` after the marker.
fn message(rest: &str) -> Option<XidLine> {
    let rest = rest.trim_start().strip_prefix('(')?;
    let close = rest.find(')')?;
    let bus_text = capped(rest[..close].trim(), MAX_BUS_TEXT_CHARS);
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
            .map(|n| capped(n, MAX_NAME_CHARS)),
        text: capped(rest.trim(), MAX_TEXT_CHARS),
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
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn kernel_logs_of_every_form_look_like_one_and_other_text_does_not() {
        for log in [
            "[    0.000000] Linux version 6.1.0-18-amd64\n",
            "[Tue Nov 24 03:14:07 2026] nvidia: loading out-of-tree module\n",
            "Nov 24 03:14:07 gpubox kernel: Linux version 6.1.0\n",
            "2026-11-24T03:14:07+0000 gpubox kernel: Linux version 6.1.0\n",
            "6,1,0,-;Linux version 6.1.0-18-amd64\r\n",
            "some text first\n[ 12.5] usb 1-1: new device\n",
        ] {
            assert!(looks_like_kernel_log(log, 2026), "{log:?}");
        }
        for text in [
            "",
            "hello world\nthis is a note\n",
            "model,loss\n1,0.5\n",
            "\u{fffd}\u{fffd}[not a time] x;y\n",
        ] {
            assert!(!looks_like_kernel_log(text, 2026), "{text:?}");
        }
    }

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

    /// A log of one very long line, read through a small buffer so that the line spans many.
    fn read_small(log: &[u8], keep: usize) -> ReadLog {
        read(std::io::BufReader::with_capacity(64, log), 2026, keep).unwrap()
    }

    #[test]
    fn a_long_line_is_cut_and_each_field_capped() {
        let name = "n".repeat(100_000);
        let text = "t".repeat(100_000);
        let log = format!(
            "[1.0] NVRM: Xid (PCI:0000:18:00{}): 13, pid=7, name={name}, {text}\n\
             [2.0] NVRM: Xid (PCI:0000:18:00): 79, pid=0, fell off\n",
            "b".repeat(100)
        );
        let read = read_small(log.as_bytes(), 10);
        assert_eq!(
            read.xids.len(),
            2,
            "{:?}",
            read.xids.iter().map(|x| x.line).collect::<Vec<_>>()
        );
        let first = &read.xids[0];
        assert_eq!(
            first.process.as_deref().map(|n| n.chars().count()),
            Some(MAX_NAME_CHARS + 1)
        );
        assert!(first.process.as_deref().unwrap().ends_with('…'));
        assert_eq!(first.bus_text.chars().count(), MAX_BUS_TEXT_CHARS + 1);
        // The line was cut at 4 KiB, before the name's end: no text is left after it.
        assert!(first.text.chars().count() <= MAX_TEXT_CHARS + 1);
        let second = &read.xids[1];
        assert_eq!(
            (second.line, second.xid, second.text.as_str()),
            (2, 79, "fell off")
        );
        assert!(read.looks_like_kernel_log && !read.blank);
        // The same through `parse`.
        let parsed = parse(&log, 2026);
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].process, first.process);
    }

    #[test]
    fn only_the_last_xid_lines_are_kept_and_the_earlier_counted() {
        let log: String = (0..1000)
            .map(|i| {
                format!(
                    "[{i}.0] NVRM: Xid (PCI:0000:18:00): 13, pid={}, x\nnoise\n",
                    i + 1
                )
            })
            .collect();
        let read = read_small(log.as_bytes(), 100);
        assert_eq!((read.xids.len(), read.earlier_xids), (100, 900));
        assert_eq!(read.xids[0].pid, Some(901));
        assert_eq!(read.xids[99].line, 1999);
        let all = read_small(log.as_bytes(), 5000);
        assert_eq!((all.xids, all.earlier_xids), (parse(&log, 2026), 0));
        // No line end at the end, bad bytes, blank files.
        let odd = read_small(
            b"\xff\xfe\n[1.0] NVRM: Xid (PCI:0000:18:00): 79, pid=0, y",
            10,
        );
        assert_eq!(odd.xids.len(), 1);
        assert_eq!(odd.xids[0].line, 2);
        assert!(read_small(b" \n\n\t\n", 10).blank);
        assert!(!read_small(b"hello\n", 10).looks_like_kernel_log);
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

    /// Property tests: any text, and real Xid lines with mistakes in them, parse without a panic
    /// into lines that exist in the log.
    mod fuzz {
        use proptest::prelude::*;

        use super::*;
        use crate::fuzz;

        const LINES: [&str; 5] = [
            "[14328.198504] NVRM: Xid (PCI:0000:0a:00): 31, pid=13332, name=cuda_plot_k32_v, Ch 00000010, intr 00000000.",
            "[Tue Nov 24 03:14:07 2026] NVRM: Xid (PCI:0000:3a:00): 79, pid=0, GPU has fallen off the bus.",
            "Sep 09 15:53:19 saturn kernel: [ 179.437933] NVRM: Xid (PCI:0000:10:00): 79, pid=0, GPU has fallen off the bus.",
            "2026-11-24T03:14:07+0000 gpubox kernel: NVRM: Xid (PCI:0000:9a:00): 94, pid=2211, name=python3, Ch 00000008",
            "4,1235,5678999,-,caller=T412;NVRM: Xid (PCI:0000:3a:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        ];

        fn check(text: &str) {
            let lines = text.lines().count();
            for x in parse(text, 2026) {
                assert!(x.line >= 1 && x.line <= lines, "{x:?}");
                let _ = x.time.describe(None);
            }
        }

        proptest! {
            #![proptest_config(fuzz::config())]

            #[test]
            fn any_text_as_a_kernel_log(text in fuzz::any_text()) {
                check(&text);
            }

            #[test]
            fn an_xid_line_with_mistakes(text in fuzz::near_miss_line(&LINES)) {
                check(&text);
            }
        }
    }
}
