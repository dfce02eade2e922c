//! Driving `gpudeck run/runs/logs/stop` on the simulator: start a run, read its record, wait on
//! its state with a deadline, and make sure no rank outlives its test.

// libc: the test's own uid, gid and session, pipes, and signals to processes it started.
#![allow(unsafe_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{stderr, stdout, Dirs};

/// Four simulated GPUs, as every run test uses.
pub const SIM: &str = "gpus=4";
/// Long enough for a loaded CI machine; tests finish as soon as the condition holds.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// `gpudeck --demo ARGS` with isolated dirs.
pub fn gpudeck(dirs: &Dirs, args: &[&str]) -> Command {
    let mut cmd = dirs.gpudeck(SIM);
    cmd.arg("--demo").args(args);
    cmd
}

pub fn output(dirs: &Dirs, args: &[&str]) -> Output {
    gpudeck(dirs, args).output().expect("gpudeck runs")
}

/// Starts a run and returns its id, with a guard that kills its ranks when the test ends.
pub fn start(dirs: &Dirs, args: &[&str]) -> (String, GroupGuard) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    start_with(dirs, gpudeck(dirs, &all))
}

pub fn start_with(dirs: &Dirs, mut cmd: Command) -> (String, GroupGuard) {
    let out = cmd.output().expect("gpudeck runs");
    assert!(
        out.status.success(),
        "gpudeck run failed: {}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let id = stdout(&out).trim().to_string();
    assert!(!id.is_empty(), "no run id printed: {}", stderr(&out));
    let guard = GroupGuard(record(dirs, &id)["process_group"]["pid"].as_i64());
    (id, guard)
}

pub fn run_dir(dirs: &Dirs, id: &str) -> PathBuf {
    dirs.root.path().join("data").join("runs").join(id)
}

/// `run.json` as written.
pub fn record(dirs: &Dirs, id: &str) -> Value {
    let text = std::fs::read_to_string(run_dir(dirs, id).join("run.json")).expect("run.json");
    serde_json::from_str(&text).expect("run.json is JSON")
}

/// The run as `gpudeck runs --json` shows it (its state derived: `lost`).
pub fn listed(dirs: &Dirs, id: &str) -> Value {
    let out = output(dirs, &["runs", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("runs --json is JSON");
    doc["runs"]
        .as_array()
        .expect("runs[]")
        .iter()
        .find(|r| r["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} is not listed: {doc}"))
}

pub fn log(dirs: &Dirs, id: &str, rank: usize, stream: &str) -> String {
    std::fs::read_to_string(run_dir(dirs, id).join(format!("rank-{rank}.{stream}.log")))
        .unwrap_or_default()
}

/// Polls `done` until it holds; panics with `what` when the deadline passes.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `run.json` records `state`, then returns the record.
pub fn wait_state(dirs: &Dirs, id: &str, state: &str) -> Value {
    wait_until(&format!("{id} to be {state}"), || {
        record(dirs, id)["state"] == state
    });
    record(dirs, id)
}

/// Whether any process that is not a zombie is in the group.
pub fn group_alive(pgid: i64) -> bool {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
        })
}

/// The session a process belongs to (field 6 of /proc/PID/stat).
pub fn session_of(pid: i64) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = &stat[stat.rfind(')').expect(")") + 2..];
    rest.split_whitespace()
        .nth(3)
        .expect("session")
        .parse()
        .expect("number")
}

/// Kills a run's process group when the test ends, pass or fail, so no rank outlives it.
pub struct GroupGuard(pub Option<i64>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.filter(|p| *p > 1) {
            // SAFETY: kill(2) on a process group this test started; no memory is touched.
            unsafe {
                libc::kill(-(pgid as i32), libc::SIGKILL);
            }
        }
    }
}
