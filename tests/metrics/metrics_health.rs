//! Xids and health counters as served: the live watcher through the real NVML path (the
//! simulator library raising Xids) and through the demo, and the alert rules shipped for them.

use crate::support;

use std::io::Write;
use std::process::{Command, Stdio};

use support::serve::{debian_tool, scrape, start, value, wait_for};
use support::{sim_library, Dirs};

/// Xids a second or two after start; time runs, so the events come.
const SIM: &str = "gpus=4,xid=1:48@1;2:79@1.5,replay=3:40,throttle=0:power";

/// The UUID the endpoint gives GPU `gpu` (from `gpudeck_gpu_info`).
fn uuid(text: &str, gpu: u32) -> String {
    let prefix = format!("gpudeck_gpu_info{{gpu=\"{gpu}\",uuid=\"");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no info line for GPU {gpu}:\n{text}"));
    line[prefix.len()..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_string()
}

fn promtool_check(promtool: &str, args: &[&str], stdin: &str) {
    let mut check = Command::new(promtool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn xids_from_nvml_events_are_counted_with_the_health_counters() {
    let dirs = Dirs::new();
    let mut cmd = dirs.gpudeck(SIM);
    cmd.args(["serve", "--metrics", "127.0.0.1:0", "--nvml-lib"])
        .arg(sim_library());
    let served = start(cmd);
    let text = wait_for(30, "both Xids and the lost GPU", || {
        let text = scrape(&served.addr);
        let lost = text
            .lines()
            .any(|l| l.starts_with(r#"gpudeck_gpu_lost{gpu="2","#) && l.ends_with(" 1"));
        let done = text.contains(r#"xid="48"}"#) && text.contains(r#"xid="79"}"#);
        (done && lost).then_some(text)
    });
    for (gpu, xid) in [(1, 48), (2, 79)] {
        let series = format!(
            r#"gpudeck_gpu_xid_errors_total{{gpu="{gpu}",uuid="{}",xid="{xid}"}}"#,
            uuid(&text, gpu)
        );
        assert_eq!(value(&text, &series), Some(1.0), "{series}\n{text}");
    }
    assert!(text.contains("# TYPE gpudeck_gpu_xid_errors_total counter"));
    let g = |gpu: u32| format!(r#"gpu="{gpu}",uuid="{}""#, uuid(&text, gpu));
    assert_eq!(
        value(&text, &format!("gpudeck_gpu_pcie_replay_total{{{}}}", g(3))),
        Some(40.0)
    );
    assert_eq!(
        value(&text, &format!("gpudeck_gpu_pcie_replay_total{{{}}}", g(0))),
        Some(0.0)
    );
    // GPU 1's Xid 48 left a row pending; the board's NVLinks are clean.
    assert_eq!(
        value(
            &text,
            &format!("gpudeck_gpu_remapped_rows_pending{{{}}}", g(1))
        ),
        Some(1.0)
    );
    let crc = format!(
        r#"gpudeck_gpu_nvlink_errors_total{{{},type="crc_flit"}}"#,
        g(1)
    );
    assert_eq!(value(&text, &crc), Some(0.0), "{text}");
    // GPU 0 is power-capped every second: its power violation time grows.
    let power = format!(
        r#"gpudeck_gpu_violation_seconds_total{{{},reason="power"}}"#,
        g(0)
    );
    wait_for(30, "power violation time", || {
        value(&scrape(&served.addr), &power).filter(|s| *s >= 1.0)
    });
    if let Some(promtool) = debian_tool("/usr/bin/promtool") {
        promtool_check(promtool, &["check", "metrics"], &text);
    }
}

#[test]
fn the_demo_serves_the_xids_of_its_simulation() {
    let dirs = Dirs::new();
    let mut cmd = dirs.gpudeck("gpus=2,xid=0:13@0.5");
    cmd.args(["--demo", "serve", "--metrics", "127.0.0.1:0"]);
    let served = start(cmd);
    let text = wait_for(30, "the Xid", || {
        Some(scrape(&served.addr)).filter(|t| t.contains("gpudeck_gpu_xid_errors_total{"))
    });
    let series = format!(
        r#"gpudeck_gpu_xid_errors_total{{gpu="0",uuid="{}",xid="13"}}"#,
        uuid(&text, 0)
    );
    assert_eq!(value(&text, &series), Some(1.0), "{text}");
}

#[test]
fn the_alert_rules_are_valid_and_name_only_served_metrics() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/prometheus/gpudeck-alerts.yml"
    );
    let rules = std::fs::read_to_string(path).unwrap();
    let served = [
        "gpudeck_gpu_lost",
        "gpudeck_gpu_xid_errors_total",
        "gpudeck_gpu_remapped_rows_pending",
        "gpudeck_gpu_remapped_rows_failed",
        "gpudeck_gpu_pcie_replay_total",
        "gpudeck_gpu_nvlink_errors_total",
        "gpudeck_gpu_violation_seconds_total",
    ];
    let named: Vec<&str> = rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("gpudeck_"))
        .collect();
    assert!(!named.is_empty());
    for name in named {
        assert!(
            served.contains(&name),
            "{name} is not a metric gpudeck serves"
        );
    }
    let Some(promtool) = debian_tool("/usr/bin/promtool") else {
        return;
    };
    let out = Command::new(promtool)
        .args(["check", "rules", path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn without_an_event_api_serve_goes_on_with_no_xid_family() {
    let dirs = Dirs::new();
    let mut cmd = dirs.gpudeck("gpus=2,unsupported=events,xid=0:13@0.2,replay=1:3");
    cmd.args(["serve", "--metrics", "127.0.0.1:0", "--nvml-lib"])
        .arg(sim_library());
    let mut served = start(cmd);
    let text = scrape(&served.addr);
    // Time must pass the Xid's 0.2 s: a scrape from after it still has no Xid family.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let later = scrape(&served.addr);
    for t in [&text, &later] {
        assert!(!t.contains("gpudeck_gpu_xid_errors_total"), "{t}");
        assert!(t.contains("gpudeck_gpu_pcie_replay_total{gpu=\"1\""), "{t}");
    }
    assert!(
        served.child.0.try_wait().unwrap().is_none(),
        "serve is still running"
    );
}
