//! Tests of the sampler on the in-process simulation (GPUDECK_SIM is not set in unit tests: the
//! default eight simulated GPUs) and of its refusals.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use super::*;
use crate::runs::record::{RunRecord, RunState, RUN_SCHEMA};
use crate::runs::spec::Launcher;
use crate::runs::watch::samples::read_csv;

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

fn rows_in(dir: &Path) -> Vec<crate::runs::watch::samples::MetricsRow> {
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
