//! A run's lasting record end to end on simulated GPUs (frozen in time, so every sample has known
//! values): per-second metrics of exactly its GPUs through `--demo` and through `--nvml-lib` on
//! the simulator library, what a killed supervisor loses, a GPU source that cannot be opened,
//! summaries in `gpudeck runs`, `gpudeck export` and `gpudeck rerun`; and a run store that
//! cannot be written (a full disk, a file in the way) losing neither a run's end nor a directory.

use crate::support;

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use serde_json::Value;

use support::metrics::{
    assert_rows_match, demo, gpus_json, metrics_text, now_ms, out, rows, t_of, CSV_HEADER, FROZEN,
};
use support::runs::{
    group_alive, listed, log, record, run_dir, start_with, wait_state, wait_until,
};
use support::{sim_library, stderr, stdout, Dirs};

/// A shell command that prints `step=N loss=...` lines and then waits for `gate` to appear.
fn gated(dirs: &Dirs, name: &str) -> (String, std::path::PathBuf) {
    let gate = dirs.root.path().join(name);
    let script = format!(
        "echo step=1 loss=0.5; echo step=2 loss=0.25; echo 'step=3 loss=nan' >&2; \
         while [ ! -e '{}' ]; do sleep 0.05; done",
        gate.display()
    );
    (script, gate)
}

#[test]
fn metrics_are_recorded_each_second_for_exactly_the_runs_gpus() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (script, gate) = gated(&dirs, "go");
    let (id, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "3,1", "--", "sh", "-c", &script]),
    );
    assert_eq!(record(&dirs, &id)["gpu_source"]["kind"], "demo");
    wait_until("three samples", || {
        rows(&metrics_text(&dirs, &id)).len() >= 6
    });
    std::fs::write(&gate, "").unwrap();
    let rec = wait_state(&dirs, &id, "succeeded");
    assert_eq!(rec["metrics_error"], Value::Null);
    let text = metrics_text(&dirs, &id);
    assert!(text.starts_with(&format!("{CSV_HEADER}\n")), "{text}");
    assert!(text.ends_with('\n'));
    let rows = rows(&text);
    assert_rows_match(&rows, &gpus_json(demo(&dirs, &[])), &[3, 1]);
    let times: Vec<i64> = rows.iter().step_by(2).map(|r| t_of(r)).collect();
    let (started, ended) = (rec["started_ms"].as_i64(), rec["ended_ms"].as_i64());
    assert!(times[0] >= started.unwrap() && times[0] - started.unwrap() < 1000);
    // Ticks a second apart; the last one comes when the rank ends, before the end is recorded.
    for pair in times[..times.len() - 1].windows(2) {
        assert!((500..2500).contains(&(pair[1] - pair[0])), "{times:?}");
    }
    assert!(*times.last().unwrap() <= ended.unwrap());
    let path = run_dir(&dirs, &id).join("metrics.csv");
    let mode = std::fs::metadata(path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn metrics_come_through_nvml_when_the_run_was_started_with_nvml_lib() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let nvml = |args: &[&str]| {
        let mut cmd = dirs.gpudeck(FROZEN);
        cmd.arg("--nvml-lib").arg(sim_library()).args(args);
        cmd
    };
    let (id, _guard) = start_with(&dirs, nvml(&["run", "--gpus", "2", "--", "true"]));
    let rec = wait_state(&dirs, &id, "succeeded");
    assert_eq!(rec["gpu_source"]["kind"], "nvml");
    assert_eq!(
        rec["gpu_source"]["library"].as_str().map(Path::new),
        Some(sim_library())
    );
    let rows = rows(&metrics_text(&dirs, &id));
    assert_rows_match(&rows, &gpus_json(nvml(&[])), &[2]);
}

