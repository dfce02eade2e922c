//! The GPU collector: a thread that owns the GPU source, samples it on its own interval and sends updates.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

use super::counters::HealthCounters;
use super::process_watch::ProcessWatch;
use super::source::{GpuError, GpuSource};
use super::types::{GpuProcess, GpuSample, GpuStatic, Inventory};
use super::xid_watch::{XidUpdate, XidWatcher};
use crate::host::{ProcessDetails, ProcessTable};

/// What the collector tells the app.
#[derive(Debug, Clone)]
pub enum GpuUpdate {
    /// The source opened: static facts and topology.
    Ready(Box<Inventory>),
    /// The source could not be opened; the GPU view explains why.
    Failed(GpuError),
    /// One sample per GPU, in inventory order.
    Sampled(Vec<GpuSample>),
    /// The Xid watcher started with the source: an Xid, or why there are none live.
    Xid(XidUpdate),
}

/// Where the collector answers [`CollectorCommand::ReadHealthNow`]: every GPU's health
/// counters, in inventory order.
#[derive(Debug, Clone)]
pub struct HealthReply(pub tokio::sync::mpsc::Sender<Vec<HealthCounters>>);

impl PartialEq for HealthReply {
    fn eq(&self, other: &Self) -> bool {
        self.0.same_channel(&other.0)
    }
}

impl Eq for HealthReply {}

/// What the app can ask of the collector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectorCommand {
    SetInterval(Duration),
    /// `Some(every)`: the processes are on screen; read each one's GPU share every `every`
    /// and its CPU and host memory every tick. `None`: they are not; read none of it.
    WatchProcesses(Option<Duration>),
    /// Read each GPU's health counters every tick (`GpuSample::health`): while Prometheus
    /// metrics are served.
    ReadHealth(bool),
    /// Read every GPU's health counters once, now, and answer on the channel (the doctor's
    /// look, from the source the dashboard already holds).
    ReadHealthNow(HealthReply),
    Shutdown,
}

/// The running collector; dropping it stops the thread.
pub struct CollectorHandle {
    commands: mpsc::Sender<CollectorCommand>,
    thread: Option<JoinHandle<()>>,
}

impl CollectorHandle {
    pub fn send(&self, command: CollectorCommand) {
        // The thread only goes away after Shutdown, so a failed send has nothing left to do.
        let _ = self.commands.send(command);
    }
}

