//! The kernel log the doctor reads Xids from: a file given with `--kernel-log`, this machine's
//! live log (through the `HostEnv` seam), or none (simulated GPUs), gathered into plain facts.

use std::path::Path;

use serde::Serialize;

use super::host_env::HostEnv;
use crate::gpu::report::GpuReport;
use crate::gpu::SourceKind;
use crate::health::kernel_log::{ReadLog, MAX_XID_LINES};
use crate::health::{kernel_log, XidLine};

/// Where the kernel's boot time is (`btime`, seconds since the epoch).
pub const PROC_STAT: &str = "/proc/stat";

/// Which kernel log to read.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelLogChoice {
    /// This machine's, since boot, when it may be read.
    Live,
    /// A saved log (`--kernel-log FILE`): where it came from, and what was read of it.
    Saved { source: String, log: ReadLog },
}

impl KernelLogChoice {
    /// A saved log, read from `reader` as a stream: memory does not grow with its size.
    pub fn saved(source: String, reader: impl std::io::BufRead) -> std::io::Result<Self> {
        let log = kernel_log::read(reader, this_year(), MAX_XID_LINES)?;
        Ok(KernelLogChoice::Saved { source, log })
    }
}

/// The year now in UTC, for the log stamps that leave it out.
fn this_year() -> i16 {
    jiff::tz::Offset::UTC
        .to_datetime(jiff::Timestamp::now())
        .year()
}

/// The Xids the kernel log holds, or why it was not read.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum KernelLogFacts {
    Read {
        /// `/dev/kmsg`, `journalctl -k -b`, or the file's path.
        source: String,
        /// This machine's log since boot (rather than a saved file).
        live: bool,
        /// The boot time (seconds since the epoch), to place a live log's boot-relative times.
        boot_time_s: Option<i64>,
        /// The last [`MAX_XID_LINES`] Xid lines.
        xids: Vec<XidLine>,
        /// The Xid lines before those, counted and not judged.
        earlier_xids: usize,
    },
    /// The live log could not be read: why, for each place tried.
    Unreadable { tried: Vec<String> },
    /// Not read, and why.
    NotRead { why: String },
}

impl KernelLogFacts {
    /// The boot time of a live log.
    pub fn boot_time(&self) -> Option<jiff::Timestamp> {
        match self {
            KernelLogFacts::Read {
                boot_time_s: Some(s),
                live: true,
                ..
            } => jiff::Timestamp::from_second(*s).ok(),
            _ => None,
        }
    }
}

/// Reads the chosen log. The live log is skipped for simulated GPUs (`--demo`): the host's
/// kernel log is not about them.
pub fn gather(choice: &KernelLogChoice, gpu: &GpuReport, env: &dyn HostEnv) -> KernelLogFacts {
    match choice {
        KernelLogChoice::Saved { source, log } => {
            if log.xids.is_empty() && log.earlier_xids == 0 && !log.looks_like_kernel_log {
                let what = if log.blank {
                    "is empty".to_string()
                } else {
                    "does not look like a kernel log: no line begins with the time stamp of \
                     dmesg, journalctl, syslog or /dev/kmsg"
                        .to_string()
                };
                return KernelLogFacts::NotRead {
                    why: format!(
                        "{source} {what}, so it tells nothing about Xid errors; pass the output \
                         of `sudo dmesg` or `journalctl -k`"
                    ),
                };
            }
            KernelLogFacts::Read {
                source: source.clone(),
                live: false,
                boot_time_s: None,
                xids: log.xids.clone(),
                earlier_xids: log.earlier_xids,
            }
        }
        KernelLogChoice::Live
            if gpu.system.as_ref().map(|s| s.source) == Some(SourceKind::Demo) =>
        {
            KernelLogFacts::NotRead {
                why: "simulated GPUs (--demo): this machine's kernel log is not about them; \
                      pass --kernel-log FILE to read a saved one"
                    .into(),
            }
        }
        KernelLogChoice::Live => match env.kernel_log() {
            Ok(log) => {
                // Read from memory: no error but none of the stream's.
                let read = kernel_log::read(log.text.as_bytes(), this_year(), MAX_XID_LINES)
                    .unwrap_or_default();
                KernelLogFacts::Read {
                    source: log.source,
                    live: true,
                    boot_time_s: env
                        .read_file(Path::new(PROC_STAT))
                        .as_deref()
                        .and_then(boot_time),
                    xids: read.xids,
                    earlier_xids: read.earlier_xids,
                }
            }
            Err(tried) => KernelLogFacts::Unreadable { tried },
        },
    }
}

