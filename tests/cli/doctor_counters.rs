//! `gpudeck doctor`'s health counters through the real NVML path: the simulator's PCIe replays,
//! NVLink errors after an Xid 74 and power violation time, with their change since the last
//! look kept in the state dir.

use crate::support;

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;
use support::{sim_library, stderr, stdout, Dirs};

/// One `doctor --json` in `dirs` (the same state dir each time) on the simulator.
fn doctor(dirs: &Dirs, sim: &str) -> Value {
    let out = dirs
        .gpudeck(sim)
        .args([
            "doctor",
            "--json",
            "--docker-host",
            "unix:///nonexistent.sock",
            "--nvml-lib",
        ])
        .arg(sim_library())
        .output()
        .expect("gpudeck runs");
    serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)))
}

fn counters(doc: &Value) -> &Value {
    doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "gpus.health_counters"))
        .unwrap_or_else(|| panic!("no health counters check: {doc:#}"))
}

#[test]
fn counters_show_their_change_since_the_last_look() {
    let dirs = Dirs::new();
    let sim = "gpus=2,replay=1:40,throttle=0:power,xid=0:74@5,frozen=30";
    let first = doctor(&dirs, sim);
    let c = counters(&first);
    assert_eq!(c["status"], "warn", "{c:#}");
    let detail = c["detail"].as_str().unwrap_or_default();
    for words in [
        "GPU 1: PCIe replays 40 (+40)",
        "GPU 0: PCIe replays 0 (+0), NVLink CRC 29 (+29), replays 9 (+9), recoveries 1 (+1)",
        "power-capped 30s",
        "first look",
    ] {
        assert!(detail.contains(words), "{words}: {detail}");
    }
    let fix = c["fix"].as_str().unwrap_or_default();
    assert!(fix.contains("PCIe replays rising on GPU 1"), "{fix}");
    assert!(fix.contains("NVLink errors rising on GPU 0"), "{fix}");
    // The look is kept, private; the GPU checks come before it and CUDA's after.
    let file = dirs.state().join("health-counters.json");
    let mode = std::fs::metadata(&file)
        .expect("look kept")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let ids: Vec<&str> = first["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    let at = ids
        .iter()
        .position(|i| *i == "gpus.health_counters")
        .unwrap();
    assert!(ids[at - 1].starts_with("gpus."), "{ids:?}");
    // Nothing new since: a pass, every change +0.
    let second = doctor(&dirs, sim);
    let c = counters(&second);
    assert_eq!(c["status"], "pass", "{c:#}");
    let detail = c["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("PCIe replays 40 (+0)"), "{detail}");
    assert!(detail.contains("since the last look"), "{detail}");
}

#[test]
fn a_geforce_card_shows_what_it_has() {
    let dirs = Dirs::new();
    let doc = doctor(&dirs, "profile=rtx4090,gpus=1,frozen=30");
    let c = counters(&doc);
    assert_eq!(c["status"], "pass", "{c:#}");
    let detail = c["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("GPU 0: PCIe replays 0 (+0)"), "{detail}");
    assert!(
        !detail.contains("NVLink") && !detail.contains("power-capped"),
        "{detail}"
    );
}