#[test]
fn a_killed_supervisor_loses_at_most_the_last_second_of_metrics() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let forever = "while true; do echo tick; sleep 0.1; done";
    let (id, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "0,1", "--", "sh", "-c", forever]),
    );
    wait_until("two samples", || rows(&metrics_text(&dirs, &id)).len() >= 4);
    let before = rows(&metrics_text(&dirs, &id));
    let supervisor = record(&dirs, &id)["supervisor"]["pid"].as_i64().unwrap();
    let killed_at = now_ms();
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe { libc::kill(supervisor as i32, libc::SIGKILL) };
    wait_until("the run to show as lost", || {
        listed(&dirs, &id)["state"] == "lost"
    });
    let after_kill = metrics_text(&dirs, &id);
    // The ranks go on for more than a sampling period; nothing more is sampled.
    let lines = log(&dirs, &id, 0, "stdout").lines().count();
    wait_until("1.5 s more output", || {
        log(&dirs, &id, 0, "stdout").lines().count() > lines + 15
    });
    assert_eq!(metrics_text(&dirs, &id), after_kill);
    let kept = rows(&after_kill);
    assert_eq!(
        kept[..before.len()],
        before[..],
        "rows written before the kill stay"
    );
    assert_eq!(kept.len() % 2, 0, "whole batches only: {kept:?}");
    let last = t_of(kept.last().unwrap());
    // A second between samples, and some slack for a loaded machine's scheduler.
    assert!(
        killed_at - last <= 1500,
        "the last row is {} ms old",
        killed_at - last
    );

    let csv = out(demo(&dirs, &["export", &id, "--format", "csv"]));
    assert!(csv.status.success(), "{}", stderr(&csv));
    assert_eq!(rows(&stdout(&csv)), kept);
    let summary = &listed(&dirs, &id)["summary"];
    assert_eq!(
        summary["ended_ms"].as_i64(),
        Some(last),
        "a lost run ends at its last sample"
    );
    let stopped = out(demo(&dirs, &["stop", &id, "--grace", "5"]));
    assert!(stopped.status.success(), "{}", stderr(&stopped));
}

/// A run whose record names a GPU library that is not there, supervised directly: the supervisor
/// of an ordinary run opens the source the way `gpudeck run` did, which cannot fail this way.
fn run_without_a_gpu_source(dirs: &Dirs) -> String {
    let (template, _guard) = start_with(dirs, demo(dirs, &["run", "--gpus", "1", "--", "true"]));
    let mut rec = wait_state(dirs, &template, "succeeded");
    let id = format!("{template}-nolib");
    let dir = run_dir(dirs, &id);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    std::fs::copy(
        run_dir(dirs, &template).join("spec.toml"),
        dir.join("spec.toml"),
    )
    .unwrap();
    rec["id"] = id.clone().into();
    rec["state"] = "starting".into();
    rec["ranks"][0]["exit_code"] = Value::Null;
    rec["gpu_source"] = serde_json::json!({"kind": "nvml", "library": "/nonexistent/libnvml.so"});
    for field in [
        "supervisor",
        "process_group",
        "started_ms",
        "ended_ms",
        "exit_code",
    ] {
        rec[field] = Value::Null;
    }
    std::fs::write(dir.join("run.json"), rec.to_string()).unwrap();
    // Its output goes to supervisor.log, as when `gpudeck run` starts it.
    let log = std::fs::File::create(dir.join("supervisor.log")).unwrap();
    let supervised = demo(dirs, &["__supervise", dir.to_str().unwrap()])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .expect("the supervisor runs");
    assert!(supervised.success());
    id
}

#[test]
fn a_gpu_source_that_cannot_be_opened_is_recorded_and_the_run_goes_on() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let id = run_without_a_gpu_source(&dirs);
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "succeeded");
    let why = rec["metrics_error"].as_str().expect("metrics_error");
    assert!(
        why.contains("NVML (/nonexistent/libnvml.so) could not be opened"),
        "{why}"
    );
    let log = std::fs::read_to_string(run_dir(&dirs, &id).join("supervisor.log")).unwrap();
    assert!(log.contains("GPU metrics: NVML (/nonexistent"), "{log}");
    assert!(!run_dir(&dirs, &id).join("metrics.csv").exists());

    assert_eq!(listed(&dirs, &id)["summary"], Value::Null);
    let table = stdout(&out(demo(&dirs, &["runs"])));
    let row = table.lines().find(|l| l.starts_with(&id)).expect("listed");
    let header = table.lines().next().unwrap();
    assert!(header.contains("DURATION  UTIL  BUSY  EXIT"), "{header}");
    assert!(row.contains(" - "), "{row}");
    for format in ["csv", "json"] {
        let refused = out(demo(&dirs, &["export", &id, "--format", format]));
        assert_eq!(refused.status.code(), Some(1));
        assert!(
            crate::support::words(&stderr(&refused))
                .contains(&format!("{id} has no GPU metrics: NVML (")),
            "{}",
            stderr(&refused)
        );
    }
}