/// `btime 1764000000` in /proc/stat.
fn boot_time(stat: &str) -> Option<i64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::host_env::FakeEnv;
    use crate::doctor::testkit::healthy;

    const LINE: &str =
        "4,1234,5678901,-;NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n";

    #[test]
    fn the_live_log_is_read_with_the_boot_time() {
        let env = FakeEnv::default()
            .with_kernel_log("/dev/kmsg", LINE)
            .file(PROC_STAT, "cpu  1 2 3\nbtime 1764000000\nprocesses 5\n");
        let facts = gather(&KernelLogChoice::Live, &healthy().gpu, &env);
        match &facts {
            KernelLogFacts::Read {
                source,
                live,
                boot_time_s,
                xids,
                ..
            } => {
                assert_eq!((source.as_str(), *live), ("/dev/kmsg", true));
                assert_eq!(*boot_time_s, Some(1_764_000_000));
                assert_eq!(xids.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            facts.boot_time().map(|t| t.as_second()),
            Some(1_764_000_000)
        );
    }

    #[test]
    fn a_saved_file_that_is_no_kernel_log_is_not_read_as_one_without_xids() {
        let env = FakeEnv::default();
        for (text, words) in [
            ("model,loss\n1,0.5\n", "does not look like a kernel log"),
            ("", "is empty"),
        ] {
            let saved = KernelLogChoice::saved("notes.txt".into(), text.as_bytes()).unwrap();
            match gather(&saved, &healthy().gpu, &env) {
                KernelLogFacts::NotRead { why } => {
                    assert!(why.starts_with("notes.txt "), "{why}");
                    assert!(why.contains(words), "{why}");
                    assert!(why.contains("sudo dmesg"), "{why}");
                }
                other => panic!("{other:?}"),
            }
        }
        // A kernel log without Xids is read, and says none.
        let quiet = KernelLogChoice::saved(
            "kernel.log".into(),
            "[    0.000000] Linux version 6.1.0-18-amd64\n".as_bytes(),
        )
        .unwrap();
        assert!(matches!(
            gather(&quiet, &healthy().gpu, &env),
            KernelLogFacts::Read { ref xids, .. } if xids.is_empty()
        ));
    }

    #[test]
    fn a_denied_log_says_why_and_demo_gpus_skip_it() {
        let env = FakeEnv::default().with_kernel_log_denied(&["/dev/kmsg: permission denied"]);
        assert_eq!(
            gather(&KernelLogChoice::Live, &healthy().gpu, &env),
            KernelLogFacts::Unreadable {
                tried: vec!["/dev/kmsg: permission denied".into()]
            }
        );
        let mut demo = healthy().gpu;
        if let Some(s) = demo.system.as_mut() {
            s.source = SourceKind::Demo;
        }
        assert!(matches!(
            gather(&KernelLogChoice::Live, &demo, &env),
            KernelLogFacts::NotRead { .. }
        ));
        // A saved log is read whatever the GPUs, and its times are not placed on this boot.
        let saved = KernelLogChoice::saved("kernel.log".into(), LINE.as_bytes()).unwrap();
        let facts = gather(&saved, &demo, &env);
        assert!(
            matches!(&facts, KernelLogFacts::Read { live: false, xids, .. } if xids.len() == 1)
        );
        assert_eq!(facts.boot_time(), None);
    }
}
