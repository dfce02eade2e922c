//! The life of a container run on the real engine: `gpudeck stop`, SIGTERM to the supervisor, and
//! a SIGKILLed supervisor: the container runs on, `gpudeck runs` shows it running and settles the
//! run once the container ends (output caught up, exit code recorded, container removed), and
//! `gpudeck stop` still stops it; on an engine that cannot be reached it stays `lost`. The engine
//! going away (a socket proxy cut and restored) never ends a run early.

use crate::support;

use gpudeck::shell::GpuPlumbing;
use support::docker::{docker, engine_or_skip};
use support::docker_cleanup::Cleanup;
use support::engine_proxy::Proxy;
use support::run_containers::{
    assert_ticks_then_bye, containers_of, inspect, kill_supervisor, per_gpu_run_dir, start_in,
    supervisor_of, workdir, RunContainers, GATED,
};
use support::runs::{listed, log, output, record, run_dir, wait_state, wait_until};
use support::{stderr, stdout, Dirs};

#[test]
fn stop_ends_a_long_container_run_and_records_stopped() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("stop_ends_a_long_container_run_and_records_stopped") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    let id = start_in(
        &dirs,
        &image,
        &work,
        &["--name", "long", "--gpus", "none"],
        GATED,
    );
    let _containers = RunContainers(id.clone());
    wait_until("the first tick", || {
        log(&dirs, &id, 0, "stdout").contains("tick 1")
    });
    assert_eq!(containers_of(&id).len(), 1);
    let out = output(&dirs, &["stop", "long", "--grace", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stopped (last signal needed: SIGINT)"),
        "{}",
        stderr(&out)
    );
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "stopped", "{rec}");
    // SIGINT reached the command through the container's init: 128 + 2.
    assert_eq!(rec["exit_code"], 130, "{rec}");
    assert_eq!(rec["ranks"][0]["exit_code"], 130);
    assert!(containers_of(&id).is_empty(), "removed after the stop");
    let again = output(&dirs, &["stop", &id]);
    assert!(
        stderr(&again).contains("has already finished: stopped"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn a_killed_supervisor_leaves_the_container_running_and_runs_settles_it_when_it_ends() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip(
        "a_killed_supervisor_leaves_the_container_running_and_runs_settles_it_when_it_ends",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (work_dir, work) = workdir();
    let dirs = Dirs::new();
    let id = start_in(&dirs, &image, &work, &["--gpus", "none"], GATED);
    let _containers = RunContainers(id.clone());
    wait_until("the first tick", || {
        log(&dirs, &id, 0, "stdout").contains("tick 1")
    });
    kill_supervisor(&dirs, &id);
    let container = containers_of(&id).pop().expect("the container");
    assert_eq!(inspect(&container)["State"]["Running"], true, "it runs on");
    assert_eq!(
        listed(&dirs, &id)["state"],
        "running",
        "derived from the container"
    );
    assert_eq!(record(&dirs, &id)["state"], "running");
    let table = stdout(&output(&dirs, &["runs"]));
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("running")),
        "{table}"
    );

    std::fs::write(work_dir.path().join("gate"), "").unwrap();
    wait_until("the container to exit", || {
        inspect(&container)["State"]["Running"] == false
    });
    let settled = listed(&dirs, &id);
    assert_eq!(settled["state"], "failed", "{settled}");
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "failed", "written once settled");
    assert_eq!(rec["exit_code"], 4);
    assert_eq!(rec["ranks"][0]["exit_code"], 4);
    assert!(
        rec["error"]
            .as_str()
            .unwrap()
            .contains("supervisor was gone"),
        "{rec}"
    );
    // What the container printed while nobody was attached was caught up from its log.
    assert_ticks_then_bye(&log(&dirs, &id, 0, "stdout"));
    assert!(containers_of(&id).is_empty(), "removed once settled");
}

