//! Control sequences from outside never reach the terminal: a run's name, what the user typed
//! (an unknown run, a bad argument) and a kernel log's process names and bus text are printed
//! with their ESC, C1 and bidi controls shown as escapes. A run's own log is passed as it is,
//! as `docker logs` does (docs/hardening.md).

use crate::support;

use support::{sim_library, stderr, stdout, Dirs};

use support::inert::{assert_inert, HOSTILE};

#[test]
fn a_run_s_name_and_what_the_user_typed_are_printed_inert() {
    let dirs = Dirs::new();
    let gpudeck = |args: &[&str]| {
        let mut cmd = dirs.gpudeck("gpus=2");
        cmd.args(args);
        cmd.output().expect("gpudeck runs")
    };
    let name = format!("n{HOSTILE}");
    let program = format!("printf '{}'", "\\033]0;from-the-program\\007");
    let started = gpudeck(&[
        "run", "--name", &name, "--gpus", "none", "--", "sh", "-c", &program,
    ]);
    assert!(started.status.success(), "{}", stderr(&started));
    assert_inert("run", &started);

    let wide = {
        let mut cmd = dirs.gpudeck("gpus=2");
        cmd.env("COLUMNS", "250").arg("runs");
        cmd.output().unwrap()
    };
    assert!(wide.status.success(), "{}", stderr(&wide));
    assert!(stdout(&wide).contains("NAME"), "{}", stdout(&wide));
    assert!(
        stdout(&wide).contains("n\\u001b]0;pwned\\u0007"),
        "the name is shown, its controls as escapes: {}",
        stdout(&wide)
    );
    assert_inert("runs", &wide);

    // JSON stays JSON, and its escapes read back as the name.
    let json = gpudeck(&["runs", "--json"]);
    assert_inert("runs --json", &json);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&json)).expect("runs --json");
    let names: Vec<&str> = doc["runs"]
        .as_array()
        .expect("runs[]")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, [name.as_str()], "{doc:#}");

    // An unknown run is quoted in the error.
    let unknown = gpudeck(&["logs", &format!("nope{HOSTILE}")]);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("nope\\u001b"),
        "{}",
        stderr(&unknown)
    );
    assert_inert("logs of an unknown run", &unknown);
    // So is a bad value for a flag, in clap's message.
    let bad = gpudeck(&["logs", "x", "--rank", &format!("1{HOSTILE}")]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--rank"), "{}", stderr(&bad));
    assert_inert("a bad --rank", &bad);
    let unknown_flag = gpudeck(&["runs", &format!("--x{HOSTILE}=1")]);
    assert_eq!(unknown_flag.status.code(), Some(2));
    assert_inert("an unknown flag", &unknown_flag);

    // The run's own output is the program's: passed as it is, as `docker logs` does.
    let id = doc["runs"][0]["id"].as_str().expect("id");
    let logs = gpudeck(&["logs", id]);
    assert!(logs.status.success(), "{}", stderr(&logs));
    assert_eq!(stdout(&logs), "\x1b]0;from-the-program\x07");
}

#[test]
fn a_kernel_log_s_names_and_bus_text_are_printed_inert() {
    let dirs = Dirs::new();
    let log = dirs.root.path().join("kernel.log");
    let lines = [
        format!("[ 9120.000200] NVRM: Xid (PCI:0000:9a:00): 13, pid=48211, name=py{HOSTILE}, Graphics Exception {HOSTILE}"),
        format!("[ 9121.000200] NVRM: Xid (PCI:0000:9a:00{HOSTILE}): 79, pid=0, GPU has fallen off the bus."),
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let doctor = |extra: &[&str]| {
        let mut cmd = dirs.gpudeck("gpus=8,frozen=30");
        cmd.env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("CUDA_DEVICE_ORDER")
            .arg("doctor")
            .arg("--nvml-lib")
            .arg(sim_library())
            .args(["--docker-host", "unix:///nonexistent.sock", "--kernel-log"])
            .arg(&log)
            .args(extra);
        cmd.output().expect("gpudeck runs")
    };
    let text = doctor(&[]);
    let shown = stdout(&text);
    assert!(shown.contains("py\\u001b]0;pwned"), "{shown}");
    assert!(shown.contains("PCI:0000:9a:00\\u001b"), "{shown}");
    assert_inert("doctor --kernel-log", &text);

    let json = doctor(&["--json"]);
    assert_inert("doctor --kernel-log --json", &json);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&json)).expect("doctor --json");
    let names: Vec<String> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == "gpus.xid")
        .flat_map(|c| c["xids"].as_array().cloned().unwrap_or_default())
        .flat_map(|x| x["processes"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    // A process name is the kernel's `comm`: cut at 16 characters.
    let name: String = format!("py{HOSTILE}").chars().take(16).collect();
    assert_eq!(names, [format!("{name}…")], "{doc:#}");
}