#[test]
fn the_supervisor_saves_an_ended_runs_summary_and_the_listing_uses_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (script, gate) = gated(&dirs, "go");
    let (id, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "0", "--", "sh", "-c", &script]),
    );
    wait_until("two samples", || rows(&metrics_text(&dirs, &id)).len() >= 2);
    std::fs::write(&gate, "").unwrap();
    let record = wait_state(&dirs, &id, "succeeded");
    let saved_path = run_dir(&dirs, &id).join("summary.json");
    wait_until("summary.json", || saved_path.exists());
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&saved_path).unwrap())
        .expect("summary.json is JSON");
    assert_eq!(saved["schema"], "gpudeck.summary/v1");
    assert_eq!(saved["ended_ms"], record["ended_ms"]);
    // An export adds the metrics up itself.
    let export = out(demo(&dirs, &["export", &id, "--format", "json"]));
    assert!(export.status.success(), "{}", stderr(&export));
    let computed = serde_json::from_str::<Value>(&stdout(&export)).unwrap()["summary"].clone();
    assert!(computed["busy_ratio"].as_f64().is_some(), "{computed}");
    assert_eq!(saved["summary"], computed);
    assert_eq!(listed(&dirs, &id)["summary"], computed);
    // The listing no longer adds the metrics up: junk of the same length goes unread.
    let metrics = run_dir(&dirs, &id).join("metrics.csv");
    let len = std::fs::metadata(&metrics).unwrap().len() as usize;
    std::fs::write(&metrics, "x".repeat(len)).unwrap();
    let listing = out(demo(&dirs, &["runs", "--json"]));
    assert!(listing.status.success(), "{}", stderr(&listing));
    assert_eq!(stderr(&listing), "", "no warning about the metrics");
    let doc: Value = serde_json::from_str(&stdout(&listing)).unwrap();
    let run = doc["runs"]
        .as_array()
        .and_then(|runs| runs.iter().find(|r| r["id"] == id.as_str()))
        .expect("listed");
    assert_eq!(run["summary"], computed);
}

#[test]
fn summaries_show_in_runs_and_exports_carry_metrics_and_progress() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (script, gate) = gated(&dirs, "go");
    let (id, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "1,3", "--", "sh", "-c", &script]),
    );
    wait_until("two samples", || rows(&metrics_text(&dirs, &id)).len() >= 4);
    std::fs::write(&gate, "").unwrap();
    wait_state(&dirs, &id, "succeeded");

    let summary = listed(&dirs, &id)["summary"].clone();
    let ratio = summary["busy_ratio"].as_f64().expect("busy_ratio");
    // GPU 1 is busy throughout, GPU 3 never: half the GPU-seconds, less the moments before
    // the first sample.
    assert!((0.45..=0.5).contains(&ratio), "{summary}");
    let gpus = gpus_json(demo(&dirs, &[]));
    assert_eq!(
        summary["gpus"][0]["peak_mem_bytes"],
        gpus[1]["memory_used_bytes"]
    );
    let power = summary["gpus"][0]["mean_power_w"]
        .as_f64()
        .expect("mean power");
    assert!(
        (power - gpus[1]["power_w"].as_f64().unwrap()).abs() < 1e-6,
        "{summary}"
    );
    let energy = summary["energy_j"].as_f64().expect("energy");
    let idle = gpus[3]["power_w"].as_f64().unwrap();
    assert!(energy > 0.0 && energy < (power + idle) * 30.0, "{summary}");
    assert_eq!(summary["gpus"][1]["seconds_busy"], 0.0);
    let table = stdout(&out(demo(&dirs, &["runs"])));
    let row = table.lines().find(|l| l.starts_with(&id)).expect("listed");
    let util = format!(" {:.0}% ", ratio * 100.0);
    assert!(row.contains(&util), "{util} in {row}");

    let text = metrics_text(&dirs, &id);
    let csv = out(demo(&dirs, &["export", &id, "--format", "csv"]));
    assert!(csv.status.success(), "{}", stderr(&csv));
    assert_eq!(stdout(&csv), text);
    // A torn last line (a crash mid-write) is left out.
    let path = run_dir(&dirs, &id).join("metrics.csv");
    std::fs::write(&path, format!("{text}1,1,GPU-")).unwrap();
    assert_eq!(
        stdout(&out(demo(&dirs, &["export", &id, "--format", "csv"]))),
        text
    );

    let file = dirs.root.path().join("export.json");
    let json = out(demo(
        &dirs,
        &[
            "export",
            &id,
            "--format",
            "json",
            "-o",
            file.to_str().unwrap(),
        ],
    ));
    assert!(json.status.success(), "{}", stderr(&json));
    assert_eq!(stdout(&json), "");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["schema"], "gpudeck.export/v1");
    assert_eq!(doc["run"]["id"], id.as_str());
    assert_eq!(doc["run"]["state"], "succeeded");
    assert_eq!(doc["summary"], summary);
    assert_eq!(
        doc["metrics"].as_array().map(Vec::len),
        Some(rows(&text).len())
    );
    assert_eq!(doc["metrics"][0]["gpu_index"], 1);
    assert_eq!(doc["metrics"][0]["util_pct"], gpus[1]["util_gpu_pct"]);
    let loss = &doc["progress"]["scalars"][0];
    assert_eq!(loss["name"], "loss");
    assert_eq!(loss["points"], serde_json::json!([[1.0, 0.5], [2.0, 0.25]]));
    assert_eq!(doc["progress"]["latest"]["step"], 3);
    assert_eq!(doc["progress"]["non_finite_values"], 1);
}

