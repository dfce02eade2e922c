//! Reading a run's metrics in tests: the frozen simulation whose every sample is known, the rows
//! of a metrics file, and the check that rows hold the simulation's values.

use std::process::{Command, Output};

use serde_json::Value;

use super::runs::run_dir;
use super::{stdout, Dirs};

/// Four GPUs standing still at 300 s: GPU 1 trains at 93 %, GPU 3 idles at 0 %.
pub const FROZEN: &str = "gpus=4,frozen=300";
pub const CSV_HEADER: &str =
    "t_unix_ms,gpu_index,gpu_uuid,util_pct,mem_used_bytes,mem_total_bytes,power_w,temp_c,sm_clock_mhz";

/// `gpudeck --demo ARGS` on the frozen simulation.
pub fn demo(dirs: &Dirs, args: &[&str]) -> Command {
    let mut cmd = dirs.gpudeck(FROZEN);
    cmd.arg("--demo").args(args);
    cmd
}

/// Runs a command to its end.
pub fn out(mut cmd: Command) -> Output {
    cmd.output().expect("gpudeck runs")
}

/// The run's metrics.csv as it is now (empty before it exists).
pub fn metrics_text(dirs: &Dirs, id: &str) -> String {
    std::fs::read_to_string(run_dir(dirs, id).join("metrics.csv")).unwrap_or_default()
}

/// The complete data lines of a metrics file, split into fields.
pub fn rows(text: &str) -> Vec<Vec<String>> {
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    complete
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

/// A row's time.
pub fn t_of(row: &[String]) -> i64 {
    row[0].parse().expect("a time")
}

/// `gpudeck gpus --json`'s GPUs, as the same source sees them.
pub fn gpus_json(mut cmd: Command) -> Vec<Value> {
    let o = out({
        cmd.args(["gpus", "--json"]);
        cmd
    });
    let doc: Value = serde_json::from_str(&stdout(&o)).expect("gpus --json");
    doc["gpus"].as_array().expect("gpus[]").clone()
}

/// Each row holds the frozen simulation's values of its GPU, and the batches hold `indices`.
pub fn assert_rows_match(rows: &[Vec<String>], gpus: &[Value], indices: &[u32]) {
    assert!(!rows.is_empty());
    for batch in rows.chunks(indices.len()) {
        let got: Vec<u32> = batch.iter().map(|r| r[1].parse().unwrap()).collect();
        assert_eq!(got, indices, "one row per run GPU per tick: {batch:?}");
        assert!(batch.iter().all(|r| r[0] == batch[0][0]), "{batch:?}");
        for row in batch {
            let gpu = &gpus[row[1].parse::<usize>().unwrap()];
            let want = [
                gpu["uuid"].as_str().unwrap().to_string(),
                gpu["util_gpu_pct"].to_string(),
                gpu["memory_used_bytes"].to_string(),
                gpu["memory_total_bytes"].to_string(),
                gpu["power_w"].to_string(),
                gpu["temp_c"].to_string(),
                gpu["sm_clock_mhz"].to_string(),
            ];
            assert_eq!(row[2..], want, "{row:?}");
        }
    }
}

/// Unix milliseconds, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
