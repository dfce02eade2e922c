//! `assets/grafana/gpudeck.json`: a Grafana dashboard that parses, takes its Prometheus as an
//! import input, covers the panels a researcher looks at first, and queries only metrics the
//! endpoint serves (with PromQL that promtool accepts, when it is installed).

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;

use gpudeck::gpu::sim::SimSource;
use gpudeck::gpu::xid_watch::XidEvent;
use gpudeck::gpu::{report, GpuSource};
use gpudeck::host::ProcessTable;
use gpudeck::metrics::{render_with, RunInfo, RunProcess, XidCounts};
use gpudeck_sim_model::SimSpec;
use serde_json::Value;

fn dashboard() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/grafana/gpudeck.json");
    let text = std::fs::read_to_string(path).expect("the dashboard exists");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every PromQL expression: panel targets and template variable queries.
fn queries(dash: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(target["expr"].as_str().unwrap().to_string());
        }
    }
    for var in dash["templating"]["list"].as_array().unwrap() {
        out.push(var["definition"].as_str().unwrap().to_string());
    }
    out
}

/// The metric families the endpoint serves on the simulation, with one live run and one Xid
/// seen.
fn served_families() -> BTreeSet<String> {
    let mut source = SimSource::new(SimSpec::parse("gpus=8,frozen=300").unwrap());
    let table: Arc<dyn ProcessTable> = Arc::new(source.process_table());
    let inventory = source.inventory().unwrap();
    let r = report::collect(&mut source as &mut dyn GpuSource, &table, "host".into());
    let samples: Vec<_> = r.gpus.into_iter().map(|g| g.sample).collect();
    let pid = samples[0].processes[0].pid;
    let runs = [RunInfo {
        id: "r1".into(),
        name: "train".into(),
        state: "running".into(),
        backend: "local".into(),
        slurm_job: None,
        gpus: vec![(0, inventory.gpus[0].uuid.clone())],
        processes: vec![RunProcess {
            gpu: 0,
            pid,
            rank: Some(0),
        }],
    }];
    let mut xids = XidCounts::default();
    xids.record(&XidEvent {
        gpu: 0,
        pci_bus_id: inventory.gpus[0].pci_bus_id.clone(),
        uuid: inventory.gpus[0].uuid.clone(),
        xid: 79,
        at_unix_ms: 0,
    });
    render_with(&inventory, &samples, &runs, &xids)
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(String::from)
        .collect()
}

/// The `gpudeck_*` names an expression mentions.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("gpudeck_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        names.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    names
}

#[test]
fn every_metric_the_dashboard_queries_is_served() {
    let dash = dashboard();
    let served = served_families();
    let mut used = BTreeSet::new();
    for expr in queries(&dash) {
        let names = metric_names(&expr);
        assert!(
            !names.is_empty(),
            "a query without a gpudeck metric: {expr}"
        );
        for name in names {
            assert!(served.contains(&name), "{name} is not served (in {expr})");
            used.insert(name);
        }
    }
    for core in [
        "gpudeck_gpu_utilization_ratio",
        "gpudeck_gpu_memory_used_bytes",
        "gpudeck_gpu_power_watts",
        "gpudeck_gpu_temperature_celsius",
        "gpudeck_gpu_throttle_reasons",
        "gpudeck_gpu_ecc_errors_total",
        "gpudeck_gpu_xid_errors_total",
        "gpudeck_gpu_pcie_replay_total",
        "gpudeck_gpu_nvlink_errors_total",
        "gpudeck_process_gpu_memory_bytes",
        "gpudeck_run_info",
        "gpudeck_run_gpu_info",
    ] {
        assert!(used.contains(core), "no panel shows {core}");
    }
}

#[test]
fn the_dashboard_imports_with_a_prometheus_input() {
    let dash = dashboard();
    let input = &dash["__inputs"][0];
    assert_eq!(input["name"], "DS_PROMETHEUS");
    assert_eq!(input["pluginId"], "prometheus");
    let panels = dash["panels"].as_array().unwrap();
    let titles: Vec<&str> = panels.iter().filter_map(|p| p["title"].as_str()).collect();
    for wanted in [
        "utilisation",
        "memory",
        "Power",
        "Temperature",
        "Throttle",
        "ECC",
        "Xid",
        "container",
        "Run",
    ] {
        assert!(
            titles.iter().any(|t| t.contains(wanted)),
            "no {wanted} panel in {titles:?}"
        );
    }
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        assert_eq!(
            panel["datasource"]["uid"], "${DS_PROMETHEUS}",
            "{}",
            panel["title"]
        );
        assert!(panel["gridPos"]["w"].as_u64().is_some());
    }
}

#[test]
fn promtool_accepts_every_query() {
    let Some(promtool) = support::serve::debian_tool("/usr/bin/promtool") else {
        return;
    };
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    let exprs = queries(&dashboard());
    for (i, expr) in exprs
        .iter()
        .filter(|e| !e.starts_with("label_values"))
        .enumerate()
    {
        let promql = expr
            .replace("$instance", ".*")
            .replace("$gpu", ".*")
            .replace("$run", ".*");
        rules.push_str(&format!(
            "      - record: dashboard:q{i}\n        expr: {}\n",
            serde_json::to_string(&promql).unwrap()
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rules.yml");
    std::fs::write(&file, rules).unwrap();
    let out = std::process::Command::new(promtool)
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
