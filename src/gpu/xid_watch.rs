//! Live Xid errors: a thread of its own waits on the GPU backend's event API (a blocking wait,
//! whose timeout only lets it be stopped) and hands out each Xid with the GPU named as gpudeck
//! names it. GPUs are matched by PCI bus id, since a GPU that fell off the bus (Xid 79) no
//! longer answers by UUID.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::types::GpuStatic;
use crate::health::PciAddress;

/// How long one wait blocks before the watcher looks whether it was asked to stop: long, as
/// each wake costs the dashboard CPU and nothing waits on a stop but tests (a dropped watcher
/// is not joined).
pub const WAIT: Duration = Duration::from_secs(5);

/// One Xid error a GPU reported while gpudeck watched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XidEvent {
    /// The GPU as gpudeck numbers it (its index in the inventory, NVML's order).
    pub gpu: u32,
    /// The GPU's PCI bus id as the inventory has it (`00000000:3A:00.0`).
    pub pci_bus_id: String,
    /// The GPU's UUID, empty when the inventory has none for it.
    pub uuid: String,
    /// The Xid number.
    pub xid: u64,
    /// When the watcher received it, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
}

/// How many of a GPU's latest Xids an [`XidLog`] keeps (it counts them all).
pub const RECENT_PER_GPU: usize = 16;

/// The Xids seen per GPU while gpudeck watched: how many, and the latest few. Its memory is
/// bounded however many arrive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XidLog {
    by_gpu: BTreeMap<u32, GpuXids>,
}

/// The Xids one GPU reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuXids {
    /// Every Xid it reported.
    pub total: u64,
    /// The latest, oldest first (at most [`RECENT_PER_GPU`]).
    pub recent: VecDeque<XidEvent>,
}

impl XidLog {
    pub fn record(&mut self, event: XidEvent) {
        let gpu = self.by_gpu.entry(event.gpu).or_default();
        gpu.total += 1;
        if gpu.recent.len() == RECENT_PER_GPU {
            gpu.recent.pop_front();
        }
        gpu.recent.push_back(event);
    }

    /// The Xids of GPU `gpu`, if it reported any.
    pub fn of(&self, gpu: u32) -> Option<&GpuXids> {
        self.by_gpu.get(&gpu)
    }

    /// The latest Xid of GPU `gpu`.
    pub fn last(&self, gpu: u32) -> Option<&XidEvent> {
        self.of(gpu).and_then(|g| g.recent.back())
    }

    pub fn is_empty(&self) -> bool {
        self.by_gpu.is_empty()
    }
}

/// What the watcher hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XidUpdate {
    /// A GPU reported an Xid.
    Event(XidEvent),
    /// Live Xids cannot be watched here, and why, in words for the user; said once, after
    /// which the watcher has stopped.
    Unavailable(String),
}

/// One Xid as the backend reports it, before it is matched to gpudeck's GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawXid {
    /// The PCI bus id of the GPU that reported it, in any of NVML's spellings.
    pub pci_bus_id: String,
    pub xid: u64,
}

/// A backend's open event set, waited on by the watcher's thread.
pub trait XidEvents {
    /// Waits up to `timeout` for the next Xid: `Ok(None)` when none came in time, `Err(why)`
    /// when the backend can wait no more (said to the user once, and the watch ends).
    fn wait(&mut self, timeout: Duration) -> Result<Option<RawXid>, String>;
}

/// Opens a backend's event set on the watcher's thread and watches it: it calls
/// [`Watch::run`] with the set, or [`Watch::unavailable`] with why there is none. The set can
/// borrow what the closure opened (an NVML handle), as both live on that thread.
pub type XidBackend = Box<dyn FnOnce(&mut Watch) + Send>;

/// Where each update goes; returning false ends the watch (nobody listens any more).
pub type XidSink = Box<dyn FnMut(XidUpdate) -> bool + Send>;

/// A GPU of the inventory, as the watcher names it.
#[derive(Debug, Clone)]
struct Named {
    gpu: u32,
    pci_bus_id: String,
    uuid: String,
    bus: Option<PciAddress>,
}

/// The watch in progress, handed to a backend on the watcher's thread.
pub struct Watch {
    gpus: Vec<Named>,
    stop: Arc<AtomicBool>,
    sink: XidSink,
}

impl Watch {
    /// Waits on `events` until the watcher is stopped, nobody listens, or the backend fails.
    pub fn run(&mut self, events: &mut dyn XidEvents) {
        while !self.stop.load(Ordering::Relaxed) {
            match events.wait(WAIT) {
                Ok(Some(raw)) => {
                    let event = self.name(raw);
                    tracing::warn!(gpu = event.gpu, bus = %event.pci_bus_id, xid = event.xid, "Xid");
                    if !(self.sink)(XidUpdate::Event(event)) {
                        return;
                    }
                }
                Ok(None) => {}
                Err(why) => {
                    self.unavailable(why);
                    return;
                }
            }
        }
    }

