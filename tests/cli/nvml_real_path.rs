//! The real NVML code path (nvml-wrapper loading a libnvidia-ml) against the project's simulator library.

use crate::support;

use serde_json::Value;
use support::{sim_library, stderr, stdout, Dirs};

/// `gpudeck gpus --json` through NVML on the simulator, with the simulation set by `sim`.
fn gpus_json(sim: &str) -> (Value, i32) {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck(sim)
        .args(["gpus", "--json", "--nvml-lib"])
        .arg(sim_library())
        .output()
        .expect("gpudeck runs");
    let json = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
    (json, out.status.code().unwrap_or(-1))
}

#[test]
fn every_gpu_is_reported_with_its_facts() {
    let (doc, code) = gpus_json("gpus=8,seed=42,frozen=30");
    assert_eq!(code, 0);
    assert_eq!(doc["schema"], "gpudeck.gpus/v1");
    assert_eq!(doc["source"], "nvml");
    assert_eq!(doc["gpu_count"], 8);
    assert_eq!(doc["driver_version"], "580.65.06");
    assert_eq!(doc["cuda_driver_version"]["major"], 13);
    let gpu = &doc["gpus"][0];
    assert_eq!(gpu["index"], 0);
    assert!(gpu["name"].as_str().is_some_and(|n| n.contains("H100")));
    assert!(gpu["uuid"].as_str().is_some_and(|u| u.starts_with("GPU-")));
    assert_eq!(gpu["compute_capability"], "9.0");
    assert_eq!(gpu["memory_total_bytes"], 81559u64 * 1024 * 1024);
    for field in [
        "util_gpu_pct",
        "memory_used_bytes",
        "temp_c",
        "power_w",
        "sm_clock_mhz",
        "pcie_gen",
        "pstate",
    ] {
        assert!(gpu[field].is_number(), "{field} missing: {gpu}");
    }
    assert_eq!(gpu["pcie_gen_max"], 5);
    assert_eq!(gpu["pcie_width_max"], 16);
    assert_eq!(gpu["lost"], false);
    // 8 GPUs make 28 pairs, and on an SXM board every pair is joined by NVLink.
    let topo = doc["topology"].as_array().expect("topology");
    assert_eq!(topo.len(), 28);
    assert!(
        topo.iter().all(|t| t["nvlinks"].as_u64().unwrap_or(0) > 0),
        "{topo:?}"
    );
}

#[test]
fn the_demo_and_the_nvml_path_agree_on_the_same_simulation() {
    let sim = "gpus=4,seed=9,frozen=75,ecc=1:3:2,remap=2:failed";
    let (nvml, _) = gpus_json(sim);
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck(sim)
        .args(["gpus", "--json", "--demo"])
        .output()
        .expect("runs");
    let mut demo: Value = serde_json::from_str(&stdout(&out)).expect("json");
    demo["source"] = nvml["source"].clone();
    // Process user/command come from /proc on the NVML path and from the simulation in the demo.
    let strip = |v: &mut Value| {
        for g in v["gpus"].as_array_mut().into_iter().flatten() {
            for p in g["processes"].as_array_mut().into_iter().flatten() {
                p["user"] = Value::Null;
                p["command"] = Value::Null;
                p["container"] = Value::Null;
            }
        }
    };
    let mut nvml = nvml;
    strip(&mut nvml);
    strip(&mut demo);
    assert_eq!(nvml, demo);
}

#[test]
fn an_unsupported_metric_is_null_and_hides_nothing_else() {
    let (doc, code) = gpus_json("gpus=2,frozen=10,unsupported=power;fan");
    assert_eq!(code, 0);
    let gpu = &doc["gpus"][1];
    assert!(gpu["power_w"].is_null());
    assert!(gpu["fan_pct"].is_null());
    assert!(gpu["util_gpu_pct"].is_number());
    assert!(gpu["temp_c"].is_number());
    assert_eq!(
        gpu["errors"].as_array().map(Vec::len),
        Some(0),
        "unsupported is not an error"
    );
}

#[test]
fn a_lost_gpu_is_flagged_and_the_others_still_report() {
    let (doc, code) = gpus_json("gpus=3,frozen=10,lost=1");
    assert_eq!(code, 0);
    assert_eq!(doc["gpus"][1]["lost"], true);
    assert_eq!(doc["gpus"][0]["lost"], false);
    assert!(doc["gpus"][2]["util_gpu_pct"].is_number());
}

#[test]
fn init_failures_are_explained() {
    for (knob, title) in [
        ("init=driver-not-loaded", "NVIDIA kernel driver not loaded"),
        ("init=rm-mismatch", "Driver/library version mismatch"),
        ("init=no-permission", "No permission to use the GPUs"),
    ] {
        let (doc, code) = gpus_json(knob);
        assert_eq!(code, 1, "{knob}");
        assert_eq!(doc["error"]["title"], title, "{knob}");
        assert!(doc["error"]["fix"].as_str().is_some_and(|f| !f.is_empty()));
        assert_eq!(doc["gpus"].as_array().map(Vec::len), Some(0));
    }
}

#[test]
fn a_missing_library_is_explained_in_text() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("")
        .args(["gpus", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("No NVIDIA driver found"), "{text}");
    assert!(text.contains("--demo"), "{text}");
}