impl Drop for CollectorHandle {
    fn drop(&mut self) {
        let _ = self.commands.send(CollectorCommand::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Opens the GPU source on the collector's thread, so a slow NVML init never delays the first frame.
pub type Opener = Box<dyn FnOnce() -> Result<Box<dyn GpuSource>, GpuError> + Send>;

/// Starts the collector thread. NVML calls block, so they live on a thread of their own.
pub fn spawn(
    open: Opener,
    processes: Arc<dyn ProcessTable>,
    interval: Duration,
    updates: Sender<GpuUpdate>,
) -> CollectorHandle {
    spawn_reading_health(open, processes, interval, updates, false)
}

/// [`spawn`], reading the health counters from the first sample on when `health` is true (for
/// serving metrics; `CollectorCommand::ReadHealth` turns it on and off later).
pub fn spawn_reading_health(
    open: Opener,
    processes: Arc<dyn ProcessTable>,
    interval: Duration,
    updates: Sender<GpuUpdate>,
    health: bool,
) -> CollectorHandle {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("gpu-collector".into())
        .spawn(move || run(open, processes, interval, updates, rx, health))
        .ok();
    if thread.is_none() {
        tracing::error!("could not start the GPU collector thread");
    }
    CollectorHandle {
        commands: tx,
        thread,
    }
}

fn run(
    open: Opener,
    processes: Arc<dyn ProcessTable>,
    mut interval: Duration,
    updates: Sender<GpuUpdate>,
    commands: mpsc::Receiver<CollectorCommand>,
    mut read_health: bool,
) {
    let opened = open().and_then(|mut source| source.inventory().map(|inv| (source, inv)));
    let (mut source, inventory) = match opened {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!(error = %e, "GPU source unavailable");
            let _ = updates.blocking_send(GpuUpdate::Failed(e));
            return;
        }
    };
    let gpus = inventory.gpus.clone();
    if updates
        .blocking_send(GpuUpdate::Ready(Box::new(inventory)))
        .is_err()
    {
        return;
    }
    // Stopped when the collector ends (the watcher is dropped with this thread's locals).
    let _xids = source.xid_backend().map(|backend| {
        let xid_updates = updates.clone();
        XidWatcher::spawn(
            backend,
            &gpus,
            Box::new(move |u| xid_updates.blocking_send(GpuUpdate::Xid(u)).is_ok()),
        )
    });
    let mut enricher = ProcessEnricher::new(Arc::clone(&processes));
    let mut watch: Option<ProcessWatch> = None;
    let mut slow = SlowFields::default();
    loop {
        let started = Instant::now();
        // Served metrics (`read_health`) get every value fresh each tick, as scrapes expect.
        let mut samples = slow.sample(&gpus, source.as_mut(), started, read_health);
        if read_health {
            for (gpu, sample) in gpus.iter().zip(samples.iter_mut()) {
                sample.health = source.health(gpu);
            }
        }
        enricher.enrich(&mut samples, source.as_mut());
        if let Some(w) = watch.as_mut() {
            w.apply(
                &gpus,
                &mut samples,
                source.as_mut(),
                processes.as_ref(),
                started,
            );
        }
        tracing::trace!(
            elapsed_us = started.elapsed().as_micros() as u64,
            "sampled GPUs"
        );
        match updates.try_send(GpuUpdate::Sampled(samples)) {
            Ok(()) => {}
            Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                tracing::debug!("app is behind; dropped one GPU sample");
            }
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => return,
        }
        let deadline = started + interval;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match commands.recv_timeout(wait) {
                Ok(CollectorCommand::SetInterval(d)) => interval = d,
                Ok(CollectorCommand::WatchProcesses(every)) => {
                    watch = every.map(ProcessWatch::new);
                }
                Ok(CollectorCommand::ReadHealth(on)) => read_health = on,
                Ok(CollectorCommand::ReadHealthNow(reply)) => {
                    let health = gpus.iter().map(|g| source.health(g)).collect();
                    let _ = reply.0.try_send(health);
                }
                Ok(CollectorCommand::Shutdown) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => break,
            }
        }
    }
}

/// How often the slow metrics (`GpuSample::SLOW_METRICS`) are read; the samples between show
/// the last values read. They change seldom (a power limit, a PCIe link retraining, an ECC
/// error, which the Xid watcher reports at once) and cost as much as the rest to read.
pub const SLOW_EVERY: Duration = Duration::from_secs(5);

/// The last full sample of each GPU and when it was taken, for the quick samples between.
#[derive(Default)]
struct SlowFields {
    full: Vec<GpuSample>,
    read: Option<Instant>,
}

impl SlowFields {
    /// Every GPU's sample at `now`: a full one each `SLOW_EVERY` (or every time, with
    /// `every_tick`), else a quick one with the slow metrics of the last full one.
    fn sample(
        &mut self,
        gpus: &[GpuStatic],
        source: &mut dyn GpuSource,
        now: Instant,
        every_tick: bool,
    ) -> Vec<GpuSample> {
        if every_tick {
            // Nothing to keep: the first tick after these reads is a full one again.
            self.read = None;
            return gpus.iter().map(|g| source.sample(g)).collect();
        }
        let due = self
            .read
            .is_none_or(|read| now.saturating_duration_since(read) >= SLOW_EVERY);
        if due {
            let samples: Vec<GpuSample> = gpus.iter().map(|g| source.sample(g)).collect();
            self.full.clone_from(&samples);
            self.read = Some(now);
            return samples;
        }
        gpus.iter()
            .zip(&self.full)
            .map(|(g, full)| {
                let mut s = source.sample_quick(g);
                if !s.lost {
                    s.keep_slow_from(full);
                }
                s
            })
            .collect()
    }
}