    /// Says once why Xids cannot be watched; the watch ends with the backend's closure.
    pub fn unavailable(&mut self, why: String) {
        tracing::info!(why = %why, "live Xid events unavailable");
        (self.sink)(XidUpdate::Unavailable(why));
    }

    /// The watcher was asked to stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The Xid as gpudeck names its GPU: the inventory's GPU with that bus id, or, for a GPU
    /// the inventory lacks, the bus id alone under an index past the inventory's.
    fn name(&self, raw: RawXid) -> XidEvent {
        let at_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let bus = bus_of(&raw.pci_bus_id);
        match self.gpus.iter().find(|g| bus.is_some() && g.bus == bus) {
            Some(g) => XidEvent {
                gpu: g.gpu,
                pci_bus_id: g.pci_bus_id.clone(),
                uuid: g.uuid.clone(),
                xid: raw.xid,
                at_unix_ms,
            },
            None => XidEvent {
                gpu: self.gpus.iter().map(|g| g.gpu + 1).max().unwrap_or(0),
                pci_bus_id: raw.pci_bus_id,
                uuid: String::new(),
                xid: raw.xid,
                at_unix_ms,
            },
        }
    }
}

/// The PCI address of an NVML bus id (`00000000:3A:00.0`), in the legacy form without a domain
/// too (`3a:00.0`), so that the inventory's and an event's ids compare equal however written.
fn bus_of(id: &str) -> Option<PciAddress> {
    let id = id.trim().trim_end_matches('\0');
    match id.matches(':').count() {
        1 => PciAddress::parse(&format!("0:{id}")),
        _ => PciAddress::parse(id),
    }
}

/// The running watcher; [`XidWatcher::stop`] ends it, and so does dropping it (without
/// waiting for its thread, which ends within one [`WAIT`]).
pub struct XidWatcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl XidWatcher {
    /// Starts watching the Xids of `gpus` through `backend` on a thread of its own, handing
    /// each update to `sink`.
    pub fn spawn(backend: XidBackend, gpus: &[GpuStatic], sink: XidSink) -> XidWatcher {
        let stop = Arc::new(AtomicBool::new(false));
        let mut watch = Watch {
            gpus: gpus
                .iter()
                .map(|g| Named {
                    gpu: g.index,
                    pci_bus_id: g.pci_bus_id.clone(),
                    uuid: g.uuid.clone(),
                    bus: bus_of(&g.pci_bus_id),
                })
                .collect(),
            stop: Arc::clone(&stop),
            sink,
        };
        let thread = std::thread::Builder::new()
            .name("xid-watch".into())
            .spawn(move || backend(&mut watch));
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::error!(error = %e, "could not start the Xid watcher thread");
                None
            }
        };
        XidWatcher { stop, thread }
    }

    /// Stops the watcher and waits for its thread (at most about one [`WAIT`]).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// The watcher's thread has ended (stopped, unavailable, or nobody listened).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for XidWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What a user reads when the backend has no event API at all.
