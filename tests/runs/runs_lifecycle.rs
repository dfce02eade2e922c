//! The life of a run end to end on four simulated GPUs: stopping, detachment from the launching
//! process, SIGTERM to the supervisor, a killed (lost) supervisor, and following logs.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;

use support::runs::{
    gpudeck, group_alive, listed, log, output, record, session_of, start, wait_state, wait_until,
    DEADLINE,
};
use support::{stderr, stdout, Dirs};

/// Each line a child prints, as it prints it; the channel closes when its output ends.
fn lines_of(out: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Prints a line every 0.1 s until stopped.
const FOREVER: &str = "while true; do echo tick; sleep 0.1; done";

#[test]
fn stop_ends_the_whole_group_and_records_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(
        &dirs,
        &["--name", "long", "--gpus", "1", "--", "sh", "-c", FOREVER],
    );
    wait_until("the first tick", || {
        log(&dirs, &id, 0, "stdout").contains("tick")
    });
    let pgid = record(&dirs, &id)["process_group"]["pid"]
        .as_i64()
        .expect("pgid");
    assert!(group_alive(pgid));
    let out = output(&dirs, &["stop", "long", "--grace", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("stopped"), "{}", stderr(&out));
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "stopped");
    assert_eq!(rec["exit_code"], 130, "{rec}");
    assert_eq!(rec["ranks"][0]["exit_code"], 130);
    assert!(rec["ended_ms"].as_u64().is_some());
    assert!(!group_alive(pgid), "the process group outlived the stop");

    let again = output(&dirs, &["stop", &id]);
    assert!(again.status.success());
    assert!(
        stderr(&again).contains("has already finished: stopped"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_run_outlives_its_launcher_in_its_own_session_and_sigterm_stops_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    // `start` waits for `gpudeck run` to exit: from here on, the launching process is gone.
    let (id, _guard) = start(
        &dirs,
        &[
            "--gpus",
            "0,3",
            "--launcher",
            "per-gpu",
            "--",
            "sh",
            "-c",
            FOREVER,
        ],
    );
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "running");
    let lines = log(&dirs, &id, 1, "stdout").lines().count();
    wait_until("more output after gpudeck run exited", || {
        log(&dirs, &id, 1, "stdout").lines().count() > lines + 2
    });
    let supervisor = rec["supervisor"]["pid"].as_i64().expect("supervisor pid");
    // SAFETY: getsid(0) asks for this process's own session.
    let ours = i64::from(unsafe { libc::getsid(0) });
    assert_eq!(
        session_of(supervisor),
        supervisor,
        "the supervisor leads its own session"
    );
    assert_ne!(session_of(supervisor), ours);
    let pgid = rec["process_group"]["pid"].as_i64().expect("pgid");
    assert_ne!(pgid, supervisor, "the ranks have a group of their own");

    // SAFETY: kill(2) on the supervisor this test started.
    unsafe { libc::kill(supervisor as i32, libc::SIGTERM) };
    let rec = wait_state(&dirs, &id, "stopped");
    assert!(rec["ranks"][0]["exit_code"].as_i64().is_some(), "{rec}");
    assert!(rec["ranks"][1]["exit_code"].as_i64().is_some(), "{rec}");
    assert!(!group_alive(pgid));
}

#[test]
fn a_killed_supervisor_shows_as_lost_and_stop_still_works() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(&dirs, &["--gpus", "1", "--", "sh", "-c", FOREVER]);
    let rec = record(&dirs, &id);
    let supervisor = rec["supervisor"]["pid"].as_i64().expect("supervisor pid");
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe { libc::kill(supervisor as i32, libc::SIGKILL) };
    wait_until("the run to show as lost", || {
        listed(&dirs, &id)["state"] == "lost"
    });
    assert_eq!(
        record(&dirs, &id)["state"],
        "running",
        "lost is derived, never written"
    );
    let table = stdout(&output(&dirs, &["runs"]));
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("lost")),
        "{table}"
    );

    // The ranks write to their files themselves, so they carry on without the supervisor.
    let lines = log(&dirs, &id, 0, "stdout").lines().count();
    wait_until("output after the supervisor died", || {
        log(&dirs, &id, 0, "stdout").lines().count() > lines + 2
    });
    let pgid = rec["process_group"]["pid"].as_i64().expect("pgid");
    let out = output(&dirs, &["stop", &id, "--grace", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(record(&dirs, &id)["state"], "stopped");
    assert!(!group_alive(pgid));
}

#[test]
fn logs_follow_returns_when_the_run_ends() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let gate = dirs.root.path().join("go");
    let script = format!(
        "echo begin; while [ ! -e '{}' ]; do sleep 0.05; done; echo end; echo oops >&2",
        gate.display()
    );
    let (id, _guard) = start(&dirs, &["--gpus", "1", "--", "sh", "-c", &script]);
    wait_until("the first line", || {
        log(&dirs, &id, 0, "stdout").contains("begin")
    });
    let mut follower = gpudeck(&dirs, &["logs", &id, "-f"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpudeck logs -f");
    let lines = lines_of(follower.stdout.take().expect("piped"));
    // Once it has printed the first line it is following: the run was still going.
    assert_eq!(
        lines.recv_timeout(DEADLINE).expect("the first line"),
        "begin"
    );
    std::fs::write(&gate, "").unwrap();
    assert_eq!(lines.recv_timeout(DEADLINE).expect("the line after"), "end");
    assert!(
        lines.recv_timeout(DEADLINE).is_err(),
        "the follower ends with the run"
    );
    let status = follower.wait().expect("gpudeck logs -f ends");
    assert!(status.success());
    assert_eq!(record(&dirs, &id)["state"], "succeeded");
    let err = output(&dirs, &["logs", &id, "--stderr"]);
    assert_eq!(stdout(&err), "oops\n");
}
