//! The supervisor's GPU sampler: a thread of its own (NVML calls block) that opens the GPU source
//! the run was started with, samples only the run's GPUs once a second into `metrics.csv`, and
//! takes one last sample once the ranks have ended.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc as async_mpsc;

use super::clock;
use super::metrics::{rows_from, MetricsWriter};
use super::record::{RunGpu, RunRecord};
use crate::gpu::{GpuSource, GpuSourceChoice, GpuStatic};

/// The run's per-second GPU metrics, in the run's directory.
pub const METRICS_FILE: &str = "metrics.csv";
/// How often the run's GPUs are sampled.
const PERIOD: Duration = Duration::from_secs(1);
/// How long the end of a run waits for its last sample (a hung driver must not hold it up).
const LAST_SAMPLE_WAIT: Duration = Duration::from_secs(5);

/// The running sampler of one run.
pub(crate) struct Sampler {
    stop: Option<mpsc::Sender<()>>,
    done: mpsc::Receiver<()>,
    failures: async_mpsc::UnboundedReceiver<String>,
}

impl Sampler {
    /// Starts sampling the GPUs of `record` into `dir/metrics.csv`; returns at once.
    pub(crate) fn start(dir: &Path, record: &RunRecord) -> Sampler {
        let (stop_tx, stop_rx) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let (fail_tx, failures) = async_mpsc::unbounded_channel();
        let job = Job {
            path: dir.join(METRICS_FILE),
            choice: record.gpu_source.clone(),
            gpus: record.gpus.clone(),
            failures: fail_tx.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name("gpu-sampler".into())
            .spawn(move || {
                job.run(&stop_rx);
                let _ = done_tx.send(());
            });
        if let Err(e) = spawned {
            report(
                &fail_tx,
                format!("the sampling thread could not start: {e}"),
            );
        }
        Sampler {
            stop: Some(stop_tx),
            done,
            failures,
        }
    }

    /// The next reason metrics are missing (None once the sampler has ended).
    pub(crate) async fn failure(&mut self) -> Option<String> {
        self.failures.recv().await
    }

    /// Takes the last sample and ends the thread, waiting a bounded time; returns a failure not
    /// yet taken with [`failure`](Self::failure).
    pub(crate) fn finish(mut self) -> Option<String> {
        drop(self.stop.take());
        if let Err(RecvTimeoutError::Timeout) = self.done.recv_timeout(LAST_SAMPLE_WAIT) {
            errln!(
                "gpudeck supervisor: the last GPU sample did not come within {}s",
                LAST_SAMPLE_WAIT.as_secs()
            );
        }
        let mut missed = Vec::new();
        while let Ok(why) = self.failures.try_recv() {
            missed.push(why);
        }
        (!missed.is_empty()).then(|| missed.join("; "))
    }
}

fn report(failures: &async_mpsc::UnboundedSender<String>, why: String) {
    errln!("gpudeck supervisor: GPU metrics: {why}");
    let _ = failures.send(why);
}

/// What the sampling thread is given.
struct Job {
    path: PathBuf,
    choice: Option<GpuSourceChoice>,
    gpus: Vec<RunGpu>,
    failures: async_mpsc::UnboundedSender<String>,
}

impl Job {
    /// Samples every PERIOD until `stop` is dropped, then once more.
    fn run(self, stop: &mpsc::Receiver<()>) {
        let mut recorder = match Recorder::open(&self) {
            Ok(recorder) => recorder,
            Err(why) => return report(&self.failures, why),
        };
        loop {
            let tick = Instant::now();
            if let Err(why) = recorder.record_once() {
                return report(&self.failures, why);
            }
            match stop.recv_timeout(PERIOD.saturating_sub(tick.elapsed())) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        if let Err(why) = recorder.record_once() {
            report(&self.failures, why);
        }
    }
}

/// An open GPU source, the run's GPUs in it, and the metrics file.
struct Recorder {
    source: Box<dyn GpuSource>,
    gpus: Vec<GpuStatic>,
    indices: Vec<u32>,
    path: PathBuf,
    writer: MetricsWriter<SyncedFile>,
}

impl Recorder {
    /// Opens the source (static facts once) and the file. A GPU of the run that the source does
    /// not know is reported and left out; none known at all is a failure.
    fn open(job: &Job) -> Result<Recorder, String> {
        let choice = job.choice.as_ref().ok_or(
            "run.json does not say which GPU source to sample (the run was started by an older gpudeck)",
        )?;
        let mut source = choice
            .open()
            .map_err(|e| format!("{choice} could not be opened: {e}"))?;
        let inventory = source
            .inventory()
            .map_err(|e| format!("{choice} could not list the GPUs: {e}"))?;
        let (gpus, missing) = pick(&inventory.gpus, &job.gpus);
        if !missing.is_empty() {
            let why = format!(
                "{} not among the GPUs {choice} reports; not recorded",
                missing.join(", ")
            );
            if gpus.is_empty() {
                return Err(why);
            }
            report(&job.failures, why);
        }
        let writer = create(&job.path)
            .and_then(MetricsWriter::new)
            .map_err(|e| format!("{} could not be created: {e}", job.path.display()))?;
        Ok(Recorder {
            indices: gpus.iter().map(|g| g.index).collect(),
            source,
            gpus,
            path: job.path.clone(),
            writer,
        })
    }

    /// One sample of the run's GPUs, written and synced as one batch.
    fn record_once(&mut self) -> Result<(), String> {
        let t = i64::try_from(clock::now_ms()).unwrap_or(i64::MAX);
        let samples: Vec<_> = self.gpus.iter().map(|g| self.source.sample(g)).collect();
        let rows = rows_from(t, &self.gpus, &samples, &self.indices);
        self.writer
            .write_batch(&rows)
            .map_err(|e| format!("{} could not be written: {e}", self.path.display()))
    }
}

/// The source's facts for each of the run's GPUs, matched by UUID; and the run's GPUs it lacks.
fn pick(known: &[GpuStatic], wanted: &[RunGpu]) -> (Vec<GpuStatic>, Vec<String>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for gpu in wanted {
        match known
            .iter()
            .find(|k| k.uuid.eq_ignore_ascii_case(&gpu.uuid))
        {
            Some(k) => found.push(k.clone()),
            None => missing.push(format!("GPU {} ({})", gpu.index, gpu.uuid)),
        }
    }
    (found, missing)
}

/// A private (0600) metrics file, replacing any left from before.
fn create(path: &Path) -> io::Result<SyncedFile> {
    crate::private_files::open(
        crate::private_files::options().create(true).truncate(true),
        path,
    )
    .map(SyncedFile)
}

/// A file whose flush reaches the disk, so a machine crash too loses at most the last batch.
struct SyncedFile(File);

impl Write for SyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }
}

#[cfg(test)]
#[path = "sampler_tests.rs"]
mod tests;