#[test]
fn export_refuses_an_unknown_run_and_a_bad_format() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let unknown = out(demo(&dirs, &["export", "nope", "--format", "csv"]));
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("no run matches `nope`"),
        "{}",
        stderr(&unknown)
    );
    let bad = out(demo(&dirs, &["export", "nope", "--format", "xml"]));
    assert_eq!(bad.status.code(), Some(2));
    let rerun = out(demo(&dirs, &["rerun", "nope"]));
    assert_eq!(rerun.status.code(), Some(1));
    assert!(
        stderr(&rerun).contains("no run matches `nope`"),
        "{}",
        stderr(&rerun)
    );
}

#[test]
fn rerun_starts_the_same_spec_again_from_anywhere() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let project = dirs.root.path().join("project");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    let script = "pwd; echo \"$GREETING rank $RANK of $WORLD_SIZE\"";
    let mut first = demo(
        &dirs,
        &[
            "run",
            "--name",
            "again",
            "--gpus",
            "1,2",
            "--launcher",
            "per-gpu",
            "--workdir",
            "sub",
            "--env",
            "GREETING=hi",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    first.current_dir(&project);
    let (old, _guard) = start_with(&dirs, first);
    wait_state(&dirs, &old, "succeeded");

    let mut again = demo(&dirs, &["rerun", "again"]);
    again.current_dir("/");
    let (new, _guard2) = start_with(&dirs, again);
    assert_ne!(new, old);
    assert!(new.contains("-again-"), "{new}");
    let rec = wait_state(&dirs, &new, "succeeded");
    let old_rec = record(&dirs, &old);
    for field in ["name", "launcher", "workdir", "gpus", "gpu_source"] {
        assert_eq!(rec[field], old_rec[field], "{field}");
    }
    assert_eq!(rec["ranks"][1]["env"]["GREETING"], "hi");
    let sub = project.join("sub").canonicalize().unwrap();
    for rank in 0..2 {
        assert_eq!(
            log(&dirs, &new, rank, "stdout"),
            format!("{}\nhi rank {rank} of 2\n", sub.display())
        );
    }
    let spec = |id: &str| std::fs::read_to_string(run_dir(&dirs, id).join("spec.toml")).unwrap();
    let (old_spec, new_spec) = (spec(&old), spec(&new));
    assert_eq!(
        new_spec,
        old_spec.replace(
            "workdir = \"sub\"",
            &format!("workdir = {:?}", project.join("sub"))
        ),
        "the same spec, its work dir as it was resolved"
    );
}

/// Three runs named `train` created in the same second, their ids sorting against their age
/// (the random part of an id says nothing about order): `logs`, `export`, `stop` and `rerun`
/// given the name all mean the newest.
#[test]
fn a_name_means_the_newest_run_of_that_name_everywhere() {
    let _gate = crate::support::gate::gate(module_path!());
    use support::run_fixture::{FakeRun, RunFacts};
    let dirs = Dirs::new();
    let data = dirs.root.path().join("data");
    let base = now_ms() as u64 - 60_000;
    let ids = [
        ("20261125-093000-train-ffff", base),
        ("20261125-093000-train-8000", base + 300),
        ("20261125-093000-train-0001", base + 600),
    ];
    for (id, started_ms) in ids {
        let run = FakeRun::write(
            &data,
            &RunFacts {
                id,
                state: "succeeded",
                gpus: &[],
                ranks: 1,
                started_ms,
                ended_ms: Some(started_ms + 100),
                exit_code: Some(0),
                supervised: false,
            },
        );
        run.log(0, "stdout", &format!("I am {id}\n"));
        run.metrics(&[(started_ms + 50, 0, 50, 1, 100.0)]);
        let spec = format!("name = \"train\"\ngpus = \"none\"\ncommand = [\"echo\", \"{id}\"]\n");
        std::fs::write(run.dir.join("spec.toml"), spec).unwrap();
    }
    let newest = ids[2].0;

    let logs = out(demo(&dirs, &["logs", "train"]));
    assert!(logs.status.success(), "{}", stderr(&logs));
    assert_eq!(stdout(&logs), format!("I am {newest}\n"));

    let export = out(demo(&dirs, &["export", "train", "--format", "json"]));
    assert!(export.status.success(), "{}", stderr(&export));
    let doc: Value = serde_json::from_str(&stdout(&export)).unwrap();
    assert_eq!(doc["run"]["id"], newest);

    let stop = out(demo(&dirs, &["stop", "train"]));
    assert!(stop.status.success(), "{}", stderr(&stop));
    assert!(
        stderr(&stop).contains(&format!("{newest} has already finished")),
        "{}",
        stderr(&stop)
    );

    let rerun = out(demo(&dirs, &["rerun", "train"]));
    assert!(rerun.status.success(), "{}", stderr(&rerun));
    assert!(
        stderr(&rerun).contains(&format!("running {newest} again")),
        "{}",
        stderr(&rerun)
    );
    let again = stdout(&rerun).trim().to_string();
    wait_state(&dirs, &again, "succeeded");
    assert_eq!(log(&dirs, &again, 0, "stdout"), format!("{newest}\n"));
}

#[test]
fn an_export_over_an_open_file_or_a_planted_link_is_private_and_follows_no_link() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start_with(&dirs, demo(&dirs, &["run", "--gpus", "0", "--", "true"]));
    wait_state(&dirs, &id, "succeeded");
    let export_to = |path: &Path| {
        let done = out(demo(
            &dirs,
            &[
                "export",
                &id,
                "--format",
                "csv",
                "-o",
                path.to_str().unwrap(),
            ],
        ));
        assert!(done.status.success(), "{}", stderr(&done));
    };
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;

    let old = dirs.root.path().join("old.csv");
    std::fs::write(&old, "old").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
    export_to(&old);
    assert_eq!(mode(&old), 0o600, "an existing 0644 file becomes private");
    assert!(std::fs::read_to_string(&old)
        .unwrap()
        .starts_with(CSV_HEADER));

    let victim = dirs.root.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dirs.root.path().join("link.csv");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    export_to(&link);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(mode(&victim), 0o644, "the link's target is untouched");
    assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(mode(&link), 0o600);
    assert!(std::fs::read_to_string(&link)
        .unwrap()
        .starts_with(CSV_HEADER));
}

