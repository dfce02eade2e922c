//! `gpudeck doctor --kernel-log`: Xids from saved kernel logs on the NVML simulator's default
//! machine (buses 18, 2A, 3A, 5D, 9A, AB, BA, DB), GPUs matched by bus id and named as gpudeck
//! numbers them, in text and JSON.

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{sim_library, stderr, stdout, Dirs};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kernel-logs")
        .join(name)
}

fn doctor(dirs: &Dirs, args: &[&str]) -> Command {
    let mut cmd = dirs.gpudeck("gpus=8,frozen=30");
    cmd.env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("CUDA_DEVICE_ORDER")
        .arg("doctor")
        .arg("--nvml-lib")
        .arg(sim_library())
        .args(["--docker-host", "unix:///nonexistent.sock"])
        .args(args);
    cmd
}

fn xid_checks(doc: &Value) -> Vec<&Value> {
    doc["checks"]
        .as_array()
        .map(|c| c.iter().filter(|c| c["id"] == "gpus.xid").collect())
        .unwrap_or_default()
}

#[test]
fn a_saved_dmesg_names_each_gpu_by_its_bus_id_with_meaning_and_action() {
    let dirs = Dirs::new();
    let log = fixture("dmesg-xids.log");
    let out = doctor(&dirs, &["--json", "--kernel-log", log.to_str().unwrap()])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
    assert_eq!(doc["schema"], "gpudeck.doctor/v1");
    let xids = xid_checks(&doc);
    let summary: Vec<(String, String)> = xids
        .iter()
        .map(|c| {
            let detail = c["detail"].as_str().unwrap();
            let who = detail.split(": ").next().unwrap().to_string();
            (who, c["status"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("GPU 2 (00000000:3A:00.0)".to_string(), "fail".to_string()),
            ("GPU 4 (00000000:9A:00.0)".to_string(), "warn".to_string()),
            (
                "bus 00000000:5E:00.0 (no GPU here has this bus id)".to_string(),
                "warn".to_string()
            ),
        ],
        "{doc:#}"
    );
    let fell = &xids[0];
    assert!(fell["detail"].as_str().unwrap().contains(
        "Xid 79 (bus and power) at 11412.3 s after boot: the GPU has fallen off the bus"
    ));
    assert!(fell["fix"]
        .as_str()
        .unwrap()
        .starts_with("Xid 79: Reboot the machine"));
    let x = &fell["xids"][0];
    assert_eq!((x["xid"].as_u64(), x["gpu"].as_u64()), (Some(79), Some(2)));
    assert_eq!(x["bus_id"], "00000000:3A:00.0");
    assert_eq!(
        (x["class"].as_str(), x["severity"].as_str()),
        (Some("bus-power"), Some("fail"))
    );
    assert_eq!(x["action"], "reboot");
    assert_eq!(x["first"]["since_boot_s"], 11412.34569);
    let app = &xids[1]["xids"][0];
    // Two lines 100 µs apart: one Xid 13, as the driver writes it.
    assert_eq!(
        (
            app["xid"].as_u64(),
            app["count"].as_u64(),
            app["lines"].as_u64()
        ),
        (Some(13), Some(1), Some(2))
    );
    assert_eq!(app["processes"][0]["pid"], 48211);
    assert_eq!(app["processes"][0]["name"], "python");
    let unknown = &xids[2]["xids"][0];
    assert!(unknown["name"].is_null() && unknown["gpu"].is_null());
    assert_eq!(unknown["text"], "something gpudeck has not heard of");
    assert_eq!(doc["exit_code"], 2);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_journal_on_stdin_reads_as_text_with_times_and_the_exit_code() {
    let dirs = Dirs::new();
    let mut child = doctor(&dirs, &["--kernel-log", "-"])
        .env("COLUMNS", "100")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read_to_string(fixture("journal-short-iso.log")).unwrap();
    // Pasted from Windows: CRLF line ends.
    let crlf = text.replace('\n', "\r\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(crlf.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    assert!(text.contains("FAIL  Xid errors"), "{text}");
    // The detail wraps in its column; read it as one line.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        "GPU 0 (00000000:18:00.0): Xid 48 (memory and ECC) at 2026-11-24 03:14:07 UTC",
        "; Xid 63 (memory and ECC) at 2026-11-24 03:14:07 UTC",
        "; Xid 45 (application) at 2026-11-24 03:14:08 UTC: preemptive cleanup",
        "fix: Xid 48: Reset the GPU or reboot",
    ] {
        assert!(flat.contains(said), "{said}\n{text}");
    }
    // The Xid check fits the width (other checks may hold an unbreakable URL).
    let xid_part = text
        .lines()
        .skip_while(|l| !l.contains("Xid errors"))
        .take_while(|l| !l.is_empty());
    for line in xid_part {
        assert!(line.chars().count() <= 100, "{line:?}");
    }
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn an_unreadable_kernel_log_is_a_clear_error() {
    let dirs = Dirs::new();
    let out = doctor(&dirs, &["--kernel-log", "/nonexistent/kernel.log"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot read the kernel log /nonexistent/kernel.log: No such file"),
        "{err}"
    );
    assert!(err.contains("sudo dmesg > kernel.log"), "{err}");
}

#[test]
fn without_a_file_the_live_log_is_read_or_skipped_with_how() {
    let dirs = Dirs::new();
    let out = doctor(&dirs, &["--json"]).output().unwrap();
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let xids = xid_checks(&doc);
    // This machine has no NVIDIA GPU: its log, when readable, holds no Xid for these buses.
    assert_eq!(xids.len(), 1, "{xids:#?}");
    match xids[0]["status"].as_str() {
        Some("pass") => assert!(xids[0]["detail"].as_str().unwrap().contains("since boot")),
        Some("skip") => assert!(xids[0]["fix"].as_str().unwrap().contains("systemd-journal")),
        other => panic!("{other:?}: {:#}", xids[0]),
    }
}
