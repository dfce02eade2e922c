//! Xid lines summed up per GPU and Xid number, with what the catalog says about each: what the
//! doctor reports, and what a run's attribution can reuse.

use jiff::Timestamp;
use serde::Serialize;

use super::kernel_log::{LogTime, WallTime, XidLine};
use super::pci::PciAddress;
use super::xid::{Severity, XidAction, XidCatalog, XidClass};

/// One Xid number as seen on one GPU: how often, when, by which processes, what it means.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct XidSeen {
    /// The GPU as gpudeck numbers it; None when no GPU here has the bus id.
    pub gpu: Option<u32>,
    /// NVML's form (`00000000:3A:00.0`), or as the log wrote it when it could not be read.
    pub bus_id: String,
    pub xid: u32,
    /// The catalog's mnemonic; None for an Xid the catalog does not know.
    pub name: Option<String>,
    pub meaning: Option<String>,
    pub class: Option<XidClass>,
    /// The worst of its occurrences (an unknown Xid is a warning).
    pub severity: Severity,
    pub action: Option<XidAction>,
    pub action_text: Option<String>,
    /// Occurrences: lines of one process within a second of the previous one count once (the
    /// driver writes several lines for one Xid 13).
    pub count: usize,
    /// The lines the log holds for it.
    pub lines: usize,
    pub first: LogTime,
    pub last: LogTime,
    /// The processes the lines name, each once, in order (the first [`MAX_PROCESSES`]).
    pub processes: Vec<XidProcess>,
    /// The driver's text of the last occurrence.
    pub text: String,
}

/// A process an Xid line names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct XidProcess {
    pub pid: Option<u32>,
    pub name: Option<String>,
}

/// The processes kept for one Xid on one GPU; more are not named (a storm of short-lived
/// processes, or a hostile log, would otherwise make each line a search of all of them).
pub const MAX_PROCESSES: usize = 64;

/// Lines closer than this count as one occurrence.
const EVENT_GAP: std::time::Duration = std::time::Duration::from_secs(1);

/// Groups `lines` by GPU and Xid number, in the order each first appeared. `gpu_of` names the
/// GPU at a bus id; `boot` places boot-relative times (a live log's) in UTC.
pub fn summarise(
    lines: &[XidLine],
    catalog: &XidCatalog,
    gpu_of: impl Fn(PciAddress) -> Option<u32>,
    boot: Option<Timestamp>,
) -> Vec<XidSeen> {
    let mut seen: Vec<XidSeen> = Vec::new();
    // Where each (bus, Xid) is in `seen`: a log of many buses (a hostile one) stays linear.
    let mut index: std::collections::HashMap<(String, u32), usize> =
        std::collections::HashMap::new();
    for line in lines {
        let bus_id = line
            .bus
            .map_or_else(|| line.bus_text.clone(), |b| b.to_string());
        let gpu = line.bus.and_then(&gpu_of);
        let time = placed(line.time, boot);
        let info = catalog.get(line.xid);
        let severity = info.map_or(Severity::Warn, |i| i.severity_for(&line.text));
        let process = XidProcess {
            pid: line.pid,
            name: line.process.clone(),
        };
        let named = process.pid.is_some() || process.name.is_some();
        match index
            .get(&(bus_id.clone(), line.xid))
            .and_then(|&i| seen.get_mut(i))
        {
            Some(s) => {
                let same_process = !named || s.processes.last() == Some(&process);
                if !(same_process && time.within(&s.last, EVENT_GAP)) {
                    s.count += 1;
                }
                s.lines += 1;
                s.last = time;
                s.severity = s.severity.max(severity);
                s.text.clone_from(&line.text);
                if named && s.processes.len() < MAX_PROCESSES && !s.processes.contains(&process) {
                    s.processes.push(process);
                }
            }
            None => {
                index.insert((bus_id.clone(), line.xid), seen.len());
                seen.push(XidSeen {
                    gpu,
                    bus_id,
                    xid: line.xid,
                    name: info.map(|i| i.name.clone()),
                    meaning: info.map(|i| i.meaning.clone()),
                    class: info.map(|i| i.class),
                    severity,
                    action: info.map(|i| i.action),
                    action_text: info.map(|i| i.action_text.clone()),
                    count: 1,
                    lines: 1,
                    first: time,
                    last: time,
                    processes: if named { vec![process] } else { Vec::new() },
                    text: line.text.clone(),
                })
            }
        }
    }
    seen
}