/// How long a process's /proc details are trusted before they are read again: a process caught
/// between fork and exec, or a PID reused by a new process, corrects itself within this time.
const DETAILS_TTL: Duration = Duration::from_secs(10);

/// Adds user, command and container to each GPU process, caching per PID so /proc is read rarely.
pub struct ProcessEnricher {
    table: Arc<dyn ProcessTable>,
    cache: HashMap<u32, Cached>,
}

/// What is known of one PID, and since when.
struct Cached {
    details: Option<ProcessDetails>,
    /// NVML's name for a process /proc does not show (another PID namespace), once asked.
    nvml_name: Option<Option<String>>,
    read: Instant,
}

impl ProcessEnricher {
    pub fn new(table: Arc<dyn ProcessTable>) -> Self {
        Self {
            table,
            cache: HashMap::new(),
        }
    }

    pub fn enrich(&mut self, samples: &mut [GpuSample], source: &mut dyn GpuSource) {
        let now = Instant::now();
        let live: Vec<u32> = samples
            .iter()
            .flat_map(|s| s.processes.iter().map(|p| p.pid))
            .collect();
        self.cache
            .retain(|pid, c| live.contains(pid) && now.duration_since(c.read) < DETAILS_TTL);
        for process in samples.iter_mut().flat_map(|s| s.processes.iter_mut()) {
            let pid = process.pid;
            let cached = self.cache.entry(pid).or_insert_with(|| Cached {
                details: self.table.describe(pid),
                nvml_name: None,
                read: now,
            });
            apply(process, cached.details.as_ref());
            if process.command.is_none() {
                // Not visible in our PID namespace: NVML still knows the name.
                process.command = cached
                    .nvml_name
                    .get_or_insert_with(|| source.process_name(pid))
                    .clone();
            }
        }
    }
}