#[test]
fn stop_after_a_killed_supervisor_stops_the_container_and_records_stopped() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("stop_after_a_killed_supervisor_stops_the_container_and_records_stopped") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    let id = start_in(&dirs, &image, &work, &["--gpus", "none"], GATED);
    let _containers = RunContainers(id.clone());
    wait_until("the first tick", || {
        log(&dirs, &id, 0, "stdout").contains("tick 1")
    });
    kill_supervisor(&dirs, &id);
    let before = log(&dirs, &id, 0, "stdout").lines().count();
    let container = containers_of(&id).pop().expect("the container");
    wait_until("more output in the engine's log", || {
        docker(&["logs", &container]).lines().count() > before + 2
    });
    let out = output(&dirs, &["stop", &id, "--grace", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "stopped", "{rec}");
    assert_eq!(rec["ranks"][0]["exit_code"], 130, "{rec}");
    assert!(containers_of(&id).is_empty());
    let text = log(&dirs, &id, 0, "stdout");
    assert!(text.lines().count() > before + 2, "caught up: {text}");
    let numbers: Vec<&str> = text.lines().collect();
    for (n, line) in numbers.iter().enumerate() {
        assert_eq!(*line, format!("tick {}", n + 1), "{text}");
    }
}

#[test]
fn sigterm_to_the_supervisor_stops_the_container_and_records_stopped() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("sigterm_to_the_supervisor_stops_the_container_and_records_stopped") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    let id = start_in(&dirs, &image, &work, &["--gpus", "none"], GATED);
    let _containers = RunContainers(id.clone());
    wait_until("the first tick", || {
        log(&dirs, &id, 0, "stdout").contains("tick 1")
    });
    let supervisor = supervisor_of(&dirs, &id);
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe { libc::kill(supervisor.pid as i32, libc::SIGTERM) };
    let rec = wait_state(&dirs, &id, "stopped");
    assert_eq!(rec["ranks"][0]["exit_code"], 130, "{rec}");
    assert!(containers_of(&id).is_empty());
}

#[test]
fn a_lost_container_run_on_an_unreachable_engine_stays_lost_with_a_warning() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let work = tempfile::tempdir().expect("tempdir");
    let dir = per_gpu_run_dir(&dirs, "busybox", work.path(), GpuPlumbing::None, "true");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let mut rec = record(&dirs, &id);
    rec["state"] = "running".into();
    // A pid no process has: the supervisor is gone.
    rec["supervisor"] = serde_json::json!({ "pid": 4_194_304_u32 + 7, "start_ticks": 1 });
    rec["container"]["engine"] = "unix:///nonexistent/docker.sock".into();
    std::fs::write(dir.join("run.json"), rec.to_string()).unwrap();
    let out = output(&dirs, &["runs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with(&id) && l.contains("lost")),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(&format!("{id}: its containers could not be looked at")),
        "{}",
        stderr(&out)
    );
    assert_eq!(record(&dirs, &id)["state"], "running", "nothing written");
}