#[test]
fn runs_json_and_export_hide_secret_env_values_unless_asked_and_the_run_gets_them() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    std::fs::create_dir_all(dirs.config()).unwrap();
    std::fs::write(
        dirs.config().join("config.toml"),
        "[general]\nsecret_names = [\"MY_CREDS\"]\n",
    )
    .unwrap();
    let (id, _guard) = start_with(
        &dirs,
        demo(
            &dirs,
            &[
                "run",
                "--gpus",
                "0",
                "--env",
                "HF_TOKEN=hf_abcdef",
                "--env",
                "MY_CREDS=hunter2",
                "--env",
                "EPOCHS=3",
                "--",
                "sh",
                "-c",
                "echo \"$HF_TOKEN $MY_CREDS $EPOCHS\"",
            ],
        ),
    );
    wait_state(&dirs, &id, "succeeded");
    assert_eq!(log(&dirs, &id, 0, "stdout"), "hf_abcdef hunter2 3\n");
    let spec = run_dir(&dirs, &id).join("spec.toml");
    assert!(std::fs::read_to_string(&spec)
        .unwrap()
        .contains("hf_abcdef"));
    let mode = std::fs::metadata(&spec).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let printed = |args: &[&str]| {
        let done = out(demo(&dirs, args));
        assert!(done.status.success(), "{}", stderr(&done));
        stdout(&done)
    };
    let env_of = |doc: &Value| doc["ranks"][0]["env"].clone();
    let listing: Value = serde_json::from_str(&printed(&["runs", "--json"])).unwrap();
    let exported: Value =
        serde_json::from_str(&printed(&["export", &id, "--format", "json"])).unwrap();
    for env in [env_of(&listing["runs"][0]), env_of(&exported["run"])] {
        assert_eq!(env["HF_TOKEN"], "<redacted>", "{env}");
        assert_eq!(env["MY_CREDS"], "<redacted>", "{env}");
        assert_eq!(env["EPOCHS"], "3", "{env}");
    }
    let listing: Value =
        serde_json::from_str(&printed(&["runs", "--json", "--show-secrets"])).unwrap();
    let exported: Value = serde_json::from_str(&printed(&[
        "export",
        &id,
        "--format",
        "json",
        "--show-secrets",
    ]))
    .unwrap();
    for env in [env_of(&listing["runs"][0]), env_of(&exported["run"])] {
        assert_eq!(env["HF_TOKEN"], "hf_abcdef", "{env}");
        assert_eq!(env["MY_CREDS"], "hunter2", "{env}");
    }
}

