//! Xid errors tied to the run they hit: the Xids its supervisor recorded from its GPUs
//! (`xids.jsonl`, and where it was read the kernel log's: `xid_log`) within the run's life, each
//! with what the Xid catalog says and whom it points at: the machine (a hardware class), the
//! run's own program (an application-class Xid naming one of its pids), another program, or
//! nobody known. Only runs that did not succeed (failed, stopped, lost, or still running:
//! stalled) are attributed.

use std::path::Path;

use serde::Serialize;

use crate::gpu::xid_watch::XidEvent;
use crate::health::{Severity, XidCatalog, XidClass};
use crate::runs::clock;
use crate::runs::record::{RunRecord, RunState};
use crate::runs::recorded::summary::RunSummary;
use crate::runs::recorded::xid_log::KernelXids;
pub use crate::runs::recorded::xid_log::{XidSighting, XidSource};
use crate::runs::recorded::xid_record::{read_pids, MAX_RECORDED, XIDS_FILE};
use crate::runs::store::Run;

/// Whom an Xid points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Blame {
    /// A hardware, firmware or driver class: the machine, not the run's code.
    Machine,
    /// An application-class Xid naming one of the run's own processes.
    Run,
    /// An application-class Xid naming a process that is not the run's.
    OtherProcess,
    /// An application-class Xid that names no process, or an Xid the catalog does not know.
    Unknown,
}

/// One Xid that hit a run, judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct XidHit {
    pub xid: u64,
    pub gpu: u32,
    pub pci_bus_id: String,
    pub at_ms: u64,
    pub source: XidSource,
    pub pid: Option<u32>,
    pub process: Option<String>,
    /// The catalog's mnemonic; null for an Xid it does not know.
    pub name: Option<String>,
    pub class: Option<XidClass>,
    pub severity: Option<Severity>,
    pub meaning: String,
    /// What to do, in a sentence.
    pub action: String,
    pub attribution: Blame,
    /// Seconds from the Xid to the run's end (its first failed rank's exit, else the run's end
    /// or last evidence); negative when it came after; null while the run runs.
    pub seconds_before_end: Option<f64>,
    /// The whole finding in a sentence, as `gpudeck runs` prints it.
    pub summary: String,
}

/// What a run's Xids are measured against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunWindow {
    pub started_ms: u64,
    /// The end of the window: the run's end, its last evidence when lost, now while it runs.
    pub until_ms: u64,
    /// The moment "before ..." counts to, and its words ("rank 1 died"); None while it runs.
    pub end: Option<(u64, String)>,
    /// The pids of the run's ranks, and of its processes seen on its GPUs (`gpu_pids.jsonl`).
    pub pids: Vec<u32>,
}

impl RunWindow {
    /// The window of `record` in `state`; `last_ms` is its end as a reader knows it (the
    /// recorded end, the last evidence of a lost run, or now). None for a run that succeeded or
    /// has not started: no Xid is pinned on those.
    pub fn of(record: &RunRecord, state: RunState, last_ms: u64) -> Option<RunWindow> {
        let started_ms = record.started_ms?;
        let failed_rank = record
            .first_failed_rank
            .and_then(|r| record.ranks.get(r))
            .and_then(|r| r.ended_ms.map(|at| (at, format!("rank {} died", r.rank))));
        let end = match state {
            RunState::Succeeded | RunState::Starting => return None,
            RunState::Running => None,
            RunState::Failed => failed_rank.or(Some((last_ms, "the run failed".into()))),
            RunState::Stopped => Some((last_ms, "the run was stopped".into())),
            RunState::Lost => Some((last_ms, "the run's last sign of life".into())),
        };
        Some(RunWindow {
            started_ms,
            until_ms: last_ms.max(started_ms),
            end,
            pids: record.ranks.iter().filter_map(|r| r.pid).collect(),
        })
    }
}

/// The Xids in `dir/xids.jsonl`, and a warning naming the file for lines that are not Xids
/// (a torn last line after a crash). No file: none.
pub fn read_recorded(dir: &Path) -> (Vec<XidEvent>, Option<String>) {
    let path = dir.join(XIDS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), None),
        Err(e) => return (Vec::new(), Some(format!("{}: {e}", path.display()))),
    };
    let mut bad = 0usize;
    let events = text
        .lines()
        .take(MAX_RECORDED)
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let parsed = serde_json::from_str(l).ok();
            bad += usize::from(parsed.is_none());
            parsed
        })
        .collect();
    let warning = (bad > 0).then(|| {
        format!(
            "{}: {} not an Xid and skipped",
            path.display(),
            crate::units::plural(bad, "line")
        )
    });
    (events, warning)
}

