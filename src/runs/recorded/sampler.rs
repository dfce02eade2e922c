//! The supervisor's GPU sampler: a thread of its own (NVML calls block) that opens the GPU source
//! the run was started with, samples only the run's GPUs once a second into `metrics.csv`, and
//! takes one last sample once the ranks have ended. A write that fails (a full disk) is undone
//! and sampling goes on, so recording resumes once there is room; a GPU that falls off the bus is
//! reported once, with when. The same source's Xid events for the run's GPUs are recorded
//! beside the metrics for the run's life (`xid_record`).

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc as async_mpsc;

use super::xid_record::RunPids;
use crate::gpu::xid_watch::XidWatcher;
use crate::gpu::{GpuSource, GpuSourceChoice, GpuStatic};
use crate::runs::clock;
use crate::runs::record::{LostGpu, RunGpu, RunRecord};
use crate::runs::recorded::samples::{rows_from, MetricsWriter};

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
    lost: Arc<Mutex<Vec<LostGpu>>>,
    xids: Arc<Mutex<Option<XidWatcher>>>,
}

/// Opens the metrics file; a seam so tests can make its writes fail.
type OpenSink = fn(&Path) -> io::Result<Box<dyn MetricsSink>>;

/// Where the metrics rows go: a file that can be cut back to its last complete batch.
pub(crate) trait MetricsSink: Write + Send {
    /// Cuts the file back to `len` bytes and continues writing there.
    fn truncate_to(&mut self, len: u64) -> io::Result<()>;
    /// Bytes written so far.
    fn position(&mut self) -> io::Result<u64>;
}

impl Sampler {
    /// Starts sampling the GPUs of `record` into `dir/metrics.csv`; returns at once.
    pub(crate) fn start(dir: &Path, record: &RunRecord) -> Sampler {
        Self::start_with(dir, record, |path| {
            create(path).map(|f| Box::new(f) as Box<dyn MetricsSink>)
        })
    }

    fn start_with(dir: &Path, record: &RunRecord, open: OpenSink) -> Sampler {
        let (stop_tx, stop_rx) = mpsc::channel();
        let (done_tx, done) = mpsc::channel();
        let (fail_tx, failures) = async_mpsc::unbounded_channel();
        let lost = Arc::new(Mutex::new(Vec::new()));
        let xids = Arc::new(Mutex::new(None));
        let job = Job {
            xids: Arc::clone(&xids),
            group: record
                .process_group
                .filter(|_| record.container.is_none())
                .map(|g| g.pid),
            path: dir.join(METRICS_FILE),
            choice: record.gpu_source.clone(),
            gpus: record.gpus.clone(),
            failures: fail_tx.clone(),
            lost: Arc::clone(&lost),
            open,
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
            lost,
            xids,
        }
    }

    /// The watch on the run's GPUs' Xids (`xids.jsonl`), started with the source: the
    /// supervisor keeps it until the run's end is written, so an Xid that came with the ranks'
    /// exit is still recorded, and never waits for it.
    pub(crate) fn take_xid_watch(&self) -> Option<XidWatcher> {
        lock(&self.xids).take()
    }

