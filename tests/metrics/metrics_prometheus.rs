//! A real Prometheus (Debian's package) scrapes `gpudeck serve` on loopback; its HTTP API must
//! return the simulator's values. Skipped, saying so, when the package is not installed.

use crate::support;

use std::process::{Command, Stdio};

use serde_json::Value;
use support::metrics::{demo, gpus_json};
use support::serve::{debian_tool, free_port, get, start, urlencode, wait_for, Reaped};
use support::Dirs;

/// A Prometheus with its own config, storage and port, scraping `target` every second.
fn prometheus(binary: &str, dirs: &Dirs, target: &str) -> (Reaped, String) {
    prometheus_with(
        binary,
        dirs,
        &format!("  - job_name: gpudeck\n    static_configs:\n      - targets: ['{target}']\n"),
    )
}

/// A Prometheus with its own config, storage and port, with these scrape configs.
fn prometheus_with(binary: &str, dirs: &Dirs, jobs: &str) -> (Reaped, String) {
    let root = dirs.root.path().join("prometheus");
    std::fs::create_dir_all(root.join("data")).unwrap();
    let config = root.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n{jobs}"
        ),
    )
    .unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let child = Command::new(binary)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            root.join("data").display()
        ))
        .arg(format!("--web.listen-address={listen}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    (Reaped(child), listen)
}

/// The instant query's result vector, once Prometheus answers with one.
fn query(prom: &str, promql: &str) -> Option<Vec<Value>> {
    let (status, body) = get(prom, &format!("/api/v1/query?query={}", urlencode(promql))).ok()?;
    if status != 200 {
        return None;
    }
    let doc: Value = serde_json::from_str(&body).ok()?;
    let result = doc["data"]["result"].as_array()?.clone();
    (!result.is_empty()).then_some(result)
}

#[test]
fn prometheus_scrapes_the_simulators_gpu_series() {
    let Some(binary) = debian_tool("/usr/bin/prometheus") else {
        return;
    };
    let dirs = Dirs::new();
    let served = start(demo(&dirs, &["serve", "--metrics", "127.0.0.1:0"]));
    let (mut prom, listen) = prometheus(binary, &dirs, &served.addr);
    let gpus = gpus_json(demo(&dirs, &[]));
    // The first sample is queryable about 5-6 s after Prometheus starts.
    let series = wait_for(60, "Prometheus to have gpudeck's series", || {
        if let Ok(Some(status)) = prom.0.try_wait() {
            panic!("prometheus exited early: {status:?}");
        }
        query(&listen, r#"gpudeck_gpu_utilization_ratio{job="gpudeck"}"#)
            .filter(|r| r.len() == gpus.len())
    });
    for gpu in &gpus {
        let index = gpu["index"].to_string();
        let got = series
            .iter()
            .find(|s| s["metric"]["gpu"].as_str() == Some(index.as_str()))
            .unwrap_or_else(|| panic!("no series for GPU {index}: {series:?}"));
        assert_eq!(got["metric"]["uuid"], gpu["uuid"]);
        let value: f64 = got["value"][1].as_str().unwrap().parse().unwrap();
        assert_eq!(value, gpu["util_gpu_pct"].as_f64().unwrap() / 100.0);
    }
    let used = query(&listen, r#"gpudeck_gpu_memory_used_bytes{gpu="1"}"#).unwrap();
    let used: f64 = used[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert_eq!(Some(used), gpus[1]["memory_used_bytes"].as_f64());
    let up = query(&listen, r#"up{job="gpudeck"}"#).unwrap();
    assert_eq!(up[0]["value"][1], "1");
}

#[test]
fn prometheus_scrapes_over_tls_with_its_user_and_a_scraper_without_one_is_refused() {
    let Some(binary) = debian_tool("/usr/bin/prometheus") else {
        return;
    };
    let dirs = Dirs::new();
    let pki = support::tls::Pki::write(&dirs.root.path().join("pki"));
    let web = pki.web_config("", true);
    let mut cmd = demo(&dirs, &["serve", "--metrics", "127.0.0.1:0"]);
    cmd.arg("--web-config").arg(&web);
    let served = start(cmd);
    let ca = pki.path("ca.pem");
    let job = |name: &str, auth: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config:\n      ca_file: {}\n{auth}\
             \x20   static_configs:\n      - targets: ['{}']\n",
            ca.display(),
            served.addr
        )
    };
    let jobs = format!(
        "{}{}",
        job(
            "gpudeck",
            &format!(
                "    basic_auth:\n      username: prom\n      password: {}\n",
                support::tls::PASSWORD
            )
        ),
        job("anonymous", "")
    );
    let (mut prom, listen) = prometheus_with(binary, &dirs, &jobs);
    let series = wait_for(60, "Prometheus to have gpudeck's series over TLS", || {
        if let Ok(Some(status)) = prom.0.try_wait() {
            panic!("prometheus exited early: {status:?}");
        }
        query(&listen, r#"gpudeck_gpu_info{job="gpudeck"}"#)
    });
    assert!(!series.is_empty());
    let up = wait_for(30, "both jobs scraped", || {
        query(&listen, "up").filter(|r| r.len() == 2)
    });
    let up_of = |job: &str| {
        up.iter()
            .find(|s| s["metric"]["job"] == job)
            .map(|s| s["value"][1].as_str().unwrap().to_owned())
    };
    assert_eq!(up_of("gpudeck").as_deref(), Some("1"), "{up:?}");
    assert_eq!(
        up_of("anonymous").as_deref(),
        Some("0"),
        "no user, no metrics: {up:?}"
    );
    assert!(
        query(&listen, r#"gpudeck_gpu_info{job="anonymous"}"#).is_none(),
        "the anonymous scraper got no series"
    );
}