/// What runs' Xids are judged with: the catalog, and this machine's kernel log where it was read
/// (the command line reads it; the dashboard goes by the recorded Xids alone).
#[derive(Clone, Copy)]
pub struct XidJudge<'a> {
    pub catalog: &'a XidCatalog,
    pub kernel: Option<&'a KernelXids>,
}

/// The Xids that hit `run` (its recorded ones, and the kernel log's of its GPUs, inside its
/// window), judged, and a warning about its `xids.jsonl`. `summary` places a lost run's end at
/// its last sample.
pub fn hits_of(
    run: &Run,
    summary: Option<&RunSummary>,
    now_ms: u64,
    judge: XidJudge<'_>,
) -> (Vec<XidHit>, Option<String>) {
    let state = run.state();
    let last_ms = match (run.record.ended_ms, state) {
        (Some(ended), _) => ended,
        (None, RunState::Lost) => run
            .last_evidence_ms(summary.map(|s| s.ended_ms))
            .unwrap_or(now_ms),
        (None, _) => now_ms,
    };
    let Some(mut window) = RunWindow::of(&run.record, state, last_ms) else {
        return (Vec::new(), None);
    };
    window.pids.extend(read_pids(&run.dir));
    let (events, warning) = read_recorded(&run.dir);
    let sightings: Vec<XidSighting> = match judge.kernel {
        Some(kernel) => kernel.sightings_of(&run.record, events),
        None => events.into_iter().map(XidSighting::from).collect(),
    };
    (attribute(&window, &sightings, judge.catalog), warning)
}

/// How far outside a run's life a kernel-log Xid may seem to be and still be the run's: the
/// log's times are whole seconds.
const LOG_SLACK_MS: u64 = 1_000;

/// The sightings inside `window`, judged with `catalog`, oldest first.
pub fn attribute(
    window: &RunWindow,
    sightings: &[XidSighting],
    catalog: &XidCatalog,
) -> Vec<XidHit> {
    let mut hits: Vec<XidHit> = sightings
        .iter()
        .filter(|s| {
            let slack = match s.source {
                XidSource::Live => 0,
                XidSource::KernelLog => LOG_SLACK_MS,
            };
            (window.started_ms.saturating_sub(slack)..=window.until_ms.saturating_add(slack))
                .contains(&s.at_ms)
        })
        .map(|s| judge(window, s, catalog))
        .collect();
    hits.sort_by_key(|h| h.at_ms);
    hits
}

fn judge(window: &RunWindow, s: &XidSighting, catalog: &XidCatalog) -> XidHit {
    let info = u32::try_from(s.xid).ok().and_then(|x| catalog.get(x));
    let attribution = match (info.map(|i| i.class), s.pid) {
        (Some(class), _) if class.is_hardware() => Blame::Machine,
        (Some(_), Some(pid)) if window.pids.contains(&pid) => Blame::Run,
        (Some(_), Some(_)) => Blame::OtherProcess,
        _ => Blame::Unknown,
    };
    let meaning = info.map_or_else(
        || "not in gpudeck's Xid catalog".to_string(),
        |i| i.meaning.clone(),
    );
    let action = info.map_or_else(
        || {
            "Look it up in NVIDIA's Xid catalog and read the driver's message in the kernel log."
                .to_string()
        },
        |i| i.action_text.clone(),
    );
    let seconds_before_end = window
        .end
        .as_ref()
        .map(|(end, _)| (*end as f64 - s.at_ms as f64) / 1000.0);
    let summary = sentence(window, s, &meaning, attribution, info.is_some());
    XidHit {
        xid: s.xid,
        gpu: s.gpu,
        pci_bus_id: s.pci_bus_id.clone(),
        at_ms: s.at_ms,
        source: s.source,
        pid: s.pid,
        process: s.process.clone(),
        name: info.map(|i| i.name.clone()),
        class: info.map(|i| i.class),
        severity: info.map(|i| i.severity_for("")),
        meaning,
        action,
        attribution,
        seconds_before_end,
        summary,
    }
}

