//! `gpudeck serve --metrics`: the endpoint as a scraper sees it, on the frozen simulation.

mod support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use support::metrics::{demo, gpus_json};
use support::serve::{debian_tool, get, scrape, start, value, wait_for, Reaped};
use support::Dirs;

fn serve(dirs: &Dirs, addr: &str) -> Command {
    demo(dirs, &["serve", "--metrics", addr])
}

#[test]
fn a_scrape_holds_the_simulators_values_for_every_gpu() {
    let dirs = Dirs::new();
    let served = start(serve(&dirs, "127.0.0.1:0"));
    let text = scrape(&served.addr);
    let gpus = gpus_json(demo(&dirs, &[]));
    assert_eq!(gpus.len(), 4);
    for gpu in &gpus {
        let labels = format!(
            r#"{{gpu="{}",uuid="{}"}}"#,
            gpu["index"],
            gpu["uuid"].as_str().unwrap()
        );
        let at = |name: &str| value(&text, &format!("{name}{labels}"));
        let util = gpu["util_gpu_pct"].as_f64().unwrap() / 100.0;
        assert_eq!(at("gpudeck_gpu_utilization_ratio"), Some(util), "{labels}");
        let used = gpu["memory_used_bytes"].as_f64();
        assert_eq!(at("gpudeck_gpu_memory_used_bytes"), used, "{labels}");
        assert_eq!(at("gpudeck_gpu_power_watts"), gpu["power_w"].as_f64());
        assert_eq!(
            at("gpudeck_gpu_temperature_celsius"),
            gpu["temp_c"].as_f64()
        );
        let sm_hz = gpu["sm_clock_mhz"].as_f64().map(|m| m * 1e6);
        assert_eq!(at("gpudeck_gpu_sm_clock_hertz"), sm_hz);
    }
    // The frozen machine: GPU 1 trains at 93 %, GPU 3 idles.
    assert!(text.contains(r#"gpudeck_gpu_utilization_ratio{gpu="1","#));
    assert!(text.contains("# TYPE gpudeck_gpu_ecc_errors_total counter"));
    assert!(text.contains("gpudeck_process_gpu_memory_bytes{gpu=\"0\""));
}

#[test]
fn the_index_page_links_to_the_metrics_and_other_paths_are_404() {
    let dirs = Dirs::new();
    let served = start(serve(&dirs, "127.0.0.1:0"));
    let (status, body) = get(&served.addr, "/").unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("href=\"/metrics\""), "{body}");
    assert_eq!(get(&served.addr, "/nothing").unwrap().0, 404);
}

#[test]
fn promtool_accepts_the_scrape() {
    let Some(promtool) = debian_tool("/usr/bin/promtool") else {
        return;
    };
    let dirs = Dirs::new();
    let served = start(serve(&dirs, "127.0.0.1:0"));
    let text = scrape(&served.addr);
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigterm_stops_serve_cleanly() {
    let dirs = Dirs::new();
    let mut served = start(serve(&dirs, "127.0.0.1:0"));
    scrape(&served.addr);
    let pid = served.child.0.id().to_string();
    let kill = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(kill.success());
    let status = wait_for(10, "serve to exit", || {
        served.child.0.try_wait().expect("try_wait")
    });
    assert!(status.success(), "{status:?}");
    assert!(get(&served.addr, "/metrics").is_err(), "still listening");
}

#[test]
fn a_taken_port_is_explained() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dirs = Dirs::new();
    let mut cmd = serve(&dirs, &addr);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = Reaped(cmd.spawn().unwrap());
    let status = wait_for(20, "serve to give up", || {
        child.0.try_wait().expect("try_wait")
    });
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains(&format!("cannot serve metrics on {addr}")),
        "{err}"
    );
    assert!(err.contains("already in use"), "{err}");
}

#[test]
fn a_gpu_source_that_cannot_open_ends_serve_with_the_reason() {
    let dirs = Dirs::new();
    let mut cmd = dirs.gpudeck("");
    cmd.args(["--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .args(["serve", "--metrics", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = Reaped(cmd.spawn().unwrap());
    let status = wait_for(20, "serve to give up", || {
        child.0.try_wait().expect("try_wait")
    });
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("/nonexistent/libnvidia-ml.so.1"), "{err}");
}

#[test]
fn serve_goes_on_when_nobody_reads_its_banner() {
    let dirs = Dirs::new();
    let addr = format!("127.0.0.1:{}", support::serve::free_port());
    let mut cmd = serve(&dirs, &addr);
    cmd.stdout(support::pipes::reader_gone())
        .stderr(Stdio::piped())
        .env("RUST_BACKTRACE", "0");
    let mut child = Reaped(cmd.spawn().unwrap());
    drop(cmd);
    let text = scrape(&addr);
    assert!(text.contains("gpudeck_gpu_"), "{text}");
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "serve still runs after its banner found no reader"
    );
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
}