    /// The run's GPUs that fell off the bus so far (each reported as a failure too).
    pub(crate) fn lost_gpus(&self) -> Vec<LostGpu> {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
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

fn lock<T>(slot: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
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
    lost: Arc<Mutex<Vec<LostGpu>>>,
    open: OpenSink,
    /// Where the watch on the run's GPUs' Xids is left for the supervisor to stop.
    xids: Arc<Mutex<Option<XidWatcher>>>,
    /// The ranks' process group (a local run's), whose processes on the GPUs are noted.
    group: Option<u32>,
}

impl Job {
    /// Samples every PERIOD until `stop` is dropped, then once more. A failed write is reported
    /// once, and so is the first one that succeeds after it: the gap shows in `metrics_error`.
    fn run(self, stop: &mpsc::Receiver<()>) {
        let mut recorder = match Recorder::open(&self) {
            Ok(recorder) => recorder,
            Err(why) => return report(&self.failures, why),
        };
        let mut failing_since: Option<u64> = None;
        loop {
            let tick = Instant::now();
            self.record(&mut recorder, &mut failing_since);
            match stop.recv_timeout(PERIOD.saturating_sub(tick.elapsed())) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        self.record(&mut recorder, &mut failing_since);
    }

    fn record(&self, recorder: &mut Recorder, failing_since: &mut Option<u64>) {
        let now = clock::now_ms();
        match recorder.record_once(now) {
            Ok(lost) => {
                for gpu in lost {
                    self.gpu_lost(gpu);
                }
                if let Some(since) = failing_since.take() {
                    report(
                        &self.failures,
                        format!(
                            "{} written again from {} (no samples for {})",
                            recorder.path.display(),
                            clock::rfc3339_utc(now),
                            clock::duration(now.saturating_sub(since))
                        ),
                    );
                }
            }
            Err(why) if failing_since.is_none() => {
                *failing_since = Some(now);
                report(
                    &self.failures,
                    format!(
                        "{why} at {}; sampling goes on and resumes once it can be written",
                        clock::rfc3339_utc(now)
                    ),
                );
            }
            Err(_) => {}
        }
    }

    fn gpu_lost(&self, gpu: LostGpu) {
        let why = format!(
            "GPU {} ({}) fell off the bus at {}; its rows from then on are empty",
            gpu.index,
            gpu.uuid,
            clock::rfc3339_utc(gpu.at_ms)
        );
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(gpu);
        report(&self.failures, why);
    }
}

/// An open GPU source, the run's GPUs in it, and the metrics file.
struct Recorder {
    source: Box<dyn GpuSource>,
    gpus: Vec<GpuStatic>,
    indices: Vec<u32>,
    path: PathBuf,
    writer: MetricsWriter<Box<dyn MetricsSink>>,
    /// Bytes of whole batches in the file: a failed write is cut back to this.
    complete: u64,
    /// The run's GPUs already seen lost.
    lost: Vec<u32>,
    /// The run's own processes seen on its GPUs.
    pids: RunPids,
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
        let mut writer = (job.open)(&job.path)
            .and_then(MetricsWriter::new)
            .map_err(|e| format!("{} could not be created: {e}", job.path.display()))?;
        let complete = writer
            .get_mut()
            .position()
            .map_err(|e| format!("{} could not be created: {e}", job.path.display()))?;
        let indices: Vec<u32> = gpus.iter().map(|g| g.index).collect();
        let dir = job.path.parent().unwrap_or(Path::new("."));
        *lock(&job.xids) =
            super::xid_record::start(dir, source.as_ref(), &inventory.gpus, &indices);
        Ok(Recorder {
            pids: RunPids::new(dir, job.group),
            indices,
            source,
            gpus,
            path: job.path.clone(),
            writer,
            complete,
            lost: Vec::new(),
        })
    }

    /// One sample of the run's GPUs at `now_ms`, written and synced as one batch; the GPUs seen
    /// lost for the first time. A batch that could not be written whole is cut off again.
    fn record_once(&mut self, now_ms: u64) -> Result<Vec<LostGpu>, String> {
        let t = i64::try_from(now_ms).unwrap_or(i64::MAX);
        let samples: Vec<_> = self.gpus.iter().map(|g| self.source.sample(g)).collect();
        self.pids.note(
            samples
                .iter()
                .flat_map(|s| s.processes.iter().map(|p| (p.gpu_index, p.pid))),
        );
        let mut newly_lost = Vec::new();
        for (gpu, sample) in self.gpus.iter().zip(&samples) {
            if sample.lost && self.indices.contains(&gpu.index) && !self.lost.contains(&gpu.index) {
                self.lost.push(gpu.index);
                newly_lost.push(LostGpu {
                    index: gpu.index,
                    uuid: gpu.uuid.clone(),
                    at_ms: now_ms,
                });
            }
        }
        let rows = rows_from(t, &self.gpus, &samples, &self.indices);
        let written = self
            .writer
            .write_batch(&rows)
            .and_then(|()| self.writer.get_mut().position());
        match written {
            Ok(len) => {
                self.complete = len;
                Ok(newly_lost)
            }
            Err(e) => {
                // Half a batch would join the next one into a line no reader can parse.
                let _ = self.writer.get_mut().truncate_to(self.complete);
                Err(format!("{} could not be written: {e}", self.path.display()))
            }
        }
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

impl MetricsSink for SyncedFile {
    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)?;
        self.0.seek(SeekFrom::Start(len)).map(drop)
    }

    fn position(&mut self) -> io::Result<u64> {
        self.0.stream_position()
    }
}

#[cfg(test)]
mod tests {
    //! Tests of the sampler on the in-process simulation (GPUDECK_SIM is not set in unit tests: the
    //! default eight simulated GPUs) and of its refusals.

    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::runs::record::{RunRecord, RunState, RUN_SCHEMA};
    use crate::runs::recorded::samples::read_csv;
    use crate::runs::spec::Launcher;

    const DEADLINE: Duration = Duration::from_secs(30);

    fn record(gpus: Vec<RunGpu>, source: Option<GpuSourceChoice>) -> RunRecord {
        let text = serde_json::json!({
            "schema": RUN_SCHEMA, "id": "r", "name": "r", "launcher": Launcher::Single,
            "workdir": "/", "host": "h", "gpus": gpus, "ranks": [], "state": RunState::Running,
            "created_ms": 0, "gpu_source": source,
        });
        serde_json::from_value(text).expect("a record")
    }

    /// Simulated GPUs `indices`, as a run records them.
    fn sim_gpus(indices: &[u32]) -> Vec<RunGpu> {
        let mut source = GpuSourceChoice::Demo
            .open()
            .expect("the default simulation");
        let inventory = source.inventory().expect("inventory");
        indices
            .iter()
            .map(|&i| {
                let g = &inventory.gpus[i as usize];
                RunGpu {
                    index: g.index,
                    uuid: g.uuid.clone(),
                    name: g.name.clone(),
                }
            })
            .collect()
    }

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + DEADLINE;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn rows_in(dir: &Path) -> Vec<crate::runs::recorded::samples::MetricsRow> {
        let text = std::fs::read_to_string(dir.join(METRICS_FILE)).unwrap_or_default();
        if text.is_empty() {
            return Vec::new();
        }
        read_csv(&text).expect("a metrics CSV")
    }

    #[test]
    fn samples_only_the_runs_gpus_each_second_and_once_more_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let gpus = sim_gpus(&[2, 5]);
        let sampler = Sampler::start(
            dir.path(),
            &record(gpus.clone(), Some(GpuSourceChoice::Demo)),
        );
        wait_until("two samples", || rows_in(dir.path()).len() >= 4);
        let before_end = rows_in(dir.path()).len();
        assert_eq!(sampler.finish(), None);
        let rows = rows_in(dir.path());
        assert_eq!(rows.len(), before_end + 2, "one last sample of both GPUs");
        for pair in rows.chunks(2) {
            assert_eq!(pair[0].t_unix_ms, pair[1].t_unix_ms, "one batch per tick");
            assert_eq!((pair[0].gpu_index, pair[1].gpu_index), (2, 5));
            assert_eq!(pair[0].gpu_uuid, gpus[0].uuid);
            assert!(pair[0].util_pct.is_some() && pair[0].power_w.is_some());
            assert!(pair[0].mem_total_bytes.is_some_and(|m| m > 0));
        }
        let first_gap = rows[2].t_unix_ms - rows[0].t_unix_ms;
        assert!(
            (500..2500).contains(&first_gap),
            "ticks {first_gap} ms apart"
        );
        let mode = std::fs::metadata(dir.path().join(METRICS_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_record_without_a_source_says_so_and_writes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut sampler = Sampler::start(dir.path(), &record(sim_gpus(&[0]), None));
        let why = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(sampler.failure())
            .expect("a failure");
        assert!(why.contains("does not say which GPU source"), "{why}");
        assert_eq!(sampler.finish(), None, "already taken");
        assert!(!dir.path().join(METRICS_FILE).exists());
    }

    #[test]
    fn a_source_that_cannot_open_is_reported_at_the_end_if_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let choice = GpuSourceChoice::Nvml {
            library: Some("/nonexistent/libnvidia-ml.so.1".into()),
        };
        let sampler = Sampler::start(dir.path(), &record(sim_gpus(&[0]), Some(choice)));
        let why = sampler.finish().expect("the failure");
        assert!(
            why.contains("NVML (/nonexistent/libnvidia-ml.so.1) could not be opened"),
            "{why}"
        );
    }

    #[test]
    fn gpus_the_source_lacks_are_left_out_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut gpus = sim_gpus(&[1]);
        gpus.push(RunGpu {
            index: 7,
            uuid: "GPU-not-here".into(),
            name: "x".into(),
        });
        let sampler = Sampler::start(dir.path(), &record(gpus, Some(GpuSourceChoice::Demo)));
        wait_until("a sample", || !rows_in(dir.path()).is_empty());
        let why = sampler.finish().expect("the missing GPU");
        assert!(why.contains("GPU 7 (GPU-not-here) not among"), "{why}");
        assert!(rows_in(dir.path()).iter().all(|r| r.gpu_index == 1));

        let none = tempfile::tempdir().unwrap();
        let only_missing = vec![RunGpu {
            index: 7,
            uuid: "GPU-not-here".into(),
            name: "x".into(),
        }];
        let sampler = Sampler::start(
            none.path(),
            &record(only_missing, Some(GpuSourceChoice::Demo)),
        );
        assert!(sampler.finish().is_some_and(|w| w.contains("not among")));
        assert!(!none.path().join(METRICS_FILE).exists());
    }

    /// Made to fail by `a_full_disk_pauses_the_metrics_and_they_resume_once_there_is_room`.
    static DISK_FULL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// A metrics file on a disk that fills up while DISK_FULL is set: half a batch gets written,
    /// then ENOSPC, as a real full disk does.
    struct FillingDisk(File);

    impl Write for FillingDisk {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if DISK_FULL.load(std::sync::atomic::Ordering::SeqCst) {
                self.0.write_all(&buf[..buf.len() / 2])?;
                return Err(io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.0.write(buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            self.0.sync_data()
        }
    }

    impl MetricsSink for FillingDisk {
        fn truncate_to(&mut self, len: u64) -> io::Result<()> {
            self.0.set_len(len)?;
            self.0.seek(SeekFrom::Start(len)).map(drop)
        }

        fn position(&mut self) -> io::Result<u64> {
            self.0.stream_position()
        }
    }

    #[test]
    fn a_full_disk_pauses_the_metrics_and_they_resume_once_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let mut sampler = Sampler::start_with(
            dir.path(),
            &record(sim_gpus(&[0, 1]), Some(GpuSourceChoice::Demo)),
            |path| {
                let file = File::create(path)?;
                Ok(Box::new(FillingDisk(file)) as Box<dyn MetricsSink>)
            },
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        wait_until("two samples", || rows_in(dir.path()).len() >= 4);
        DISK_FULL.store(true, std::sync::atomic::Ordering::SeqCst);
        let failed = rt.block_on(sampler.failure()).expect("the failed write");
        assert!(
            failed.contains("metrics.csv could not be written")
                && failed.contains("No space left on device")
                && failed.contains("resumes once it can be written"),
            "{failed}"
        );
        let before = rows_in(dir.path()).len();
        DISK_FULL.store(false, std::sync::atomic::Ordering::SeqCst);
        let resumed = rt.block_on(sampler.failure()).expect("the resumption");
        assert!(resumed.contains("written again from"), "{resumed}");
        wait_until("samples again", || rows_in(dir.path()).len() >= before + 4);
        assert_eq!(sampler.finish(), None, "one report each, already taken");
        // Every line whole: the half batches were cut off again.
        let text = std::fs::read_to_string(dir.path().join(METRICS_FILE)).unwrap();
        let rows = read_csv(&text).expect("no torn line in the middle");
        assert!(text.ends_with('\n'));
        assert_eq!(rows.len() % 2, 0, "whole batches only");
        for pair in rows.chunks(2) {
            assert_eq!((pair[0].gpu_index, pair[1].gpu_index), (0, 1));
            assert_eq!(pair[0].t_unix_ms, pair[1].t_unix_ms);
        }
    }
}
