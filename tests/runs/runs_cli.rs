//! `gpudeck run/runs/logs` end to end on four simulated GPUs: each launcher's processes and
//! environment, exit codes, a failing rank, no log line lost, private files, spec files, and the
//! refusals. The life of a run (stop, detachment, lost supervisor, follow) is in runs_lifecycle.rs.

use crate::support;

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use support::runs::{
    gpudeck, group_alive, listed, log, output, run_dir, start, start_with, wait_state,
};
use support::{stderr, stdout, Dirs};

/// Prints what a rank was given, one `KEY=value` per line.
const SHOW_ENV: &str = "for v in RANK LOCAL_RANK WORLD_SIZE CUDA_VISIBLE_DEVICES MASTER_ADDR \
                        MASTER_PORT TF_CONFIG; do eval \"echo $v=\\${$v-unset}\"; done";

/// Prints a line every 0.1 s until stopped.
const FOREVER: &str = "while true; do echo tick; sleep 0.1; done";

fn uuids(dirs: &Dirs) -> Vec<String> {
    let out = output(dirs, &["gpus", "--json"]);
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("gpus --json");
    doc["gpus"]
        .as_array()
        .expect("gpus[]")
        .iter()
        .map(|g| g["uuid"].as_str().expect("uuid").to_string())
        .collect()
}