#[test]
fn downgraded_links_throttling_and_ecc_errors_surface() {
    let (doc, _) = gpus_json("gpus=4,frozen=40,downgrade=1,throttle=2:thermal,ecc=3:5:1");
    assert_eq!(doc["gpus"][1]["pcie_downgraded"], true);
    assert_eq!(doc["gpus"][0]["pcie_downgraded"], false);
    let reasons = doc["gpus"][2]["throttle_reasons"].to_string();
    assert!(reasons.contains("thermal"), "{reasons}");
    assert_eq!(doc["gpus"][3]["ecc_corrected"], 5);
    assert_eq!(doc["gpus"][3]["ecc_uncorrected"], 1);
    // The uncorrectable error waits for a row remap; Hopper retires no pages (NOT_SUPPORTED).
    assert_eq!(doc["gpus"][3]["remapped_rows"]["uncorrectable"], 1);
    assert_eq!(doc["gpus"][3]["remapped_rows"]["pending"], true);
    assert_eq!(doc["gpus"][0]["remapped_rows"]["pending"], false);
    assert!(doc["gpus"][3]["retired_pages"].is_null());
}

#[test]
fn a_real_process_on_the_gpu_is_described_from_proc() {
    // Its own process, whose command line names this file (`nvml_real_path::...`), as the
    // test binary's name did when this file was a binary of its own.
    if !support::in_own_process(
        module_path!(),
        "a_real_process_on_the_gpu_is_described_from_proc",
    ) {
        return;
    }
    let me = std::process::id();
    let (doc, _) = gpus_json(&format!("gpus=2,frozen=10,pids=1:{me}"));
    let procs = doc["gpus"][1]["processes"].as_array().expect("processes");
    let p = procs
        .iter()
        .find(|p| p["pid"] == me)
        .expect("our pid is listed");
    assert!(p["user"].is_string(), "{p}");
    assert!(
        p["command"]
            .as_str()
            .is_some_and(|c| c.contains("nvml_real_path")),
        "{p}"
    );
}

/// Per-process utilisation through nvml-wrapper and the simulator library: the shares the
/// simulation gives, newer-than-timestamp semantics, and nothing for a GPU without processes.
#[test]
fn per_process_utilisation_through_nvml_is_the_simulations() {
    use gpudeck::gpu::nvml::NvmlSource;
    use gpudeck::gpu::GpuSource;
    use gpudeck_sim_model::{SimSpec, Simulation};

    // The library reads the simulation from its process's environment when NVML starts: the
    // test sets it, and loads the library, in a process of its own.
    if !support::in_own_process(
        module_path!(),
        "per_process_utilisation_through_nvml_is_the_simulations",
    ) {
        return;
    }
    let spec = "gpus=8,seed=42,frozen=200";
    std::env::set_var("GPUDECK_SIM", spec);
    let mut source = NvmlSource::open(Some(sim_library().as_os_str())).expect("NVML opens");
    let inventory = source.inventory().expect("inventory");
    let model = Simulation::new(SimSpec::parse(spec).expect("spec"));
    let mut busy = 0;
    for gpu in &inventory.gpus {
        let read = source.process_utilization(gpu, 0).expect("supported");
        let want = model.process_utilization(gpu.index, 200.0);
        let got: Vec<_> = read
            .iter()
            .map(|s| {
                (
                    s.pid,
                    s.util.sm_pct,
                    s.util.mem_pct,
                    s.util.enc_pct,
                    s.util.dec_pct,
                )
            })
            .collect();
        let want: Vec<_> = want
            .iter()
            .map(|u| (u.pid, u.sm, u.mem, u.enc, u.dec))
            .collect();
        assert_eq!(got, want, "GPU {}", gpu.index);
        busy += got.iter().filter(|g| g.1 > 0).count();
        if let Some(newest) = read.iter().map(|s| s.timestamp_us).max() {
            assert_eq!(
                source.process_utilization(gpu, newest),
                Some(Vec::new()),
                "no sample is newer than the newest one read"
            );
        }
    }
    assert!(busy >= 3, "the busy GPUs' processes have shares");
}

/// The collector's quick sample through nvml-wrapper and the simulator library: the same live
/// values as a full one, and none of the slow metrics, which it does not ask NVML for.
#[test]
fn a_quick_sample_through_nvml_leaves_the_slow_metrics_out() {
    use gpudeck::gpu::nvml::NvmlSource;
    use gpudeck::gpu::GpuSource;

    if !support::in_own_process(
        module_path!(),
        "a_quick_sample_through_nvml_leaves_the_slow_metrics_out",
    ) {
        return;
    }
    // Frozen: both reads see the same moment of the simulation.
    std::env::set_var("GPUDECK_SIM", "gpus=2,seed=42,frozen=200");
    let mut source = NvmlSource::open(Some(sim_library().as_os_str())).expect("NVML opens");
    let inventory = source.inventory().expect("inventory");
    let gpu = &inventory.gpus[0];
    assert_eq!(gpu.ecc_enabled, Some(true), "the H100 shape has ECC on");
    let full = source.sample(gpu);
    let quick = source.sample_quick(gpu);
    assert!(full.errors.is_empty() && quick.errors.is_empty());
    assert!(full.power_limit_w.is_some());
    assert!(full.pcie_gen.is_some() && full.pcie_width.is_some());
    assert!(full.ecc_corrected.is_some() && full.ecc_uncorrected.is_some());
    assert!(full.remapped_rows.is_some());
    assert_eq!(
        (
            quick.power_limit_w,
            quick.pcie_gen,
            quick.pcie_width,
            quick.ecc_corrected,
            quick.ecc_uncorrected,
            quick.remapped_rows,
            quick.retired_pages,
        ),
        (None, None, None, None, None, None, None)
    );
    let mut carried = quick.clone();
    carried.keep_slow_from(&full);
    assert_eq!(
        carried, full,
        "a quick sample and the slow metrics are a full one"
    );
}
