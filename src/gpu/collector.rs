//! The GPU collector: a thread that owns the GPU source, samples it on its own interval and sends updates.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

use super::process_watch::ProcessWatch;
use super::source::{GpuError, GpuSource};
use super::types::{GpuProcess, GpuSample, Inventory};
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
}

/// What the app can ask of the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectorCommand {
    SetInterval(Duration),
    /// `Some(every)`: the processes are on screen; read each one's GPU share every `every`
    /// and its CPU and host memory every tick. `None`: they are not; read none of it.
    WatchProcesses(Option<Duration>),
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
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("gpu-collector".into())
        .spawn(move || run(open, processes, interval, updates, rx))
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
    let mut enricher = ProcessEnricher::new(Arc::clone(&processes));
    let mut watch: Option<ProcessWatch> = None;
    loop {
        let started = Instant::now();
        let mut samples: Vec<GpuSample> = gpus.iter().map(|g| source.sample(g)).collect();
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
                Ok(CollectorCommand::Shutdown) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => break,
            }
        }
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
#[path = "collector_tests.rs"]
mod tests;