/// `KEY=value` lines of a log as pairs.
fn env_of(text: &str) -> std::collections::HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn per_gpu_ranks_each_get_their_gpu_and_their_place() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(
        &dirs,
        &[
            "--gpus",
            "1,2",
            "--launcher",
            "per-gpu",
            "--",
            "sh",
            "-c",
            SHOW_ENV,
        ],
    );
    let rec = wait_state(&dirs, &id, "succeeded");
    assert_eq!(rec["exit_code"], 0);
    let uuids = uuids(&dirs);
    let ranks: Vec<_> = (0..2)
        .map(|r| env_of(&log(&dirs, &id, r, "stdout")))
        .collect();
    for (rank, env) in ranks.iter().enumerate() {
        assert_eq!(env["RANK"], rank.to_string(), "{env:?}");
        // Each sees its one GPU as device 0.
        assert_eq!(env["LOCAL_RANK"], "0");
        assert_eq!(env["WORLD_SIZE"], "2");
        assert_eq!(env["MASTER_ADDR"], "127.0.0.1");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], uuids[rank + 1]);
        let tf: Value = serde_json::from_str(&env["TF_CONFIG"]).expect("TF_CONFIG is JSON");
        assert_eq!(tf["task"]["type"], "worker");
        assert_eq!(tf["task"]["index"], rank);
        assert_eq!(tf["cluster"]["worker"].as_array().map(Vec::len), Some(2));
    }
    assert_eq!(ranks[0]["MASTER_PORT"], ranks[1]["MASTER_PORT"]);
    assert!(ranks[0]["MASTER_PORT"].parse::<u16>().is_ok_and(|p| p > 0));
    assert_eq!(rec["gpus"][0]["uuid"], uuids[1].as_str());
    assert_eq!(rec["ranks"][1]["exit_code"], 0);

    let shown = output(&dirs, &["logs", &id, "--rank", "1"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert_eq!(stdout(&shown), log(&dirs, &id, 1, "stdout"));
    let table = stdout(&output(&dirs, &["runs"]));
    let row = table.lines().find(|l| l.starts_with(&id)).expect("listed");
    assert!(
        row.contains("succeeded") && row.contains("1,2") && row.contains("per-gpu"),
        "{row}"
    );
}

#[test]
fn a_failing_rank_fails_the_run_and_stops_the_others() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let script = format!("if [ \"$RANK\" = 1 ]; then exit 3; fi; {FOREVER}");
    let (id, _guard) = start(
        &dirs,
        &[
            "--name",
            "breaks",
            "--gpus",
            "1,2",
            "--launcher",
            "per-gpu",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let rec = wait_state(&dirs, &id, "failed");
    assert_eq!(rec["exit_code"], 3);
    assert_eq!(rec["first_failed_rank"], 1);
    assert_eq!(rec["ranks"][1]["exit_code"], 3);
    let rank0 = rec["ranks"][0]["exit_code"]
        .as_i64()
        .expect("rank 0 recorded");
    assert!(
        [130, 143, 137].contains(&rank0),
        "rank 0 ended with {rank0}"
    );
    assert!(!group_alive(
        rec["process_group"]["pid"].as_i64().expect("pgid")
    ));
    assert_eq!(listed(&dirs, &id)["state"], "failed");
}

#[test]
fn single_is_one_process_seeing_both_gpus() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(&dirs, &["--gpus", "1,2", "--", "sh", "-c", SHOW_ENV]);
    let rec = wait_state(&dirs, &id, "succeeded");
    let uuids = uuids(&dirs);
    let env = env_of(&log(&dirs, &id, 0, "stdout"));
    assert_eq!(
        env["CUDA_VISIBLE_DEVICES"],
        format!("{},{}", uuids[1], uuids[2])
    );
    assert_eq!(env["RANK"], "unset");
    assert_eq!(rec["ranks"].as_array().map(Vec::len), Some(1));
    assert!(!run_dir(&dirs, &id).join("rank-1.stdout.log").exists());
}

#[test]
fn torchrun_gets_standalone_and_one_process_per_gpu() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let bin = dirs.root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("torchrun");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"torchrun $*\"\necho \"cvd=$CUDA_VISIBLE_DEVICES\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    // torchrun's script form: a file in the work dir.
    let work = dirs.root.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("train.py"), "").unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = gpudeck(
        &dirs,
        &[
            "run",
            "--gpus",
            "2,3",
            "--launcher",
            "torchrun",
            "--",
            "train.py",
            "--lr",
            "0.1",
        ],
    );
    cmd.env("PATH", path).current_dir(&work);
    let (id, _guard) = start_with(&dirs, cmd);
    wait_state(&dirs, &id, "succeeded");
    // torchrun's own output; its workers' is in their rank logs (tests/runs/runs_torchrun.rs).
    let text = std::fs::read_to_string(run_dir(&dirs, &id).join("torchrun.stdout.log")).unwrap();
    let log_dir = run_dir(&dirs, &id).join("torchrun");
    let uuids = uuids(&dirs);
    assert!(
        text.starts_with(&format!(
            "torchrun --standalone --nproc-per-node=2 --log-dir={} --redirects=3 train.py --lr \
             0.1\n",
            log_dir.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("cvd={},{}", uuids[2], uuids[3])),
        "{text}"
    );

    // A PATH without torchrun (the test venv's may be on the caller's).
    let refused = gpudeck(
        &dirs,
        &["run", "--gpus", "1", "--launcher", "torchrun", "--", "x.py"],
    )
    .env("PATH", "/usr/bin:/bin")
    .output()
    .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("the command `torchrun` was not found"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn no_log_line_is_lost_when_a_rank_exits_right_after_printing() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(
        &dirs,
        &[
            "--gpus",
            "1,2",
            "--launcher",
            "per-gpu",
            "--",
            "seq",
            "1",
            "20000",
        ],
    );
    wait_state(&dirs, &id, "succeeded");
    for rank in 0..2 {
        let text = log(&dirs, &id, rank, "stdout");
        let numbers: Vec<u32> = text.lines().map(|l| l.parse().expect("a number")).collect();
        assert_eq!(numbers.len(), 20_000, "rank {rank}");
        assert!(
            numbers.iter().zip(1..).all(|(n, want)| *n == want),
            "rank {rank} out of order"
        );
    }
}

#[test]
fn run_files_are_private() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(&dirs, &["--gpus", "1", "--", "true"]);
    wait_state(&dirs, &id, "succeeded");
    let dir = run_dir(&dirs, &id);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir.parent().unwrap()), 0o700);
    assert_eq!(mode(&dir), 0o700);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    for name in [
        "spec.toml",
        "run.json",
        "supervisor.log",
        "rank-0.stdout.log",
        "rank-0.stderr.log",
    ] {
        assert!(dir.join(name).exists(), "{name} missing");
    }
}