/// A shell command that waits for `gate` to appear, then exits with 3.
fn fails_at_gate(dirs: &Dirs, name: &str) -> (String, std::path::PathBuf) {
    let gate = dirs.root.path().join(name);
    let script = format!(
        "echo started; while [ ! -e '{}' ]; do sleep 0.05; done; exit 3",
        gate.display()
    );
    (script, gate)
}

fn supervisor_log(dirs: &Dirs, id: &str) -> String {
    std::fs::read_to_string(run_dir(dirs, id).join("supervisor.log")).unwrap_or_default()
}

#[test]
fn the_end_of_a_run_is_recorded_once_run_json_can_be_written_again() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (script, gate) = fails_at_gate(&dirs, "go");
    let (id, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "0", "--", "sh", "-c", &script]),
    );
    // Nothing can be created in the run directory, root included: every write of run.json (a
    // temporary file renamed over it) fails.
    let frozen = Frozen::new(&run_dir(&dirs, &id));
    std::fs::write(&gate, "").unwrap();
    wait_until("the supervisor to retry the end", || {
        supervisor_log(&dirs, &id).contains(&format!("could not record the end of {id}"))
    });
    assert_eq!(record(&dirs, &id)["state"], "running");
    assert_eq!(
        listed(&dirs, &id)["state"],
        "running",
        "not lost: its supervisor still holds the end"
    );
    drop(frozen);
    let rec = wait_state(&dirs, &id, "failed");
    assert_eq!(rec["exit_code"], 3);
    assert_eq!(rec["ranks"][0]["exit_code"], 3);
    assert!(rec["ended_ms"].as_u64().is_some());
    wait_until("the supervisor to say so and exit", || {
        supervisor_log(&dirs, &id).contains("was recorded after")
    });
}

#[test]
fn a_supervisor_gives_up_the_end_of_a_run_whose_directory_was_deleted() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (script, gate) = fails_at_gate(&dirs, "go");
    let (id, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "0", "--", "sh", "-c", &script]),
    );
    let supervisor = record(&dirs, &id)["supervisor"]["pid"].as_i64().unwrap();
    let frozen = Frozen::new(&run_dir(&dirs, &id));
    std::fs::write(&gate, "").unwrap();
    wait_until("the supervisor to retry the end", || {
        supervisor_log(&dirs, &id).contains(&format!("could not record the end of {id}"))
    });
    drop(frozen);
    std::fs::remove_dir_all(run_dir(&dirs, &id)).unwrap();
    // Not retrying forever for a run nobody can read.
    wait_until("the supervisor to exit", || !alive(supervisor));
}

