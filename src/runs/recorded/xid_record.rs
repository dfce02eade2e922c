//! The supervisor's record of the Xid errors its run's GPUs report while the run lives: the live
//! Xid watcher (`gpu::xid_watch`) on the run's own GPU source, each Xid of one of the run's GPUs
//! appended to `xids.jsonl` (0600, one `XidEvent` JSON per line, synced). Nothing is written
//! until one comes; a source without an event API records nothing, and the run never waits.
//! Beside it, `gpu_pids.jsonl`: the run's own processes seen on its GPUs (children of the ranks,
//! as torchrun's workers are), so a kernel-log Xid naming one of them is pinned on the run.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::gpu::xid_watch::{XidEvent, XidUpdate, XidWatcher};
use crate::gpu::{GpuSource, GpuStatic};

/// The run's Xids, in the run's directory.
pub const XIDS_FILE: &str = "xids.jsonl";
/// At most this many Xids are recorded per run: a GPU repeating one Xid must not fill the disk.
pub const MAX_RECORDED: usize = 1000;

/// The run's processes seen on its GPUs, in the run's directory.
pub const PIDS_FILE: &str = "gpu_pids.jsonl";
/// At most this many processes are looked at per run (a bound on memory and /proc reads).
const MAX_PIDS_CHECKED: usize = 4096;

/// One of the run's processes that held a context on one of its GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuPid {
    pub pid: u32,
    pub gpu: u32,
}

/// Notes which processes on the run's GPUs are the run's own: those in its process group.
pub(crate) struct RunPids {
    path: PathBuf,
    group: Option<u32>,
    checked: BTreeSet<u32>,
    file: Option<File>,
}

impl RunPids {
    /// For a run whose ranks lead process group `group` (None: a container run, whose
    /// processes are not in the supervisor's view; nothing is noted).
    pub(crate) fn new(dir: &Path, group: Option<u32>) -> RunPids {
        RunPids {
            path: dir.join(PIDS_FILE),
            group,
            checked: BTreeSet::new(),
            file: None,
        }
    }

    /// Looks at the processes `(gpu, pid)` seen on the run's GPUs; each new one of the run's
    /// group is appended. A pid is looked up in /proc once.
    pub(crate) fn note(&mut self, seen: impl IntoIterator<Item = (u32, u32)>) {
        let Some(group) = self.group else {
            return;
        };
        for (gpu, pid) in seen {
            if self.checked.len() >= MAX_PIDS_CHECKED || !self.checked.insert(pid) {
                continue;
            }
            if crate::host::ProcStat::read(pid).is_some_and(|s| s.pgid == group) {
                if let Err(e) = self.append(GpuPid { pid, gpu }) {
                    errln!(
                        "gpudeck supervisor: {} could not be written: {e}",
                        self.path.display()
                    );
                }
            }
        }
    }

    fn append(&mut self, pid: GpuPid) -> std::io::Result<()> {
        let mut line = serde_json::to_string(&pid).map_err(std::io::Error::other)?;
        line.push('\n');
        if self.file.is_none() {
            self.file = Some(crate::private_files::open_append(&self.path)?);
        }
        match self.file.as_mut() {
            Some(file) => file.write_all(line.as_bytes()),
            None => Ok(()),
        }
    }
}

/// The pids in `dir/gpu_pids.jsonl` (none without it; lines that are not one are skipped).
pub fn read_pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join(PIDS_FILE))
        .unwrap_or_default()
        .lines()
        .take(MAX_PIDS_CHECKED)
        .filter_map(|l| serde_json::from_str::<GpuPid>(l).ok())
        .map(|p| p.pid)
        .collect()
}

/// Starts watching the Xids of the run's GPUs (`run_gpus`, indices in `inventory`) through
/// `source`'s event API; None when there are no GPUs or no event API.
pub(crate) fn start(
    dir: &Path,
    source: &dyn GpuSource,
    inventory: &[GpuStatic],
    run_gpus: &[u32],
) -> Option<XidWatcher> {
    if run_gpus.is_empty() {
        return None;
    }
    let backend = source.xid_backend()?;
    let mut file = XidFile {
        path: dir.join(XIDS_FILE),
        file: None,
        written: 0,
    };
    let gpus = run_gpus.to_vec();
    let sink = Box::new(move |update: XidUpdate| {
        match update {
            // An Xid of a GPU the inventory lacks gets an index past it, and no UUID.
            XidUpdate::Event(event) if gpus.contains(&event.gpu) && !event.uuid.is_empty() => {
                file.append(&event);
            }
            XidUpdate::Event(_) => {}
            XidUpdate::Unavailable(why) => errln!("gpudeck supervisor: {why}"),
        }
        true
    });
    Some(XidWatcher::spawn(backend, inventory, sink))
}