#[test]
fn a_spec_file_is_used_and_flags_override_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let spec = dirs.root.path().join("run.toml");
    std::fs::write(
        &spec,
        "name = \"fromfile\"\ncommand = [\"sh\", \"-c\", \"echo $GREETING\"]\ngpus = \"0\"\n[env]\nGREETING = \"hello\"\n",
    )
    .unwrap();
    let spec_arg = spec.to_str().unwrap();
    let (id, _guard) = start(&dirs, &[spec_arg, "--gpus", "3"]);
    let rec = wait_state(&dirs, &id, "succeeded");
    assert!(id.contains("-fromfile-"), "{id}");
    assert_eq!(rec["gpus"][0]["index"], 3);
    assert_eq!(log(&dirs, &id, 0, "stdout"), "hello\n");
    let stored = std::fs::read_to_string(run_dir(&dirs, &id).join("spec.toml")).unwrap();
    assert!(stored.contains("gpus = \"3\""), "{stored}");

    std::fs::write(
        &spec,
        "command = [\"true\"]\ngpus = \"0\"\nimage_tag = \"x\"\n",
    )
    .unwrap();
    let bad = output(&dirs, &["run", spec_arg]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains(&format!("{spec_arg}:3:1: unknown field `image_tag`")),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn refusals_say_why_and_what_to_do() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let unknown = output(&dirs, &["logs", "nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("no run matches `nope`"),
        "{}",
        stderr(&unknown)
    );
    let (id, _guard) = start(&dirs, &["--gpus", "1", "--", "true"]);
    let unknown = output(&dirs, &["stop", "nope"]);
    assert!(stderr(&unknown).contains(&format!("Recent runs (`gpudeck runs` lists all): {id}")));

    let missing = output(&dirs, &["run", "--gpus", "1,9", "--", "true"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing)
            .replace('\n', " ")
            .contains("there is no GPU 9: this machine has GPUs 0-3 (4 × NVIDIA H100 80GB HBM3)"),
        "{}",
        stderr(&missing)
    );
    let bad = output(&dirs, &["run", "--gpus", "one", "--", "true"]);
    assert_eq!(bad.status.code(), Some(2));
    let nothing = output(&dirs, &["run", "--gpus", "1"]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(stderr(&nothing).contains("the run has no command"));
    let no_such = output(
        &dirs,
        &["run", "--gpus", "1", "--", "definitely-not-a-command"],
    );
    assert_eq!(no_such.status.code(), Some(1));
    assert!(
        stderr(&no_such).contains("was not found"),
        "{}",
        stderr(&no_such)
    );
    // The simulated GPUs have 80 GB: more than that free is nowhere.
    let greedy = output(
        &dirs,
        &["run", "--gpus", "1", "--gpu-memory", "100GiB", "--", "true"],
    );
    assert_eq!(greedy.status.code(), Some(1));
    assert!(
        stderr(&greedy).contains("(the run asks for 100.0GiB free on each GPU)")
            && stderr(&greedy).contains("ask for less with --gpu-memory"),
        "{}",
        stderr(&greedy)
    );
}

/// The GPUs each run got, as `gpudeck runs --json` lists them.
fn gpus_of(dirs: &Dirs, ids: &[&str]) -> Vec<Vec<u64>> {
    let out = dirs
        .gpudeck("")
        .args(["--demo", "runs", "--json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("runs --json");
    ids.iter()
        .map(|id| {
            let run = doc["runs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["id"] == *id)
                .unwrap_or_else(|| panic!("{id} not listed: {doc}"));
            run["gpus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["index"].as_u64().unwrap())
                .collect()
        })
        .collect()
}

/// `gpudeck --demo run --gpus count:1 -- CMD` on the default eight simulated GPUs (6 and 7 idle).
fn count_one(dirs: &Dirs, cmd: &[&str]) -> std::process::Command {
    let mut c = dirs.gpudeck("");
    c.args(["--demo", "run", "--gpus", "count:1", "--"])
        .args(cmd);
    c
}

/// Two `count:1` runs started at the same instant get different GPUs: choosing free GPUs and
/// claiming them is one step under the claims lock (before, both got GPU 6). Repeated, since a
/// race shows only sometimes; a third, while both live, is told who holds the GPUs.
#[test]
fn runs_started_at_the_same_instant_get_different_gpus() {
    let _gate = crate::support::gate::gate(module_path!());
    for round in 0..4 {
        let dirs = Dirs::new();
        let spawn = || {
            count_one(&dirs, &["sleep", "5"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        assert!(a.status.success(), "round {round}: {}", stderr(&a));
        assert!(b.status.success(), "round {round}: {}", stderr(&b));
        let ids = [stdout(&a).trim().to_string(), stdout(&b).trim().to_string()];
        let _guards: Vec<_> = ids
            .iter()
            .map(|id| {
                support::runs::GroupGuard(
                    support::runs::record(&dirs, id)["process_group"]["pid"].as_i64(),
                )
            })
            .collect();
        let got = gpus_of(&dirs, &[&ids[0], &ids[1]]);
        assert_eq!(got[0].len(), 1, "{got:?}");
        assert_ne!(got[0], got[1], "round {round}: both runs got the same GPU");

        let third = count_one(&dirs, &["true"]).output().unwrap();
        assert_eq!(third.status.code(), Some(1), "{}", stderr(&third));
        let said = stderr(&third);
        assert!(fits_80(&said), "{said}");
        // Wrapped to the terminal: read as one line of words.
        let words = said.split_whitespace().collect::<Vec<_>>().join(" ");
        for id in &ids {
            assert!(words.contains(&format!("(claimed by run {id})")), "{said}");
        }
    }
}

/// `kill -9` on a run's supervisor leaves it `lost`, but its rank keeps running on its GPU: the
/// GPU stays claimed until the rank is gone too (before, the next `count:1` run was given it).
#[test]
fn a_lost_run_whose_rank_still_runs_keeps_its_gpu() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let first = count_one(&dirs, &["sleep", "60"]).output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let id = stdout(&first).trim().to_string();
    let rec = support::runs::record(&dirs, &id);
    let _guard = support::runs::GroupGuard(rec["process_group"]["pid"].as_i64());
    let supervisor = rec["supervisor"]["pid"].as_i64().expect("supervisor pid") as i32;
    // SAFETY: a signal to a process this test started (through gpudeck).
    assert_eq!(unsafe { libc::kill(supervisor, libc::SIGKILL) }, 0);
    support::runs::wait_until("the run to read lost", || {
        listed(&dirs, &id)["state"] == "lost"
    });
    assert!(group_alive(rec["process_group"]["pid"].as_i64().unwrap()));

    // GPU 6 is still the lost run's: the next run gets GPU 7, and a third none.
    let second = count_one(&dirs, &["sleep", "60"]).output().unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    let second_id = stdout(&second).trim().to_string();
    let _second = support::runs::GroupGuard(
        support::runs::record(&dirs, &second_id)["process_group"]["pid"].as_i64(),
    );
    let got = gpus_of(&dirs, &[&id, &second_id]);
    assert_ne!(
        got[0], got[1],
        "the lost run's GPU was given again: {got:?}"
    );
    let third = count_one(&dirs, &["true"]).output().unwrap();
    let words = stderr(&third)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(third.status.code(), Some(1), "{words}");
    assert!(words.contains(&format!("(claimed by run {id})")), "{words}");

    // Once its rank is gone, its GPU is free again.
    let group = rec["process_group"]["pid"].as_i64().unwrap() as i32;
    // SAFETY: as above, to the rank's own process group.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    support::runs::wait_until("the lost run's rank to be gone", || {
        !group_alive(group as i64)
    });
    let fourth = count_one(&dirs, &["true"]).output().unwrap();
    assert!(fourth.status.success(), "{}", stderr(&fourth));
}

/// A shell's claim and a run's claim keep each other off their GPUs: a run started while a
/// shell holds GPU 6 gets GPU 7, an explicit `--gpus 6` is warned with the shell named, and a
/// shell asking for a run's GPU is warned with the run named. Once the shell's session ends
/// (no container runs), its GPU is free again.
#[test]
fn a_run_and_a_shell_claim_different_gpus() {
    let _gate = crate::support::gate::gate(module_path!());
    use gpudeck::claims::{Claim, Claims, Owner};
    use gpudeck::runs::SystemLiveness;
    use gpudeck::shell::{claim_gpus, ResolvedGpu, ResolvedGpus};
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("")
        .args(["--demo", "gpus", "--json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let uuid = |i: usize| doc["gpus"][i]["uuid"].as_str().unwrap().to_string();
    let claims = Claims::new(&dirs.root.path().join("data"));
    let resolved = |i: usize| ResolvedGpus {
        gpus: vec![ResolvedGpu {
            index: i as u32,
            uuid: uuid(i),
            name: "H100".into(),
        }],
    };
    let report = gpudeck::gpu::report::GpuReport::unread();
    let (shell, warnings) = claim_gpus(
        Some(&claims),
        &SystemLiveness,
        Some("dev"),
        &resolved(6),
        &report,
    );
    let shell = shell.expect("the shell claims GPU 6");
    assert!(warnings.is_empty(), "{warnings:?}");

    let run = count_one(&dirs, &["sleep", "5"]).output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let id = stdout(&run).trim().to_string();
    let _guard = support::runs::GroupGuard(
        support::runs::record(&dirs, &id)["process_group"]["pid"].as_i64(),
    );
    assert_eq!(gpus_of(&dirs, &[&id]), [vec![7]]);

    let explicit = dirs
        .gpudeck("")
        .args(["--demo", "run", "--gpus", "6", "--", "true"])
        .output()
        .unwrap();
    assert!(explicit.status.success(), "{}", stderr(&explicit));
    wait_state(&dirs, stdout(&explicit).trim(), "succeeded");
    assert!(
        stderr(&explicit).contains("warning: GPU 6 is claimed by shell dev"),
        "{}",
        stderr(&explicit)
    );

    let (other, warnings) = claim_gpus(
        Some(&claims),
        &SystemLiveness,
        Some("other"),
        &resolved(7),
        &report,
    );
    assert_eq!(warnings, [format!("GPU 7 is claimed by run {id}")]);
    other.expect("claimed, with the warning").end();

    shell.end();
    let after = count_one(&dirs, &["true"]).output().unwrap();
    assert!(after.status.success(), "{}", stderr(&after));
    assert_eq!(gpus_of(&dirs, &[stdout(&after).trim()]), [vec![6]]);
    let live: Vec<Owner> = claims
        .live(&gpudeck::runs::SystemLiveness)
        .unwrap()
        .into_iter()
        .map(|c: Claim| c.owner)
        .collect();
    assert!(
        live.iter().all(|o| matches!(o, Owner::Run { .. })),
        "ended shells hold nothing: {live:?}"
    );
}

/// stderr with the lines of its wrapped messages joined again.
fn one_line(out: &std::process::Output) -> String {
    stderr(out).replace('\n', " ")
}

#[test]
fn a_gpu_that_has_fallen_off_the_bus_is_refused() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let mut cmd = dirs.gpudeck("gpus=4,lost=1");
    cmd.args(["--demo", "run", "--gpus", "0,1", "--", "true"]);
    let refused = cmd.output().expect("gpudeck runs");
    assert_eq!(refused.status.code(), Some(1), "{}", one_line(&refused));
    let text = one_line(&refused);
    assert!(
        text.contains("GPU 1 has fallen off the bus") && text.contains("--gpus 0,2,3"),
        "{text}"
    );
    let raw = stderr(&refused);
    assert!(raw.lines().all(|l| l.chars().count() <= 80), "{raw}");
    let runs = dirs.root.path().join("data").join("runs");
    assert!(
        std::fs::read_dir(&runs).map_or(true, |mut d| d.next().is_none()),
        "no run was recorded"
    );
}

/// A finished run's id, with its metrics.
fn finished_run(dirs: &Dirs) -> String {
    let (id, _guard) = start(
        dirs,
        &["--gpus", "1", "--", "sh", "-c", "echo hi; sleep 1.5"],
    );
    wait_state(dirs, &id, "succeeded");
    id
}

/// A run stopped once its `metrics.csv` holds `rows` rows of samples: the sampler's pace
/// depends on the machine's load, so the rows are waited for rather than a fixed time.
fn run_with_metrics_rows(dirs: &Dirs, rows: usize) -> String {
    let (id, _guard) = start(
        dirs,
        &["--gpus", "1", "--", "sh", "-c", "echo hi; sleep 120"],
    );
    let path = run_dir(dirs, &id).join("metrics.csv");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while std::fs::read_to_string(&path).map_or(0, |t| t.lines().count()) <= rows {
        assert!(
            std::time::Instant::now() < deadline,
            "{} has not {rows} rows after 90 s",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let stopped = output(dirs, &["stop", &id]);
    assert!(stopped.status.success(), "{}", one_line(&stopped));
    wait_state(dirs, &id, "stopped");
    id
}

#[test]
fn a_damaged_run_record_is_named_by_logs_export_and_runs() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let id = finished_run(&dirs);
    let unreadable = finished_run(&dirs);
    let record = run_dir(&dirs, &id).join("run.json");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, &text[..text.len() / 2]).unwrap();
    // Root reads anything: a directory where run.json should be cannot be read by anyone.
    let other = run_dir(&dirs, &unreadable).join("run.json");
    std::fs::remove_file(&other).unwrap();
    std::fs::create_dir(&other).unwrap();
    for args in [
        vec!["logs", id.as_str()],
        vec!["export", id.as_str(), "--format", "csv"],
        vec!["stop", id.as_str()],
    ] {
        let refused = output(&dirs, &args);
        assert_eq!(refused.status.code(), Some(1), "{args:?}");
        let why = one_line(&refused);
        assert!(
            why.contains(&format!("the run record {} is damaged", record.display()))
                && why.contains("it was cut short or edited")
                && why.contains("Restore run.json from a backup"),
            "{args:?}: {why}"
        );
    }
    let refused = output(&dirs, &["logs", &unreadable]);
    assert!(
        one_line(&refused).contains(&format!(
            "{} is damaged: it cannot be read: Is a directory",
            other.display()
        )),
        "{}",
        one_line(&refused)
    );
    let listed = output(&dirs, &["runs"]);
    assert!(listed.status.success());
    let warnings = one_line(&listed);
    assert!(
        warnings.contains(&format!(
            "warning: the run record {} is damaged",
            record.display()
        )) && warnings.contains(&format!(
            "{} is damaged: it cannot be read",
            other.display()
        )),
        "{warnings}"
    );
}

#[test]
fn a_deleted_rank_log_is_named_and_following_it_ends() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(&dirs, &["--gpus", "1", "--", "sh", "-c", FOREVER]);
    let path = run_dir(&dirs, &id).join("rank-0.stdout.log");
    support::runs::wait_until("output", || log(&dirs, &id, 0, "stdout").contains("tick"));
    std::fs::remove_file(&path).unwrap();
    let gone = format!(
        "the log {} is gone: it was deleted or moved",
        path.display()
    );
    let printed = output(&dirs, &["logs", &id]);
    assert_eq!(printed.status.code(), Some(1));
    assert!(one_line(&printed).contains(&gone), "{}", one_line(&printed));
    // Following it would wait forever for output that goes nowhere: it ends at once instead.
    let mut follow = gpudeck(&dirs, &["logs", &id, "-f"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    support::runs::wait_until("logs -f to end", || {
        status = follow.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(1));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut follow.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.replace('\n', " ").contains(&gone), "{err}");
    let export = output(&dirs, &["export", &id, "--format", "json"]);
    assert!(export.status.success(), "{}", one_line(&export));
    assert!(
        one_line(&export).contains(&format!("warning: {} is gone", path.display())),
        "{}",
        one_line(&export)
    );
    let stopped = output(&dirs, &["stop", &id]);
    assert!(stopped.status.success(), "{}", one_line(&stopped));
}

#[test]
fn a_bad_metrics_line_is_skipped_and_counted() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let id = run_with_metrics_rows(&dirs, 2);
    let path = run_dir(&dirs, &id).join("metrics.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 3, "{text}");
    lines.insert(2, "garbage,from,a,disk,error");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let said = format!(
        "{}: 1 bad line skipped (the first: metrics line 3, column `t_unix_ms`",
        path.display()
    );
    let csv = output(&dirs, &["export", &id, "--format", "csv"]);
    assert!(csv.status.success(), "{}", one_line(&csv));
    assert_eq!(stdout(&csv), text, "every good row, in order");
    assert!(one_line(&csv).contains(&said), "{}", one_line(&csv));
    let json = output(&dirs, &["export", &id, "--format", "json"]);
    let doc: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(doc["skipped_metrics_lines"], 1);
    let runs = output(&dirs, &["runs"]);
    assert!(one_line(&runs).contains(&said), "{}", one_line(&runs));
    assert!(listed(&dirs, &id)["summary"].is_object());
}

#[test]
fn an_unreadable_store_is_an_error_not_an_empty_one() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let data = dirs.root.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("runs"), "not a directory").unwrap();
    for args in [vec!["runs"], vec!["runs", "--json"]] {
        let refused = output(&dirs, &args);
        assert_eq!(refused.status.code(), Some(1), "{args:?}");
        assert_eq!(stdout(&refused), "", "no table, no empty listing");
        assert!(
            one_line(&refused).contains(&format!(
                "the run store {} cannot be read: Not a directory",
                data.join("runs").display()
            )),
            "{}",
            one_line(&refused)
        );
    }
}

/// Every line of a message fits an 80-column terminal.
fn fits_80(text: &str) -> bool {
    text.lines().all(|l| l.chars().count() <= 80)
}

#[test]
fn a_script_is_run_with_its_interpreter_and_a_program_gets_the_command_to_type() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("train.py"),
        "import sys\nprint('trained', sys.argv[1:])\n",
    )
    .unwrap();
    let mut cmd = gpudeck(&dirs, &["run", "--gpus", "none", "train.py", "x"]);
    cmd.current_dir(work.path());
    let (id, _guard) = start_with(&dirs, cmd);
    let rec = wait_state(&dirs, &id, "succeeded");
    assert!(id.contains("-train-"), "named after the script: {id}");
    assert_eq!(rec["ranks"][0]["argv"][1], "train.py", "{rec}");
    assert_eq!(log(&dirs, &id, 0, "stdout"), "trained ['x']\n");

    let mut cmd = gpudeck(&dirs, &["run", "--gpus", "1", "python", "train.py"]);
    let typed = cmd.current_dir(work.path()).output().unwrap();
    let said = stderr(&typed);
    assert_eq!(typed.status.code(), Some(2), "{said}");
    assert!(
        said.contains("To run it, type:\n  gpudeck --demo run --gpus 1 -- python train.py\n"),
        "{said}"
    );
    assert!(fits_80(&said), "{said}");

    // The program's own flags before `--` are not gpudeck's either.
    let mut cmd = gpudeck(&dirs, &["run", "python", "train.py", "--epochs", "3"]);
    let flagged = cmd.current_dir(work.path()).output().unwrap();
    let said = stderr(&flagged);
    assert_eq!(flagged.status.code(), Some(2), "{said}");
    assert!(
        said.contains("To run it, type:\n  gpudeck --demo run -- python train.py --epochs 3"),
        "{said}"
    );
    let mut cmd = gpudeck(&dirs, &["run", "nope.py"]);
    let missing = cmd.current_dir(work.path()).output().unwrap();
    let said = stderr(&missing);
    assert_eq!(missing.status.code(), Some(2), "{said}");
    assert!(
        said.contains("the script nope.py does not exist here"),
        "{said}"
    );
    assert_eq!(run_dirs(&dirs), 1, "nothing was started");
}

fn run_dirs(dirs: &Dirs) -> usize {
    std::fs::read_dir(dirs.root.path().join("data").join("runs"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn gpus_that_are_not_there_are_listed_briefly() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let many = output(&dirs, &["run", "--gpus", "count:9", "--", "true"]);
    let said = stderr(&many);
    assert_eq!(many.status.code(), Some(1), "{said}");
    assert!(
        said.replace('\n', " ").contains(
            "9 GPUs wanted, but this machine has only 4: GPUs 0-3 (4 × NVIDIA H100 80GB HBM3)"
        ),
        "{said}"
    );
    assert!(said.contains("Ask for at most count:4"), "{said}");
    let missing = output(&dirs, &["run", "--gpus", "99", "--", "true"]);
    let said = stderr(&missing);
    assert!(!said.contains("GPU-"), "no UUIDs: {said}");
    assert!(said.len() < 250, "brief: {said}");
    assert!(fits_80(&said), "{said}");
}

#[test]
fn without_gpus_the_refusal_names_gpus_none_and_demo_and_a_cpu_run_starts() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let nvml = |args: &[&str]| {
        let mut cmd = dirs.gpudeck("");
        cmd.args(["--nvml-lib", "/nonexistent/libnvidia-ml.so.1"]);
        cmd.args(args);
        cmd
    };
    let refused = nvml(&["run", "--", "true"]).output().unwrap();
    let said = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    let flat = said.replace('\n', " ");
    assert!(flat.contains("GPUs could not be read"), "{said}");
    assert!(
        flat.contains("`--gpus none` runs it without GPUs") && flat.contains("`--demo`"),
        "{said}"
    );
    assert!(fits_80(&said), "{said}");
    let (id, _guard) = start_with(&dirs, nvml(&["run", "--gpus", "none", "--", "true"]));
    wait_state(&dirs, &id, "succeeded");
}

#[test]
fn rerun_of_a_demo_run_uses_the_simulated_gpus_it_was_started_on() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(&dirs, &["--gpus", "1", "--", "true"]);
    wait_state(&dirs, &id, "succeeded");
    // No --demo: the run's record says where its GPUs came from.
    let mut cmd = dirs.gpudeck(support::runs::SIM);
    cmd.args(["rerun", &id]);
    let (again, _guard2) = start_with(&dirs, cmd);
    let rec = wait_state(&dirs, &again, "succeeded");
    assert_eq!(rec["gpus"][0]["index"], 1);
    assert_eq!(rec["gpu_source"]["kind"], "demo", "{rec}");
}
