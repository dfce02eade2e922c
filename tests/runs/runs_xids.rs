//! Xids tied to the runs they hit, end to end on simulated GPUs: the supervisor watches the
//! run's GPUs through the simulator's event API while the run lives, records each Xid of its
//! own GPUs in `xids.jsonl`, and a run that then fails says in `gpudeck runs`, `runs --json`
//! and `export` which Xid hit it, when, what it means, what to do and whose fault it was.

use crate::support;

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use support::metrics::gpus_json;
use support::runs::{listed, output, run_dir, start_with, wait_state, wait_until};
use support::{stdout, Dirs};

/// GPU 1 falls off the bus 1.5 s into the supervisor's life; GPU 2, not the run's, faults too.
const SIM: &str = "gpus=4,xid=1:79@1.5;2:13@1.5";

#[test]
fn a_run_that_fails_after_its_gpu_fell_off_the_bus_blames_the_machine() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let gate = dirs.root.path().join("go");
    // The rank fails once the test has seen the Xid recorded: no race with the simulator.
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exit 3",
        gate.display()
    );
    let mut run = dirs.gpudeck(SIM);
    run.args(["--demo", "run", "--gpus", "1", "--", "sh", "-c", &script]);
    let (id, _guard) = start_with(&dirs, run);
    let xids = run_dir(&dirs, &id).join("xids.jsonl");
    wait_until("the Xid to be recorded", || xids.exists());
    std::fs::write(&gate, "").unwrap();
    let rec = wait_state(&dirs, &id, "failed");

    // The record: one line, GPU 1's Xid 79 only, private.
    let text = std::fs::read_to_string(&xids).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let mut gpus = dirs.gpudeck(SIM);
    gpus.arg("--demo");
    let bus = gpus_json(gpus)[1]["pci_bus_id"].clone();
    assert_eq!(
        (&lines[0]["gpu"], &lines[0]["xid"], &lines[0]["pci_bus_id"]),
        (&Value::from(1), &Value::from(79), &bus)
    );
    assert_eq!(lines[0]["uuid"], rec["gpus"][0]["uuid"]);
    let mode = std::fs::metadata(&xids).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // runs --json: the attribution, structured.
    let run = listed(&dirs, &id);
    let hits = run["xids"].as_array().expect("xids[]");
    assert_eq!(hits.len(), 1, "{run}");
    let hit = &hits[0];
    assert_eq!(hit["xid"], 79);
    assert_eq!(hit["gpu"], 1);
    assert_eq!(hit["pci_bus_id"], bus);
    assert_eq!(hit["source"], "live");
    assert_eq!(hit["attribution"], "machine");
    assert_eq!(hit["class"], "bus-power");
    assert_eq!(hit["severity"], "fail");
    assert_eq!(hit["name"], "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
    assert!(hit["meaning"]
        .as_str()
        .unwrap()
        .starts_with("the GPU has fallen off the bus"));
    assert!(hit["action"]
        .as_str()
        .unwrap()
        .starts_with("Reboot the machine"));
    let at = hit["at_ms"].as_u64().unwrap();
    let died = rec["ranks"][0]["ended_ms"].as_u64().expect("rank 0's end");
    assert!(
        rec["started_ms"].as_u64().unwrap() <= at && at <= died,
        "{rec}"
    );
    let before = hit["seconds_before_end"].as_f64().unwrap();
    assert!(
        (before - (died - at) as f64 / 1000.0).abs() < 1e-6,
        "{before}"
    );
    let summary = hit["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("GPU 1 reported Xid 79 (the GPU has fallen off the bus) at ")
            && summary.ends_with("before rank 0 died: the machine, not your code."),
        "{summary}"
    );

    // gpudeck runs: a marker in the table and the finding under it, whole at 80 columns.
    let mut table = dirs.gpudeck(SIM);
    table.env("COLUMNS", "80").arg("runs");
    let out = table.output().unwrap();
    let text = stdout(&out);
    assert!(text.contains("failed (Xid 79)"), "{text}");
    assert!(
        text.contains(&format!("{id}: GPU 1 reported Xid 79")),
        "{text}"
    );
    assert!(text.contains("the machine, not your code."), "{text}");
    assert!(text.contains("Do: Reboot the machine"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    // export: the same findings.
    let out = output(&dirs, &["export", &id, "--format", "json"]);
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("an export");
    assert_eq!(doc["xids"], run["xids"]);
}

#[test]
fn a_failed_run_on_another_gpu_than_the_xids_carries_none() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let mut run = dirs.gpudeck(SIM);
    // GPU 0: neither Xid is its; the run fails all the same.
    run.args([
        "--demo",
        "run",
        "--gpus",
        "0",
        "--",
        "sh",
        "-c",
        "sleep 2.5; exit 1",
    ]);
    let (id, _guard) = start_with(&dirs, run);
    wait_state(&dirs, &id, "failed");
    assert!(!run_dir(&dirs, &id).join("xids.jsonl").exists());
    assert_eq!(listed(&dirs, &id)["xids"], Value::Array(Vec::new()));
}