#[test]
fn a_supervisor_retrying_the_end_gives_up_when_told_to() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (script, gate) = fails_at_gate(&dirs, "go");
    let (id, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "0", "--", "sh", "-c", &script]),
    );
    let supervisor = record(&dirs, &id)["supervisor"]["pid"].as_i64().unwrap();
    let _frozen = Frozen::new(&run_dir(&dirs, &id));
    std::fs::write(&gate, "").unwrap();
    wait_until("the supervisor to retry the end", || {
        supervisor_log(&dirs, &id).contains(&format!("could not record the end of {id}"))
    });
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe { libc::kill(supervisor as i32, libc::SIGTERM) };
    wait_until("the supervisor to exit", || !alive(supervisor));
    assert!(
        supervisor_log(&dirs, &id).contains("gave up recording the end")
            && supervisor_log(&dirs, &id).contains("it was failed, exit code 3"),
        "{}",
        supervisor_log(&dirs, &id)
    );
}

/// A directory made immutable (`chattr +i`): no entry can be made or removed in it, by root
/// either (permissions do not stop root); made mutable again when dropped.
struct Frozen(std::path::PathBuf);

impl Frozen {
    fn new(dir: &std::path::Path) -> Frozen {
        let status = std::process::Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .status()
            .expect("chattr runs (e2fsprogs)");
        assert!(status.success(), "chattr +i {} failed", dir.display());
        Frozen(dir.to_path_buf())
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn alive(pid: i64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 2..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// A small tmpfs mounted over the test's data directory, unmounted when dropped; None where
/// this process may not mount (not root).
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(dirs: &Dirs, size: &str) -> SmallDisk {
        let at = dirs.root.path().join("data");
        std::fs::create_dir_all(&at).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .status()
            .expect("mount runs");
        assert!(
            mounted.success(),
            "these tests need to mount a tmpfs (run them as root)"
        );
        SmallDisk(at)
    }

    /// Fills the disk to the last byte; the filler file is returned to free it again.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![0u8; 4096];
        while file.write_all(&block).is_ok() {}
        while file.write_all(&block[..1]).is_ok() {}
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[test]
fn a_run_refused_on_a_full_store_leaves_no_directory_behind() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let disk = SmallDisk::mount(&dirs, "256k");
    std::fs::create_dir(disk.0.join("runs")).unwrap();
    let _filler = disk.fill();
    let refused = out(demo(&dirs, &["run", "--gpus", "0", "--", "true"]));
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        crate::support::words(&stderr(&refused)).contains("No space left on device"),
        "{}",
        stderr(&refused)
    );
    let left: Vec<_> = std::fs::read_dir(disk.0.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Whether the supervisor `pid` still has its GPU sampling thread.
fn has_sampler(pid: i64) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks.filter_map(Result::ok).any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim() == "gpu-sampler")
            })
        })
        .unwrap_or(false)
}

#[test]
fn a_run_that_ends_on_a_full_disk_is_recorded_once_there_is_room() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let disk = SmallDisk::mount(&dirs, "1m");
    let (script, gate) = fails_at_gate(&dirs, "go");
    let (id, guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "0,1", "--", "sh", "-c", &script]),
    );
    wait_until("two samples", || rows(&metrics_text(&dirs, &id)).len() >= 4);
    let supervisor = record(&dirs, &id)["supervisor"]["pid"].as_i64().unwrap();
    let filler = disk.fill();
    std::fs::write(&gate, "").unwrap();
    // The ranks are gone and the last sample taken (it could not be written): the supervisor
    // now holds an end it cannot write.
    wait_until("the ranks to end and the last sample", || {
        !group_alive(guard.0.unwrap()) && !has_sampler(supervisor)
    });
    assert_eq!(record(&dirs, &id)["state"], "running");
    std::fs::remove_file(filler).unwrap();
    let rec = wait_state(&dirs, &id, "failed");
    assert_eq!(rec["exit_code"], 3);
    assert_eq!(rec["ranks"][0]["exit_code"], 3);
    // Every row kept is whole (a file's last page may still take rows on a full tmpfs, so
    // whether the last sample failed is not certain here; `sampler_tests` covers that).
    let text = metrics_text(&dirs, &id);
    assert!(text.ends_with('\n'));
    assert_eq!(rows(&text).len() % 2, 0, "{text}");
}