/// `xids.jsonl`, opened at the first Xid.
struct XidFile {
    path: PathBuf,
    file: Option<File>,
    written: usize,
}

impl XidFile {
    /// Appends one line; a failure is said in the supervisor's log and the run goes on.
    fn append(&mut self, event: &XidEvent) {
        errln!(
            "gpudeck supervisor: GPU {} ({}) reported Xid {}",
            event.gpu,
            event.pci_bus_id,
            event.xid
        );
        if self.written == MAX_RECORDED {
            errln!(
                "gpudeck supervisor: {} holds {MAX_RECORDED} Xids; later ones are not recorded",
                self.path.display()
            );
        }
        if self.written >= MAX_RECORDED {
            self.written += 1;
            return;
        }
        if let Err(e) = self.write(event) {
            errln!(
                "gpudeck supervisor: {} could not be written: {e}",
                self.path.display()
            );
        }
    }

    fn write(&mut self, event: &XidEvent) -> std::io::Result<()> {
        let mut line = serde_json::to_string(event).map_err(std::io::Error::other)?;
        line.push('\n');
        if self.file.is_none() {
            self.file = Some(crate::private_files::open_append(&self.path)?);
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        file.write_all(line.as_bytes())?;
        file.sync_data()?;
        self.written += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};

    use gpudeck_sim_model::SimSpec;

    use super::*;
    use crate::gpu::sim::SimSource;

    fn read(dir: &Path) -> Vec<XidEvent> {
        std::fs::read_to_string(dir.join(XIDS_FILE))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("an XidEvent per line"))
            .collect()
    }

    fn source(spec: &str) -> SimSource {
        SimSource::new(SimSpec::parse(spec).expect("a spec"))
    }

    #[test]
    fn only_the_runs_gpus_xids_are_appended_privately() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = source("gpus=4,xid=1:79@0.3;2:13@0.2;1:31@0.4");
        let inventory = src.inventory().unwrap().gpus;
        let watcher = start(dir.path(), &src, &inventory, &[1]).expect("an event API");
        let deadline = Instant::now() + Duration::from_secs(20);
        while read(dir.path()).len() < 2 {
            assert!(Instant::now() < deadline, "no Xids recorded");
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(watcher);
        let events = read(dir.path());
        let got: Vec<(u32, u64)> = events.iter().map(|e| (e.gpu, e.xid)).collect();
        assert_eq!(got, [(1, 79), (1, 31)], "GPU 2's Xid 13 is not the run's");
        assert_eq!(events[0].pci_bus_id, inventory[1].pci_bus_id);
        assert_eq!(events[0].uuid, inventory[1].uuid);
        let mode = std::fs::metadata(dir.path().join(XIDS_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn only_processes_of_the_runs_group_are_noted_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut pids = RunPids::new(dir.path(), Some(pid));
        // The child leads its own group; this test process and init are in others.
        pids.note([(1, pid), (1, std::process::id()), (0, 1), (2, pid)]);
        pids.note([(1, pid)]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(read_pids(dir.path()), [pid]);
        let text = std::fs::read_to_string(dir.path().join(PIDS_FILE)).unwrap();
        assert_eq!(text, format!("{{\"pid\":{pid},\"gpu\":1}}\n"));
        let mode = std::fs::metadata(dir.path().join(PIDS_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        let none = tempfile::tempdir().unwrap();
        let mut container = RunPids::new(none.path(), None);
        container.note([(1, std::process::id())]);
        assert!(read_pids(none.path()).is_empty());
    }

    #[test]
    fn no_gpus_or_no_event_api_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut src = source("gpus=2,xid=0:79@0.1");
        let inventory = src.inventory().unwrap().gpus;
        assert!(start(dir.path(), &src, &inventory, &[]).is_none());
        let mut without = source("gpus=2,unsupported=events,xid=0:79@0.1");
        let inventory = without.inventory().unwrap().gpus;
        let watcher = start(dir.path(), &without, &inventory, &[0]).expect("a watcher");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !watcher.is_finished() {
            assert!(Instant::now() < deadline, "the watch went on");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!dir.path().join(XIDS_FILE).exists());
    }
}