/// The time with its instant filled in where the boot time places it.
fn placed(time: LogTime, boot: Option<Timestamp>) -> LogTime {
    match (time.wall, time.instant(boot)) {
        (None, Some(t)) => LogTime {
            wall: Some(WallTime::Utc(t)),
            ..time
        },
        _ => time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::kernel_log::parse;

    const LOG: &str = "\
[100.000000] NVRM: Xid (PCI:0000:3a:00): 13, pid=1234, name=python, Graphics SM Warp Exception
[100.000100] NVRM: Xid (PCI:0000:3a:00): 13, pid=1234, name=python, Graphics Exception: ESR 0x50
[160.000000] NVRM: Xid (PCI:0000:3a:00): 13, pid=99, name=train.py, Graphics SM Warp Exception
[200.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.
[300.000000] NVRM: Xid (PCI:0000:5e:00): 999, pid=0, a new kind
";

    fn gpu_of(bus: PciAddress) -> Option<u32> {
        match bus.bus {
            0x18 => Some(0),
            0x3a => Some(2),
            _ => None,
        }
    }

    #[test]
    fn lines_are_grouped_by_gpu_and_xid_with_counts_processes_and_times() {
        let boot: Timestamp = "2026-11-24T00:00:00Z".parse().unwrap();
        let seen = summarise(
            &parse(LOG, 2026),
            &XidCatalog::builtin(),
            gpu_of,
            Some(boot),
        );
        let keys: Vec<(Option<u32>, u32, usize)> =
            seen.iter().map(|s| (s.gpu, s.xid, s.count)).collect();
        assert_eq!(
            keys,
            vec![(Some(2), 13, 2), (Some(0), 79, 1), (None, 999, 1)]
        );
        // The first two lines are one Xid 13: the driver writes several lines for one.
        assert_eq!(seen[0].lines, 3);
        let app = &seen[0];
        assert_eq!(app.bus_id, "00000000:3A:00.0");
        assert_eq!(app.severity, Severity::Warn);
        let names: Vec<(Option<u32>, Option<&str>)> = app
            .processes
            .iter()
            .map(|p| (p.pid, p.name.as_deref()))
            .collect();
        assert_eq!(
            names,
            vec![(Some(1234), Some("python")), (Some(99), Some("train.py"))]
        );
        assert_eq!(app.first.describe(None), "2026-11-24 00:01:40 UTC");
        assert_eq!(app.last.describe(None), "2026-11-24 00:02:40 UTC");
        assert_eq!(app.text, "Graphics SM Warp Exception");
        assert_eq!(seen[1].severity, Severity::Fail);
        assert_eq!(seen[1].action, Some(XidAction::Reboot));
        assert!(seen[1].processes.is_empty(), "pid=0 is no process");
        let unknown = &seen[2];
        assert_eq!(
            (unknown.name.as_deref(), unknown.severity),
            (None, Severity::Warn)
        );
        assert_eq!(
            (unknown.bus_id.as_str(), unknown.text.as_str()),
            ("00000000:5E:00.0", "a new kind")
        );
    }

    #[test]
    fn without_a_boot_time_boot_relative_times_stay_so() {
        let seen = summarise(&parse(LOG, 2026), &XidCatalog::builtin(), gpu_of, None);
        assert_eq!(seen[1].first.describe(None), "200.0 s after boot");
        let json = serde_json::to_value(&seen[1]).unwrap();
        assert_eq!(json["class"], "bus-power");
        assert_eq!(json["first"]["since_boot_s"], 200.0);
        assert_eq!(json["gpu"], 0);
    }
}