#[test]
fn a_lost_run_ends_at_its_last_evidence_in_runs_and_export() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let started = now_ms() as u64 - 200_000;
    // Never picked up by a supervisor long ago, or its supervisor gone: lost.
    let run = support::run_fixture::FakeRun::write(
        &dirs.root.path().join("data"),
        &support::run_fixture::RunFacts {
            id: "20261125-000000-lost-0001",
            state: "running",
            gpus: &[0],
            ranks: 1,
            started_ms: started,
            ended_ms: None,
            exit_code: None,
            supervised: false,
        },
    );
    let rows: Vec<_> = (1..=15u64)
        .map(|s| (started + s * 1000, 0, 90, 10, 300.0))
        .collect();
    run.metrics(&rows);
    // Its last sign of life: rank 0 wrote 20 s after the start.
    run.log(0, "stdout", "step=1\n");
    let written = std::time::UNIX_EPOCH + std::time::Duration::from_millis(started + 20_000);
    std::fs::File::options()
        .append(true)
        .open(run.dir.join("rank-0.stdout.log"))
        .unwrap()
        .set_modified(written)
        .unwrap();

    let first = listed(&dirs, &run.id);
    assert_eq!(first["state"], "lost");
    assert_eq!(first["duration_ms"], 20_000, "{first}");
    let summary = &first["summary"];
    assert_eq!(summary["ended_ms"].as_u64(), Some(started + 15_000));
    assert_eq!(summary["busy_ratio"], 1.0, "{summary}");
    let table = stdout(&out(demo(&dirs, &["runs"])));
    let row = table
        .lines()
        .find(|l| l.starts_with(&run.id))
        .expect("listed");
    assert!(row.contains(" 20s ") && row.contains(" 100% "), "{row}");
    let export = out(demo(&dirs, &["export", &run.id, "--format", "json"]));
    assert!(export.status.success(), "{}", stderr(&export));
    let doc: Value = serde_json::from_str(&stdout(&export)).unwrap();
    assert_eq!(doc["duration_ms"], 20_000);
    assert_eq!(&doc["summary"], summary);
    assert_eq!(listed(&dirs, &run.id), first, "it does not go on counting");
}

#[test]
fn a_gpu_that_falls_off_the_bus_during_a_run_is_recorded_in_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (template, _guard) = start_with(
        &dirs,
        demo(&dirs, &["run", "--gpus", "0,1", "--", "sleep", "1.5"]),
    );
    let mut rec = wait_state(&dirs, &template, "succeeded");
    let id = format!("{template}-xid79");
    let dir = run_dir(&dirs, &id);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    std::fs::copy(
        run_dir(&dirs, &template).join("spec.toml"),
        dir.join("spec.toml"),
    )
    .unwrap();
    rec["id"] = id.clone().into();
    rec["state"] = "starting".into();
    for field in [
        "supervisor",
        "process_group",
        "started_ms",
        "ended_ms",
        "exit_code",
    ] {
        rec[field] = Value::Null;
    }
    for rank in rec["ranks"].as_array_mut().unwrap() {
        rank["exit_code"] = Value::Null;
    }
    std::fs::write(dir.join("run.json"), rec.to_string()).unwrap();
    // Supervised where GPU 1 has fallen off the bus (the simulator's GPU_IS_LOST) since the
    // run was started.
    let log = std::fs::File::create(dir.join("supervisor.log")).unwrap();
    let mut supervise = dirs.gpudeck("gpus=4,frozen=300,lost=1");
    let status = supervise
        .args(["--demo", "__supervise", dir.to_str().unwrap()])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .expect("the supervisor runs");
    assert!(status.success());

    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "succeeded");
    let lost = &rec["lost_gpus"];
    assert_eq!(lost.as_array().map(Vec::len), Some(1), "{rec}");
    assert_eq!(lost[0]["index"], 1);
    assert_eq!(lost[0]["uuid"], rec["gpus"][1]["uuid"]);
    let at = lost[0]["at_ms"].as_u64().unwrap();
    let (started, ended) = (rec["started_ms"].as_u64(), rec["ended_ms"].as_u64());
    assert!(started.unwrap() <= at && at <= ended.unwrap(), "{rec}");
    let why = rec["metrics_error"].as_str().expect("metrics_error");
    assert!(
        why.contains(&format!(
            "GPU 1 ({}) fell off the bus at 20",
            rec["gpus"][1]["uuid"].as_str().unwrap()
        )),
        "{why}"
    );
    let summary = &listed(&dirs, &id)["summary"];
    assert_eq!(summary["lost_gpus"], *lost, "{summary}");
    let rows = rows(&metrics_text(&dirs, &id));
    assert!(
        rows.iter().filter(|r| r[1] == "1").all(|r| r[3].is_empty()),
        "GPU 1's rows are empty: {rows:?}"
    );
}
