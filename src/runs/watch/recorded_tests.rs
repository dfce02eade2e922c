//! Tests of reading a run's records back: metrics with a torn last line, the summary's window
//! for each state, progress from logs (bars redrawn with `\r`, overlong lines) and the spec.

use super::*;
use crate::runs::record::RUN_SCHEMA;
use crate::runs::spec::Launcher;
use crate::runs::watch::samples::{csv_line, CSV_HEADER};

fn record(state: RunState, started: Option<u64>, ended: Option<u64>) -> RunRecord {
    let value = serde_json::json!({
        "schema": RUN_SCHEMA, "id": "r", "name": "r", "launcher": Launcher::Single,
        "workdir": "/w", "host": "h", "ranks": [], "state": state, "created_ms": 0,
        "started_ms": started, "ended_ms": ended,
        "gpus": [{"index": 3, "uuid": "GPU-3", "name": "H100"}],
    });
    serde_json::from_value(value).expect("a record")
}

fn row(t: i64, util: u32) -> MetricsRow {
    MetricsRow {
        t_unix_ms: t,
        gpu_index: 3,
        gpu_uuid: "GPU-3".into(),
        util_pct: Some(util),
        mem_used_bytes: Some(1 << 30),
        mem_total_bytes: Some(80 << 30),
        power_w: Some(100.0),
        temp_c: Some(50),
        sm_clock_mhz: Some(1400),
    }
}

/// A busy second, then an idle one: half busy over two seconds.
fn half_busy() -> Vec<MetricsRow> {
    vec![row(11_000, 90), row(12_000, 0)]
}

fn run_in(dir: &Path, record: RunRecord) -> Run {
    Run {
        dir: dir.to_path_buf(),
        record,
    }
}

#[test]
fn a_finished_run_is_summarised_from_its_start_to_its_end() {
    let rec = record(RunState::Succeeded, Some(10_000), Some(12_000));
    let summary = summary_of(&rec, RunState::Succeeded, &half_busy(), 99_000).expect("summary");
    assert_eq!((summary.started_ms, summary.ended_ms), (10_000, 12_000));
    assert_eq!(summary.gpu_seconds_allocated, 2.0);
    assert_eq!(summary.busy_ratio, Some(0.5));
    assert_eq!(summary.gpus[0].gpu_index, 3);
}

#[test]
fn a_live_run_ends_now_and_a_lost_one_at_its_last_sample() {
    let rec = record(RunState::Running, Some(10_000), None);
    let live = summary_of(&rec, RunState::Running, &half_busy(), 14_000).expect("summary");
    assert_eq!(live.ended_ms, 14_000);
    let lost = summary_of(&rec, RunState::Lost, &half_busy(), 14_000).expect("summary");
    assert_eq!(lost.ended_ms, 12_000);
}

#[test]
fn no_start_or_no_rows_is_no_summary() {
    let unstarted = record(RunState::Starting, None, None);
    assert_eq!(
        summary_of(&unstarted, RunState::Starting, &half_busy(), 1),
        None
    );
    let rec = record(RunState::Succeeded, Some(10_000), Some(12_000));
    assert_eq!(summary_of(&rec, RunState::Succeeded, &[], 1), None);
}

#[test]
fn metrics_keep_complete_rows_and_drop_a_torn_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(
        dir.path(),
        record(RunState::Succeeded, Some(10_000), Some(12_000)),
    );
    assert!(run.metrics().unwrap().is_none(), "no file, no metrics");
    assert!(run.summary(0).unwrap().is_none());
    let rows = half_busy();
    let mut text = format!(
        "{CSV_HEADER}\n{}\n{}\n",
        csv_line(&rows[0]),
        csv_line(&rows[1])
    );
    text.push_str("13000,3,GPU-3,4");
    std::fs::write(dir.path().join(METRICS_FILE), &text).unwrap();
    assert_eq!(run.metrics().unwrap(), Some(rows));
    assert_eq!(
        run.summary(0).unwrap().and_then(|s| s.busy_ratio),
        Some(0.5)
    );

    std::fs::write(dir.path().join(METRICS_FILE), "not,a,metrics,file\n1,2\n").unwrap();
    let err = run.metrics().unwrap_err();
    assert!(matches!(err, RunError::BadMetrics { .. }), "{err}");
    assert!(
        err.to_string().contains("has no `t_unix_ms` column"),
        "{err}"
    );
}

#[test]
fn lines_split_at_newlines_and_carriage_returns_and_overlong_ones_are_skipped() {
    let long = "x".repeat(MAX_LINE_BYTES + 1);
    let text = format!("a\nb\rc\r\n{long}\nd\n{long}");
    let mut lines = Vec::new();
    // A reader that hands out 7 bytes at a time, so lines cross its buffer.
    let reader = BufReader::with_capacity(7, text.as_bytes());
    for_each_line(reader, |l| {
        lines.push(String::from_utf8_lossy(l).into_owned())
    })
    .unwrap();
    assert_eq!(lines, ["a", "b", "c", "", "d"]);
}

#[test]
fn progress_comes_from_rank_0s_stdout_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), record(RunState::Running, Some(0), None));
    std::fs::write(
        run.log_path(0, LogStream::Stdout),
        "step=1 loss=2.0\nstep=2 loss=1.5\n",
    )
    .unwrap();
    std::fs::write(run.log_path(0, LogStream::Stderr), "step=3 loss=1.0\n").unwrap();
    std::fs::write(run.log_path(1, LogStream::Stdout), "step=9 loss=9.0\n").unwrap();
    let tracker = run.progress(64).unwrap();
    assert_eq!(tracker.series("loss"), [(1.0, 2.0), (2.0, 1.5), (3.0, 1.0)]);
    assert_eq!(tracker.latest().and_then(|e| e.step), Some(3));
}

#[test]
fn the_spec_is_read_back_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), record(RunState::Succeeded, Some(0), Some(1)));
    std::fs::write(
        dir.path().join(SPEC_FILE),
        "command = [\"python\", \"t.py\"]\ngpus = \"0,1\"\nlauncher = \"per-gpu\"\n",
    )
    .unwrap();
    let spec = run.spec().unwrap();
    assert_eq!(spec.command, ["python", "t.py"]);
    assert_eq!(spec.gpus.to_string(), "0,1");
    assert_eq!(spec.launcher, Launcher::PerGpu);
    assert_eq!(spec.workdir, None);
}
