//! The kernel log's side of a run's Xids: this machine's Xid lines (read once per command, where
//! the log may be read) of the run's GPUs, matched by PCI bus id, which also name the process for
//! application-class Xids; merged with the Xids the run's supervisor recorded, so one Xid seen
//! both ways is one, with the pid the log adds.

use std::cell::RefCell;

use jiff::Timestamp;

use serde::Serialize;

use crate::gpu::xid_watch::XidEvent;
use crate::gpu::GpuSourceChoice;
use crate::health::{kernel_log, live, PciAddress, XidLine};
use crate::runs::record::{RunRecord, RunState};
use crate::runs::store::Run;

/// A recorded Xid and a log line of the same GPU and number this close are the same Xid (the
/// log's times are whole seconds, and a boot-relative time is placed with a boot time in seconds).
pub const SAME_XID_MS: u64 = 2_000;
/// Where the kernel's boot time is (`btime`, seconds since the epoch).
const PROC_STAT: &str = "/proc/stat";

/// Where gpudeck learnt of an Xid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum XidSource {
    /// The driver's event API, watched by the run's supervisor.
    Live,
    /// The kernel log (it names the process for application-class Xids).
    KernelLog,
}

/// One Xid reported by one of a run's GPUs, before it is judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XidSighting {
    pub gpu: u32,
    pub pci_bus_id: String,
    pub xid: u64,
    pub at_ms: u64,
    /// The process the driver named, when it did (kernel log lines of Xid 13, 31, 43...).
    pub pid: Option<u32>,
    pub process: Option<String>,
    pub source: XidSource,
}

impl From<XidEvent> for XidSighting {
    fn from(e: XidEvent) -> XidSighting {
        XidSighting {
            gpu: e.gpu,
            pci_bus_id: e.pci_bus_id,
            xid: e.xid,
            at_ms: e.at_unix_ms,
            pid: None,
            process: None,
            source: XidSource::Live,
        }
    }
}

/// This machine's kernel-log Xid lines, and the bus ids of the GPUs of each source looked up.
pub struct KernelXids {
    lines: Vec<XidLine>,
    boot: Option<Timestamp>,
    /// Per GPU source opened to place a run's GPUs: (UUID, bus id) of each of its GPUs.
    inventories: RefCell<Vec<(GpuSourceChoice, Vec<UuidBus>)>>,
}

/// A GPU's UUID and PCI bus id, as its source lists it.
type UuidBus = (String, String);

impl KernelXids {
    /// This machine's kernel log since boot, when it may be read and holds an Xid; else None
    /// (the recorded Xids stand alone, and `gpudeck doctor` says why the log is unreadable).
    pub fn read_live() -> Option<KernelXids> {
        let log = live::read().ok()?;
        let xids = KernelXids::from_text(&log.text, this_boot());
        (!xids.lines.is_empty()).then_some(xids)
    }

    /// The Xid lines of `text`, boot-relative times placed with `boot`.
    pub fn from_text(text: &str, boot: Option<Timestamp>) -> KernelXids {
        let year = jiff::tz::Offset::UTC.to_datetime(Timestamp::now()).year();
        KernelXids {
            lines: kernel_log::parse(text, year),
            boot,
            inventories: RefCell::new(Vec::new()),
        }
    }

    /// The Xids the log holds of `run`'s GPUs, merged with those its supervisor recorded
    /// (`recorded`). A simulated run's GPUs are not this machine's: its log is not read for them.
    pub fn sightings_of(&self, run: &RunRecord, recorded: Vec<XidEvent>) -> Vec<XidSighting> {
        let buses = self.buses_of(run, &recorded);
        let live = recorded.into_iter().map(XidSighting::from).collect();
        merge(live, self.sightings(&buses))
    }

    /// The log's Xids of the GPUs `buses` (gpudeck's index, PCI address) whose time is known.
    pub fn sightings(&self, buses: &[(u32, String, PciAddress)]) -> Vec<XidSighting> {
        self.lines
            .iter()
            .filter_map(|line| {
                let (gpu, bus_id, _) = buses.iter().find(|(_, _, b)| Some(*b) == line.bus)?;
                let at = line.time.instant(self.boot)?;
                Some(XidSighting {
                    gpu: *gpu,
                    pci_bus_id: bus_id.clone(),
                    xid: u64::from(line.xid),
                    at_ms: u64::try_from(at.as_millisecond()).ok()?,
                    pid: line.pid,
                    process: line.process.clone(),
                    source: XidSource::KernelLog,
                })
            })
            .collect()
    }

    /// The run's GPUs with their bus ids: from its recorded Xids where they name them, else
    /// from its GPU source (opened once per command, only for a run that needs it).
    fn buses_of(&self, run: &RunRecord, recorded: &[XidEvent]) -> Vec<(u32, String, PciAddress)> {
        if matches!(run.gpu_source, Some(GpuSourceChoice::Demo) | None) {
            return Vec::new();
        }
        run.gpus
            .iter()
            .filter_map(|gpu| {
                let bus_id = match recorded.iter().find(|e| e.gpu == gpu.index) {
                    Some(e) => e.pci_bus_id.clone(),
                    None => self.bus_in_source(run.gpu_source.as_ref()?, &gpu.uuid)?,
                };
                let bus = PciAddress::parse(&bus_id)?;
                Some((gpu.index, bus_id, bus))
            })
            .collect()
    }