/// "GPU 2 reported Xid 79 (the GPU has fallen off the bus) at 03:14:07 UTC, 40s before rank 1
/// died: the machine, not your code."
fn sentence(
    window: &RunWindow,
    s: &XidSighting,
    meaning: &str,
    blame: Blame,
    known: bool,
) -> String {
    let short = meaning.split(':').next().unwrap_or(meaning).trim();
    let at = crate::units::timestamp(s.at_ms).strftime("%H:%M:%S UTC");
    let when = match &window.end {
        None => "while the run runs".to_string(),
        Some((end, what)) if *end >= s.at_ms => {
            format!("{} before {what}", clock::duration(end - s.at_ms))
        }
        Some((end, what)) => format!("{} after {what}", clock::duration(s.at_ms - end)),
    };
    let process = match (s.pid, &s.process) {
        (Some(pid), Some(name)) => format!("pid {pid}, {name}"),
        (Some(pid), None) => format!("pid {pid}"),
        _ => String::new(),
    };
    let verdict = match blame {
        Blame::Machine => "the machine, not your code".to_string(),
        Blame::Run => format!("your program faulted on the GPU ({process})"),
        Blame::OtherProcess => format!("another program faulted on it ({process}), not this run"),
        Blame::Unknown if known => "a program on the GPU faulted; the event does not say which \
             (the kernel log names its pid)"
            .to_string(),
        Blame::Unknown => "an Xid gpudeck cannot judge; read the driver's message in the kernel \
             log"
        .to_string(),
    };
    format!(
        "GPU {} reported Xid {} ({short}) at {at}, {when}: {verdict}.",
        s.gpu, s.xid
    )
}