/// The run's supervisor.log, its lines (wrapped at 80 columns) joined back up.
fn supervisor_log(dirs: &Dirs, id: &str) -> String {
    let text =
        std::fs::read_to_string(run_dir(dirs, id).join("supervisor.log")).unwrap_or_default();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Waits until run.json says whether the supervisor is waiting for the engine; the record.
fn wait_engine_away(dirs: &Dirs, id: &str, away: bool) -> serde_json::Value {
    wait_until(&format!("engine_away to be set: {away}"), || {
        record(dirs, id)["container"]["engine_away"].is_object() == away
    });
    record(dirs, id)
}

#[test]
fn the_engine_going_away_and_coming_back_never_ends_a_container_run_early() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("the_engine_going_away_and_coming_back_never_ends_a_container_run_early") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (work_dir, work) = workdir();
    let dirs = Dirs::new();
    let sockets = tempfile::tempdir().expect("tempdir");
    let sock = sockets.path().join("docker.sock");
    let host = format!("unix://{}", sock.display());
    let proxy = Proxy::start(&sock);
    let id = start_in(
        &dirs,
        &image,
        &work,
        &["--gpus", "none", "--docker-host", &host],
        GATED,
    );
    let _containers = RunContainers(id.clone());
    wait_until("the first tick", || {
        log(&dirs, &id, 0, "stdout").contains("tick 1")
    });
    let container = containers_of(&id).pop().expect("the container");

    // The engine goes away: the run goes on, and says so.
    proxy.cut();
    let rec = wait_engine_away(&dirs, &id, true);
    assert_eq!(rec["state"], "running", "{rec}");
    assert!(rec["exit_code"].is_null(), "{rec}");
    assert!(rec["container"]["engine_away"]["detail"].is_string());
    assert!(
        supervisor_log(&dirs, &id).contains("went away"),
        "{}",
        supervisor_log(&dirs, &id)
    );
    let at_cut = log(&dirs, &id, 0, "stdout").lines().count();
    wait_until("output written while the engine is away", || {
        docker(&["logs", &container]).lines().count() > at_cut + 5
    });
    assert_eq!(record(&dirs, &id)["state"], "running");

    // It comes back: the supervisor reconnects and follows the output again, live.
    let proxy = Proxy::start(&sock);
    wait_engine_away(&dirs, &id, false);
    assert!(
        supervisor_log(&dirs, &id).contains("is back after"),
        "{}",
        supervisor_log(&dirs, &id)
    );
    let engine_now = docker(&["logs", &container]).lines().count();
    wait_until(
        "the log file to pass what the engine had when it came back",
        || log(&dirs, &id, 0, "stdout").lines().count() > engine_now,
    );

    // Away again, and the container ends meanwhile: its real exit code is recorded later.
    proxy.cut();
    wait_engine_away(&dirs, &id, true);
    std::fs::write(work_dir.path().join("gate"), "").unwrap();
    wait_until("the container to exit", || {
        inspect(&container)["State"]["Running"] == false
    });
    assert_eq!(record(&dirs, &id)["state"], "running", "not ended early");
    let proxy = Proxy::start(&sock);
    let rec = wait_state(&dirs, &id, "failed");
    assert_eq!(rec["exit_code"], 4, "the real exit code: {rec}");
    assert_eq!(rec["ranks"][0]["exit_code"], 4);
    assert!(rec["container"]["engine_away"].is_null(), "{rec}");
    // Every line, the ones written while the engine was away too, once each, in order.
    assert_ticks_then_bye(&log(&dirs, &id, 0, "stdout"));
    assert!(
        containers_of(&id).is_empty(),
        "removed once the engine was back"
    );
    proxy.cut();
}

#[test]
fn a_stop_while_the_engine_is_away_is_carried_out_once_it_is_back() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_stop_while_the_engine_is_away_is_carried_out_once_it_is_back") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    let sockets = tempfile::tempdir().expect("tempdir");
    let sock = sockets.path().join("docker.sock");
    let host = format!("unix://{}", sock.display());
    let proxy = Proxy::start(&sock);
    let id = start_in(
        &dirs,
        &image,
        &work,
        &["--gpus", "none", "--docker-host", &host],
        GATED,
    );
    let _containers = RunContainers(id.clone());
    wait_until("the first tick", || {
        log(&dirs, &id, 0, "stdout").contains("tick 1")
    });
    let container = containers_of(&id).pop().expect("the container");
    proxy.cut();
    wait_engine_away(&dirs, &id, true);
    // `gpudeck stop` cannot reach the engine: it tells the supervisor, which waits for it.
    let out = output(&dirs, &["stop", &id, "--grace", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.contains(&format!("so the containers of {id} cannot be stopped now;"))
            && said.contains("its supervisor was told to stop them once the engine is back"),
        "{said}"
    );
    assert!(
        said.lines()
            .all(|l| l.chars().count() <= 80 || l.contains(&host)),
        "{said}"
    );
    wait_until("the supervisor to say it stops the ranks", || {
        supervisor_log(&dirs, &id).contains("stopping the ranks")
    });
    assert_eq!(inspect(&container)["State"]["Running"], true, "runs on");
    assert_eq!(record(&dirs, &id)["state"], "running");
    let proxy = Proxy::start(&sock);
    let rec = wait_state(&dirs, &id, "stopped");
    assert_eq!(rec["ranks"][0]["exit_code"], 130, "{rec}");
    assert!(
        containers_of(&id).is_empty(),
        "removed once the engine was back"
    );
    proxy.cut();
}