    fn bus_in_source(&self, choice: &GpuSourceChoice, uuid: &str) -> Option<String> {
        let mut cache = self.inventories.borrow_mut();
        if !cache.iter().any(|(c, _)| c == choice) {
            let gpus = choice
                .open()
                .and_then(|mut source| source.inventory())
                .map(|inv| {
                    inv.gpus
                        .into_iter()
                        .map(|g| (g.uuid, g.pci_bus_id))
                        .collect()
                })
                .unwrap_or_default();
            cache.push((choice.clone(), gpus));
        }
        cache
            .iter()
            .find(|(c, _)| c == choice)?
            .1
            .iter()
            .find(|(u, _)| u.eq_ignore_ascii_case(uuid))
            .map(|(_, bus)| bus.clone())
    }
}

/// Whether the kernel log could tell more about `run`: it did not succeed, its GPUs are this
/// machine's (NVML, not the simulation), and it lived since `boot` (this machine's boot: the
/// log holds nothing older), so an old failed run does not cost every listing a log read.
pub fn wants_kernel_log(run: &Run, boot: Option<Timestamp>) -> bool {
    let since_boot = match (run.record.ended_ms, boot) {
        (Some(ended), Some(boot)) => i64::try_from(ended).is_ok_and(|e| e >= boot.as_millisecond()),
        _ => true,
    };
    since_boot
        && !matches!(run.state(), RunState::Succeeded | RunState::Starting)
        && matches!(run.record.gpu_source, Some(GpuSourceChoice::Nvml { .. }))
}

/// This machine's boot time, from /proc/stat.
pub fn this_boot() -> Option<Timestamp> {
    std::fs::read_to_string(PROC_STAT)
        .ok()
        .and_then(|stat| boot_time(&stat))
}

/// The recorded Xids, each given the pid and process of a log line of the same GPU and number
/// within [`SAME_XID_MS`]; then the log's lines that match none of them.
pub fn merge(mut live: Vec<XidSighting>, log: Vec<XidSighting>) -> Vec<XidSighting> {
    let mut used = vec![false; live.len()];
    let mut extra = Vec::new();
    for line in log {
        let same = live.iter().enumerate().position(|(i, l)| {
            !used[i]
                && l.gpu == line.gpu
                && l.xid == line.xid
                && l.at_ms.abs_diff(line.at_ms) <= SAME_XID_MS
        });
        match same {
            Some(i) => {
                used[i] = true;
                live[i].pid = line.pid;
                live[i].process = line.process;
            }
            None => extra.push(line),
        }
    }
    live.extend(extra);
    live
}

/// `btime 1764000000` in /proc/stat.
fn boot_time(stat: &str) -> Option<Timestamp> {
    let seconds: i64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Timestamp::from_second(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-24 03:14:00 UTC; the machine booted 1000 s before.
    const T0: u64 = 1_795_490_040_000;

    fn boot() -> Option<Timestamp> {
        Timestamp::from_second((T0 / 1000) as i64 - 1000).ok()
    }

    fn live(gpu: u32, xid: u64, at_s: u64) -> XidSighting {
        XidSighting {
            gpu,
            pci_bus_id: "00000000:3A:00.0".into(),
            xid,
            at_ms: T0 + at_s * 1000,
            pid: None,
            process: None,
            source: XidSource::Live,
        }
    }

    fn buses() -> Vec<(u32, String, PciAddress)> {
        let id = "00000000:3A:00.0".to_string();
        let bus = PciAddress::parse(&id).unwrap();
        vec![(2, id, bus)]
    }

    const LOG: &str = "\
[ 1005.100000] NVRM: Xid (PCI:0000:3a:00): 13, pid=4242, name=python, Graphics Exception\n\
[ 1006.000000] usb 1-1: new high-speed USB device\n\
[ 1007.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n\
[ 1009.500000] NVRM: Xid (PCI:0000:3a:00): 43, pid=77, name=other, Ch 00000008\n";

    #[test]
    fn only_the_runs_gpus_lines_become_sightings_placed_with_the_boot_time() {
        let log = KernelXids::from_text(LOG, boot());
        let got = log.sightings(&buses());
        let brief: Vec<(u32, u64, u64, Option<u32>)> = got
            .iter()
            .map(|s| (s.gpu, s.xid, s.at_ms - T0, s.pid))
            .collect();
        assert_eq!(
            brief,
            [(2, 13, 5_100, Some(4242)), (2, 43, 9_500, Some(77))]
        );
        assert_eq!(got[0].process.as_deref(), Some("python"));
        assert_eq!(got[0].source, XidSource::KernelLog);
        assert!(
            KernelXids::from_text(LOG, None)
                .sightings(&buses())
                .is_empty(),
            "boot-relative times cannot be placed without the boot time"
        );
    }

    #[test]
    fn a_recorded_xid_takes_the_pid_of_its_log_line_and_other_lines_are_added() {
        let log = KernelXids::from_text(LOG, boot()).sightings(&buses());
        // Xid 13 recorded at +6 s: the line at +5.1 s is the same one. No live Xid 43.
        let merged = merge(vec![live(2, 13, 6), live(2, 79, 8)], log);
        let brief: Vec<(u64, Option<u32>, XidSource)> =
            merged.iter().map(|s| (s.xid, s.pid, s.source)).collect();
        assert_eq!(
            brief,
            [
                (13, Some(4242), XidSource::Live),
                (79, None, XidSource::Live),
                (43, Some(77), XidSource::KernelLog),
            ]
        );
        // Too far apart to be one Xid: both stay.
        let log = KernelXids::from_text(LOG, boot()).sightings(&buses());
        let apart = merge(vec![live(2, 13, 9)], log);
        assert_eq!(apart.len(), 3);
        assert_eq!(apart[0].pid, None);
    }

    #[test]
    fn the_boot_time_is_read_from_proc_stat() {
        assert_eq!(
            boot_time("cpu  1 2 3\nbtime 1764000000\nprocesses 5\n"),
            Timestamp::from_second(1_764_000_000).ok()
        );
        assert_eq!(boot_time("cpu 1\n"), None);
    }
}