fn apply(process: &mut GpuProcess, details: Option<&ProcessDetails>) {
    if let Some(d) = details {
        process.user.clone_from(&d.user);
        process.command.clone_from(&d.command);
        process.container.clone_from(&d.container);
        process.identity = d.identity;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::gpu::types::{
        MetricError, ProcessGpuUtil, ProcessKind, ProcessUtilSample, SourceKind, SystemInfo,
        Topology,
    };
    use crate::host::FakeProcessTable;

    /// Two GPUs with one process each; counts the per-process utilisation reads.
    struct CountingSource {
        util_reads: Arc<AtomicUsize>,
        name_reads: Arc<AtomicUsize>,
    }

    fn gpu(index: u32) -> GpuStatic {
        GpuStatic {
            index,
            name: "Fake GPU".into(),
            uuid: format!("GPU-{index}"),
            pci_bus_id: String::new(),
            ..Default::default()
        }
    }

    impl GpuSource for CountingSource {
        fn inventory(&mut self) -> Result<Inventory, GpuError> {
            Ok(Inventory {
                system: SystemInfo {
                    source: SourceKind::Nvml,
                    driver_version: None,
                    nvml_version: None,
                    cuda_driver_version: None,
                },
                gpus: vec![gpu(0), gpu(1)],
                topology: Topology::default(),
            })
        }

        fn sample(&mut self, gpu: &GpuStatic) -> GpuSample {
            GpuSample {
                processes: vec![GpuProcess {
                    gpu_index: gpu.index,
                    pid: 100 + gpu.index,
                    kind: ProcessKind::Compute,
                    used_memory_bytes: Some(1 << 30),
                    user: None,
                    command: None,
                    container: None,
                    identity: None,
                    gpu_util: None,
                    cpu_pct: None,
                    host_memory_bytes: None,
                }],
                ..GpuSample::default()
            }
        }

        fn health(&mut self, _gpu: &GpuStatic) -> crate::gpu::counters::HealthCounters {
            crate::gpu::counters::HealthCounters {
                pcie_replays: Some(7),
                ..Default::default()
            }
        }

        fn process_name(&mut self, pid: u32) -> Option<String> {
            self.name_reads.fetch_add(1, Ordering::SeqCst);
            Some(format!("worker-{pid}"))
        }

        fn process_utilization(
            &mut self,
            gpu: &GpuStatic,
            _since_us: u64,
        ) -> Option<Vec<ProcessUtilSample>> {
            self.util_reads.fetch_add(1, Ordering::SeqCst);
            Some(vec![ProcessUtilSample {
                pid: 100 + gpu.index,
                timestamp_us: 1,
                util: ProcessGpuUtil {
                    sm_pct: 42,
                    mem_pct: 7,
                    enc_pct: 0,
                    dec_pct: 0,
                },
            }])
        }
    }

    struct Running {
        handle: CollectorHandle,
        updates: tokio::sync::mpsc::Receiver<GpuUpdate>,
        util_reads: Arc<AtomicUsize>,
    }

    fn start() -> Running {
        let util_reads = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&util_reads);
        let (tx, updates) = tokio::sync::mpsc::channel(8);
        let handle = spawn(
            Box::new(move || {
                Ok(Box::new(CountingSource {
                    util_reads: counter,
                    name_reads: Arc::default(),
                }) as Box<dyn GpuSource>)
            }),
            Arc::new(FakeProcessTable::default()),
            Duration::from_millis(5),
            tx,
        );
        Running {
            handle,
            updates,
            util_reads,
        }
    }

    impl Running {
        fn next_samples(&mut self) -> Vec<GpuSample> {
            loop {
                match self.updates.blocking_recv() {
                    Some(GpuUpdate::Sampled(s)) => return s,
                    Some(_) => {}
                    None => panic!("the collector stopped"),
                }
            }
        }

        /// Samples until one satisfies `done`; a command takes effect within a tick or two.
        fn samples_until(&mut self, done: impl Fn(&[GpuSample]) -> bool) -> Vec<GpuSample> {
            for _ in 0..2000 {
                let s = self.next_samples();
                if done(&s) {
                    return s;
                }
            }
            panic!("2000 samples went by without the expected change");
        }

        fn reads(&self) -> usize {
            self.util_reads.load(Ordering::SeqCst)
        }
    }

    fn shares(samples: &[GpuSample]) -> Vec<Option<ProcessGpuUtil>> {
        samples
            .iter()
            .flat_map(|s| s.processes.iter().map(|p| p.gpu_util))
            .collect()
    }

    #[test]
    fn per_process_utilisation_is_read_only_while_the_processes_are_watched() {
        let mut c = start();
        for _ in 0..10 {
            assert_eq!(shares(&c.next_samples()), [None, None]);
        }
        assert_eq!(c.reads(), 0, "read while nobody watched the processes");

        c.handle
            .send(CollectorCommand::WatchProcesses(Some(Duration::ZERO)));
        let watched = c.samples_until(|s| shares(s).iter().all(Option::is_some));
        assert_eq!(watched[0].processes[0].gpu_util.map(|u| u.sm_pct), Some(42));
        assert!(c.reads() >= 2, "one read per GPU at least");

        c.handle.send(CollectorCommand::WatchProcesses(None));
        c.samples_until(|s| shares(s).iter().all(Option::is_none));
        let after_stop = c.reads();
        for _ in 0..10 {
            assert_eq!(shares(&c.next_samples()), [None, None]);
        }
        assert_eq!(c.reads(), after_stop, "read after the watch ended");
    }

    #[test]
    fn per_process_utilisation_is_read_on_its_own_slower_cadence() {
        let mut c = start();
        c.handle
            .send(CollectorCommand::WatchProcesses(Some(Duration::from_secs(
                3600,
            ))));
        c.samples_until(|s| shares(s).iter().all(Option::is_some));
        for _ in 0..20 {
            let s = c.next_samples();
            assert_eq!(shares(&s).len(), 2);
            assert!(
                shares(&s).iter().all(Option::is_some),
                "the last read stays"
            );
        }
        assert_eq!(
            c.reads(),
            2,
            "one read per GPU, then none until the hour is up"
        );
    }

    #[test]
    fn health_counters_are_read_only_when_asked() {
        let mut c = start();
        for _ in 0..5 {
            assert!(c
                .next_samples()
                .iter()
                .all(|s| s.health.pcie_replays.is_none()));
        }
        c.handle.send(CollectorCommand::ReadHealth(true));
        let s = c.samples_until(|s| s.iter().all(|s| s.health.pcie_replays == Some(7)));
        assert_eq!(s.len(), 2);
        c.handle.send(CollectorCommand::ReadHealth(false));
        c.samples_until(|s| s.iter().all(|s| s.health.pcie_replays.is_none()));
    }

    #[test]
    fn health_counters_are_read_once_for_whoever_asks_now() {
        let mut c = start();
        c.next_samples();
        let (tx, mut rx) = tokio::sync::mpsc::channel(1);
        c.handle
            .send(CollectorCommand::ReadHealthNow(HealthReply(tx.clone())));
        let health = rx.blocking_recv().expect("an answer");
        assert_eq!(health.len(), 2, "one per GPU");
        assert!(health.iter().all(|h| h.pcie_replays == Some(7)));
        // The samples go on without them.
        assert!(c
            .next_samples()
            .iter()
            .all(|s| s.health.pcie_replays.is_none()));
        assert_eq!(HealthReply(tx.clone()), HealthReply(tx));
    }

    #[test]
    fn the_collector_starts_the_xid_watcher_with_its_source() {
        use crate::gpu::sim::SimSource;
        use crate::gpu::xid_watch::XidUpdate;
        let (tx, mut updates) = tokio::sync::mpsc::channel(8);
        let _handle = spawn(
            Box::new(|| {
                let spec = gpudeck_sim_model::SimSpec::parse("gpus=2,xid=1:13@0.3").unwrap();
                Ok(Box::new(SimSource::new(spec)) as Box<dyn GpuSource>)
            }),
            Arc::new(FakeProcessTable::default()),
            Duration::from_millis(50),
            tx,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            match updates.blocking_recv() {
                Some(GpuUpdate::Xid(XidUpdate::Event(e))) => {
                    assert_eq!(
                        (e.gpu, e.xid, e.pci_bus_id.as_str()),
                        (1, 13, "00000000:38:00.0")
                    );
                    return;
                }
                Some(_) => {}
                None => panic!("the collector stopped"),
            }
        }
        panic!("no Xid within 20 s");
    }

    /// A process /proc does not show (another PID namespace) gets NVML's name for it, asked once
    /// per PID while the details are trusted rather than on every tick.
    #[test]
    fn nvml_names_are_asked_once_per_process() {
        let name_reads = Arc::new(AtomicUsize::new(0));
        let mut source = CountingSource {
            util_reads: Arc::default(),
            name_reads: Arc::clone(&name_reads),
        };
        let gpus = source.inventory().unwrap().gpus;
        let mut enricher = ProcessEnricher::new(Arc::new(FakeProcessTable::default()));
        for _ in 0..5 {
            let mut samples: Vec<GpuSample> = gpus.iter().map(|g| source.sample(g)).collect();
            enricher.enrich(&mut samples, &mut source);
            let names: Vec<_> = samples
                .iter()
                .map(|s| s.processes[0].command.clone())
                .collect();
            assert_eq!(
                names,
                vec![
                    Some("worker-100".to_string()),
                    Some("worker-101".to_string())
                ]
            );
        }
        assert_eq!(name_reads.load(Ordering::SeqCst), 2);
    }

    /// A source whose every read gives new values: a full read numbers its slow metrics and
    /// fails to read the power limit, a quick one reads only the rest.
    #[derive(Default)]
    struct Ticking {
        full_reads: u32,
        quick_reads: u32,
        lost: bool,
    }

    impl GpuSource for Ticking {
        fn inventory(&mut self) -> Result<Inventory, GpuError> {
            unreachable!("not asked")
        }

        fn sample(&mut self, _gpu: &GpuStatic) -> GpuSample {
            self.full_reads += 1;
            let n = self.full_reads;
            GpuSample {
                temp_c: Some(100 + n),
                pcie_gen: Some(n),
                pcie_width: Some(16),
                ecc_corrected: Some(u64::from(n)),
                errors: vec![MetricError {
                    metric: "power limit",
                    message: format!("read {n} failed"),
                }],
                ..GpuSample::default()
            }
        }

        fn sample_quick(&mut self, _gpu: &GpuStatic) -> GpuSample {
            self.quick_reads += 1;
            if self.lost {
                return GpuSample::lost();
            }
            GpuSample {
                temp_c: Some(self.quick_reads),
                ..GpuSample::default()
            }
        }

        fn process_name(&mut self, _pid: u32) -> Option<String> {
            None
        }
    }

    #[test]
    fn slow_metrics_are_read_every_slow_every_and_carried_between() {
        let mut source = Ticking::default();
        let gpus = [gpu(0), gpu(1)];
        let mut slow = SlowFields::default();
        let t0 = Instant::now();

        let first = slow.sample(&gpus, &mut source, t0, false);
        assert_eq!(
            (source.full_reads, source.quick_reads),
            (2, 0),
            "a full read first"
        );
        assert_eq!(first[1].pcie_gen, Some(2));

        let second = Duration::from_secs(1);
        let quick = slow.sample(&gpus, &mut source, t0 + second, false);
        assert_eq!((source.full_reads, source.quick_reads), (2, 2));
        // Fresh values from the quick read, the slow ones (and their errors) from the full one.
        assert_eq!(quick[0].temp_c, Some(1));
        assert_eq!(quick[1].temp_c, Some(2));
        assert_eq!(quick[1].pcie_gen, Some(2));
        assert_eq!(quick[1].pcie_width, Some(16));
        assert_eq!(quick[1].ecc_corrected, Some(2));
        assert_eq!(quick[1].errors, first[1].errors);

        let just_before = slow.sample(&gpus, &mut source, t0 + SLOW_EVERY - second / 2, false);
        assert_eq!(source.full_reads, 2, "read again before SLOW_EVERY");
        assert_eq!(just_before[0].pcie_gen, Some(1));

        let again = slow.sample(&gpus, &mut source, t0 + SLOW_EVERY, false);
        assert_eq!(source.full_reads, 4, "not read again after SLOW_EVERY");
        assert_eq!(again[0].pcie_gen, Some(3));
        assert_eq!(again[0].errors[0].message, "read 3 failed");

        // Served metrics: every tick a full read, and the tick after them a full one too.
        slow.sample(&gpus, &mut source, t0 + SLOW_EVERY + second, true);
        assert_eq!(source.full_reads, 6, "a full read each tick while served");
        slow.sample(&gpus, &mut source, t0 + SLOW_EVERY + second * 2, false);
        assert_eq!(source.full_reads, 8, "a full read after the served ones");

        // A GPU lost since the last full read shows as lost, not with its old values.
        source.lost = true;
        let lost = slow.sample(&gpus, &mut source, t0 + SLOW_EVERY + second * 3, false);
        assert!(lost[0].lost);
        assert_eq!(lost[0].pcie_gen, None);
        assert!(lost[0].errors.is_empty());
    }
}