/// The hit that says most about the run: the first the machine is blamed for, else the first
/// blamed on the run, else the first.
pub fn telling(hits: &[XidHit]) -> Option<&XidHit> {
    hits.iter()
        .find(|h| h.attribution == Blame::Machine)
        .or_else(|| hits.iter().find(|h| h.attribution == Blame::Run))
        .or_else(|| hits.first())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::GpuSourceChoice;
    use crate::runs::record::RankRecord;
    use crate::runs::recorded::xid_log::KernelXids;

    /// 2026-11-24 03:14:00 UTC.
    const T0: u64 = 1_795_490_040_000;

    fn rank(rank: usize, pid: u32, ended_ms: Option<u64>) -> RankRecord {
        RankRecord {
            rank,
            argv: vec!["python".into()],
            env: Default::default(),
            gpus: vec![rank as u32],
            pid: Some(pid),
            exit_code: ended_ms.map(|_| 1),
            ended_ms,
        }
    }

    fn failed_run() -> RunRecord {
        let mut r = RunRecord::starting(
            "r".into(),
            "r".into(),
            crate::runs::spec::Launcher::Torchrun,
            "/".into(),
            "h".into(),
            T0,
        );
        r.started_ms = Some(T0);
        r.ranks = vec![
            rank(0, 100, Some(T0 + 50_000)),
            rank(1, 101, Some(T0 + 47_000)),
        ];
        r.first_failed_rank = Some(1);
        r.ended_ms = Some(T0 + 52_000);
        r
    }

    fn seen(xid: u64, at_s: u64, pid: Option<u32>) -> XidSighting {
        XidSighting {
            gpu: 2,
            pci_bus_id: "00000000:3A:00.0".into(),
            xid,
            at_ms: T0 + at_s * 1000,
            pid,
            process: pid.map(|_| "python".into()),
            source: if pid.is_some() {
                XidSource::KernelLog
            } else {
                XidSource::Live
            },
        }
    }

    fn hits(record: &RunRecord, state: RunState, sightings: &[XidSighting]) -> Vec<XidHit> {
        let last = record.ended_ms.unwrap_or(T0 + 60_000);
        let window = RunWindow::of(record, state, last).expect("a window");
        attribute(&window, sightings, &XidCatalog::builtin())
    }

    #[test]
    fn a_hardware_xid_before_a_rank_died_is_the_machines() {
        let got = hits(&failed_run(), RunState::Failed, &[seen(79, 7, None)]);
        assert_eq!(got.len(), 1);
        let h = &got[0];
        assert_eq!(h.attribution, Blame::Machine);
        assert_eq!(
            h.seconds_before_end,
            Some(40.0),
            "rank 1's exit, not the run's end"
        );
        assert_eq!(h.class, Some(XidClass::BusPower));
        assert_eq!(h.severity, Some(Severity::Fail));
        assert!(h.action.starts_with("Reboot the machine"), "{}", h.action);
        assert_eq!(
            h.summary,
            "GPU 2 reported Xid 79 (the GPU has fallen off the bus) at 03:14:07 UTC, 40s before \
             rank 1 died: the machine, not your code."
        );
    }

    #[test]
    fn an_application_xid_is_the_runs_only_when_it_names_a_run_pid() {
        let run = failed_run();
        let got = hits(
            &run,
            RunState::Failed,
            &[
                seen(13, 5, Some(101)),
                seen(43, 6, Some(999)),
                seen(31, 7, None),
            ],
        );
        let blame: Vec<Blame> = got.iter().map(|h| h.attribution).collect();
        assert_eq!(blame, [Blame::Run, Blame::OtherProcess, Blame::Unknown]);
        assert!(
            got[0]
                .summary
                .ends_with("your program faulted on the GPU (pid 101, python)."),
            "{}",
            got[0].summary
        );
        assert!(got[1].summary.contains("(pid 999, python), not this run"));
        assert!(
            got[2]
                .summary
                .ends_with("the event does not say which (the kernel log names its pid)."),
            "{}",
            got[2].summary
        );
        assert_eq!(telling(&got).map(|h| h.xid), Some(13));
    }

    #[test]
    fn xids_outside_the_runs_life_are_ignored() {
        let run = failed_run();
        // Before the start, after the end (52 s), and one between rank 1's death and the end.
        let got = hits(
            &run,
            RunState::Failed,
            &[seen(79, 0, None), seen(48, 60, None), seen(94, 49, None)],
        );
        let kept: Vec<u64> = got.iter().map(|h| h.xid).collect();
        assert_eq!(kept, [79, 94]);
        assert_eq!(got[1].seconds_before_end, Some(-2.0));
        assert!(
            got[1].summary.contains("2s after rank 1 died"),
            "{}",
            got[1].summary
        );
        let early = XidSighting {
            at_ms: T0 - 1,
            ..seen(79, 0, None)
        };
        assert!(hits(&run, RunState::Failed, &[early]).is_empty());
    }

    #[test]
    fn succeeded_and_unstarted_runs_are_not_attributed_and_running_ones_have_no_end() {
        let run = failed_run();
        assert!(RunWindow::of(&run, RunState::Succeeded, T0 + 52_000).is_none());
        let mut starting = run.clone();
        starting.started_ms = None;
        assert!(RunWindow::of(&starting, RunState::Starting, T0).is_none());
        let got = hits(&run, RunState::Running, &[seen(79, 7, None)]);
        assert_eq!(got[0].seconds_before_end, None);
        assert!(
            got[0].summary.contains("while the run runs"),
            "{}",
            got[0].summary
        );
        let lost = hits(&run, RunState::Lost, &[seen(79, 7, None)]);
        assert!(
            lost[0]
                .summary
                .contains("45s before the run's last sign of life"),
            "{}",
            lost[0].summary
        );
    }

    #[test]
    fn an_unknown_xid_is_reported_as_unknown() {
        let got = hits(&failed_run(), RunState::Failed, &[seen(4242, 10, None)]);
        assert_eq!(got[0].attribution, Blame::Unknown);
        assert_eq!(got[0].class, None);
        assert!(got[0].summary.contains("(not in gpudeck's Xid catalog)"));
        assert!(got[0].summary.contains("an Xid gpudeck cannot judge"));
    }

    #[test]
    fn recorded_xids_are_read_and_a_torn_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_recorded(dir.path()), (Vec::new(), None));
        let event = XidEvent {
            gpu: 1,
            pci_bus_id: "00000000:30:00.0".into(),
            uuid: "GPU-1".into(),
            xid: 79,
            at_unix_ms: T0,
        };
        let line = serde_json::to_string(&event).unwrap();
        std::fs::write(dir.path().join(XIDS_FILE), format!("{line}\n{{\"gpu\":1,")).unwrap();
        let (events, warning) = read_recorded(dir.path());
        assert_eq!(events, [event]);
        assert!(warning.is_some_and(|w| w.contains("xids.jsonl: 1 line not an Xid")));
    }

    /// A kernel log: GPU 2 (bus 3A) reports Xid 13 naming pid 4242 and Xid 43 naming pid 77;
    /// another GPU falls off the bus. The machine booted 1000 s before T0.
    const KERNEL_LOG: &str = "\
[ 1005.100000] NVRM: Xid (PCI:0000:3a:00): 13, pid=4242, name=python, Graphics Exception\n\
[ 1007.000000] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n\
[ 1009.500000] NVRM: Xid (PCI:0000:3a:00): 43, pid=77, name=other, Ch 00000008\n";

    fn boot() -> Option<jiff::Timestamp> {
        jiff::Timestamp::from_second((T0 / 1000) as i64 - 1000).ok()
    }

    /// A failed run on GPU 2 (bus 3A) of NVML from `library`, rank 0 pid 4242, that ended 20 s
    /// in; its supervisor recorded `recorded`.
    fn nvml_run(dir: &std::path::Path, recorded: &[XidEvent]) -> Run {
        let mut r = RunRecord::starting(
            "r".into(),
            "r".into(),
            crate::runs::spec::Launcher::Single,
            "/".into(),
            "h".into(),
            T0,
        );
        r.gpus = vec![crate::runs::record::RunGpu {
            index: 2,
            uuid: "GPU-2".into(),
            name: "x".into(),
        }];
        r.ranks = vec![crate::runs::record::RankRecord {
            rank: 0,
            argv: vec!["python".into()],
            env: Default::default(),
            gpus: vec![2],
            pid: Some(4242),
            exit_code: Some(1),
            ended_ms: Some(T0 + 20_000),
        }];
        r.state = RunState::Failed;
        r.first_failed_rank = Some(0);
        r.started_ms = Some(T0);
        r.ended_ms = Some(T0 + 20_000);
        r.gpu_source = Some(GpuSourceChoice::Nvml {
            library: Some("/nonexistent/libnvidia-ml.so.1".into()),
        });
        let lines: Vec<String> = recorded
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        std::fs::write(dir.join("xids.jsonl"), lines.join("\n")).unwrap();
        Run {
            dir: dir.to_path_buf(),
            record: r,
        }
    }

    #[test]
    fn an_application_xid_the_log_pins_on_a_rank_pid_is_the_runs() {
        let dir = tempfile::tempdir().unwrap();
        let event = XidEvent {
            gpu: 2,
            pci_bus_id: "00000000:3A:00.0".into(),
            uuid: "GPU-2".into(),
            xid: 13,
            at_unix_ms: T0 + 6_000,
        };
        let run = nvml_run(dir.path(), &[event]);
        let booted = |ms: u64| jiff::Timestamp::from_millisecond(ms as i64).ok();
        assert!(crate::runs::recorded::xid_log::wants_kernel_log(
            &run,
            booted(T0 - 1)
        ));
        assert!(
            !crate::runs::recorded::xid_log::wants_kernel_log(&run, booted(T0 + 30_000)),
            "it ended before this boot: the log cannot hold its Xids"
        );
        let kernel = KernelXids::from_text(KERNEL_LOG, boot());
        let catalog = crate::health::XidCatalog::builtin();
        let judge = XidJudge {
            catalog: &catalog,
            kernel: Some(&kernel),
        };
        let (hits, warning) = hits_of(&run, None, T0 + 60_000, judge);
        assert_eq!(warning, None);
        let brief: Vec<(u64, Blame, Option<u32>)> =
            hits.iter().map(|h| (h.xid, h.attribution, h.pid)).collect();
        assert_eq!(
            brief,
            [
                (13, Blame::Run, Some(4242)),
                (43, Blame::OtherProcess, Some(77))
            ]
        );
        assert!(
            hits[0]
                .summary
                .ends_with("your program faulted on the GPU (pid 4242, python)."),
            "{}",
            hits[0].summary
        );
        // A process the supervisor saw on the run's GPUs in its group (a rank's child) is the
        // run's too.
        std::fs::write(
            dir.path()
                .join(crate::runs::recorded::xid_record::PIDS_FILE),
            "{\"pid\":77,\"gpu\":2}\n",
        )
        .unwrap();
        let (hits, _) = hits_of(&run, None, T0 + 60_000, judge);
        assert_eq!(hits[1].attribution, Blame::Run);
        // Without the log, the recorded Xid names no process.
        let judge = XidJudge {
            catalog: &catalog,
            kernel: None,
        };
        let (hits, _) = hits_of(&run, None, T0 + 60_000, judge);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].attribution, Blame::Unknown);
    }

    #[test]
    fn a_run_whose_gpus_cannot_be_placed_gets_nothing_from_the_log() {
        // No recorded Xid names its bus, and its NVML cannot be opened.
        let dir = tempfile::tempdir().unwrap();
        let run = nvml_run(dir.path(), &[]);
        let kernel = KernelXids::from_text(KERNEL_LOG, boot());
        let catalog = crate::health::XidCatalog::builtin();
        let judge = XidJudge {
            catalog: &catalog,
            kernel: Some(&kernel),
        };
        assert!(hits_of(&run, None, T0 + 60_000, judge).0.is_empty());
        let mut demo = run.clone();
        demo.record.gpu_source = Some(GpuSourceChoice::Demo);
        assert!(
            !crate::runs::recorded::xid_log::wants_kernel_log(&demo, None),
            "the simulation's GPUs are not in the log"
        );
    }
}
