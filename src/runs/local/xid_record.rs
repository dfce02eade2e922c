//! The supervisor's record of the Xid errors its run's GPUs report while the run lives: the live
//! Xid watcher (`gpu::xid_watch`) on the run's own GPU source, each Xid of one of the run's GPUs
//! appended to `xids.jsonl` (0600, one `XidEvent` JSON per line, synced). Nothing is written
//! until one comes; a source without an event API records nothing, and the run never waits.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::gpu::xid_watch::{XidEvent, XidUpdate, XidWatcher};
use crate::gpu::{GpuSource, GpuStatic};

/// The run's Xids, in the run's directory.
pub const XIDS_FILE: &str = "xids.jsonl";
/// At most this many Xids are recorded per run: a GPU repeating one Xid must not fill the disk.
pub const MAX_RECORDED: usize = 1000;

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
        watcher.stop();
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