pub fn no_event_api(backend: &str) -> String {
    format!(
        "Live Xid events are not available: {backend} offers no event API here (common in \
         VMs and containers). Xids still show in `gpudeck doctor`, from the kernel log."
    )
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::mpsc;

    use super::*;

    fn gpu(index: u32, bus: &str) -> GpuStatic {
        GpuStatic {
            index,
            name: "Fake GPU".into(),
            uuid: format!("GPU-{index}"),
            pci_bus_id: bus.into(),
            ..Default::default()
        }
    }

    /// Hands out its script, one step per wait, then times out (blocking for the timeout).
    struct Script(VecDeque<Result<Option<RawXid>, String>>);

    impl XidEvents for Script {
        fn wait(&mut self, timeout: Duration) -> Result<Option<RawXid>, String> {
            match self.0.pop_front() {
                Some(step) => step,
                None => {
                    std::thread::sleep(timeout);
                    Ok(None)
                }
            }
        }
    }

    fn raw(bus: &str, xid: u64) -> Result<Option<RawXid>, String> {
        Ok(Some(RawXid {
            pci_bus_id: bus.into(),
            xid,
        }))
    }

    fn watch(
        steps: Vec<Result<Option<RawXid>, String>>,
    ) -> (XidWatcher, mpsc::Receiver<XidUpdate>) {
        let (tx, rx) = mpsc::channel();
        let gpus = [gpu(0, "00000000:18:00.0"), gpu(1, "00000000:3A:00.0")];
        let watcher = XidWatcher::spawn(
            Box::new(move |w: &mut Watch| w.run(&mut Script(steps.into()))),
            &gpus,
            Box::new(move |u| tx.send(u).is_ok()),
        );
        (watcher, rx)
    }

    fn next(rx: &mpsc::Receiver<XidUpdate>) -> XidUpdate {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("an update within 10 s")
    }

    #[test]
    fn xids_are_named_by_bus_id_in_any_spelling() {
        let (watcher, rx) = watch(vec![raw("0000:3a:00.0", 79), Ok(None), raw("18:00.0", 13)]);
        let XidUpdate::Event(first) = next(&rx) else {
            panic!("not an event");
        };
        assert_eq!(
            (
                first.gpu,
                first.pci_bus_id.as_str(),
                first.uuid.as_str(),
                first.xid
            ),
            (1, "00000000:3A:00.0", "GPU-1", 79)
        );
        assert!(first.at_unix_ms > 1_600_000_000_000);
        let XidUpdate::Event(second) = next(&rx) else {
            panic!("not an event");
        };
        assert_eq!((second.gpu, second.xid), (0, 13));
        watcher.stop();
    }

    #[test]
    fn a_gpu_the_inventory_lacks_keeps_its_bus_id() {
        let (watcher, rx) = watch(vec![raw("00000000:99:00.0", 31)]);
        let XidUpdate::Event(e) = next(&rx) else {
            panic!("not an event");
        };
        assert_eq!(
            (e.gpu, e.pci_bus_id.as_str(), e.uuid.as_str()),
            (2, "00000000:99:00.0", "")
        );
        watcher.stop();
    }

    #[test]
    fn a_failing_backend_is_reported_once_and_the_watch_ends() {
        let (watcher, rx) = watch(vec![
            raw("18:00.0", 48),
            Err("gone".into()),
            raw("18:00.0", 13),
        ]);
        assert!(matches!(next(&rx), XidUpdate::Event(e) if e.xid == 48));
        assert_eq!(next(&rx), XidUpdate::Unavailable("gone".into()));
        // The thread ends: the sender is dropped, and nothing more arrives.
        assert!(rx.recv_timeout(Duration::from_secs(10)).is_err());
        assert!(watcher.is_finished());
    }

    #[test]
    fn stopping_ends_the_thread_within_one_wait() {
        let (watcher, rx) = watch(Vec::new());
        let started = std::time::Instant::now();
        watcher.stop();
        assert!(started.elapsed() < WAIT * 8, "{:?}", started.elapsed());
        assert!(
            rx.recv_timeout(Duration::from_secs(1)).is_err(),
            "no update"
        );
    }

    /// The listener takes the first Xid, then leaves: the second one finds nobody and the watch
    /// ends. The channel has no room (each send waits for its receive), so the second Xid is
    /// handed out only after the listener left, however loaded the machine: with a buffered
    /// channel both could be sent before the drop, and the watch would wait on forever.
    #[test]
    fn a_sink_nobody_reads_ends_the_watch() {
        let (tx, rx) = mpsc::sync_channel(0);
        let gpus = [gpu(0, "00000000:18:00.0")];
        let steps = vec![raw("18:00.0", 13), raw("18:00.0", 31)];
        let watcher = XidWatcher::spawn(
            Box::new(move |w: &mut Watch| w.run(&mut Script(steps.into()))),
            &gpus,
            Box::new(move |u| tx.send(u).is_ok()),
        );
        assert!(matches!(next(&rx), XidUpdate::Event(e) if e.xid == 13));
        drop(rx);
        // Generous: a loaded machine may be slow to run the thread, never wrong about it.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !watcher.is_finished() {
            assert!(std::time::Instant::now() < deadline, "the watch went on");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn the_log_counts_every_xid_and_keeps_the_latest() {
        let mut log = XidLog::default();
        for n in 0..40 {
            log.record(XidEvent {
                gpu: 3,
                pci_bus_id: "00000000:5D:00.0".into(),
                uuid: "GPU-3".into(),
                xid: 13 + n,
                at_unix_ms: n,
            });
        }
        let three = log.of(3).expect("GPU 3");
        assert_eq!(three.total, 40);
        assert_eq!(three.recent.len(), RECENT_PER_GPU);
        assert_eq!(log.last(3).map(|e| e.xid), Some(52));
        assert_eq!(
            three.recent.front().map(|e| e.xid),
            Some(52 - RECENT_PER_GPU as u64 + 1)
        );
        assert!(log.of(0).is_none());
    }

    #[test]
    fn bus_ids_parse_in_nvml_and_legacy_forms() {
        let want = bus_of("00000000:3A:00.0");
        assert!(want.is_some());
        assert_eq!(bus_of("0000:3a:00.0"), want);
        assert_eq!(bus_of("3a:00.0"), want);
        assert_ne!(bus_of("00000001:3A:00.0"), want);
        assert_eq!(bus_of("not a bus"), None);
    }
}
