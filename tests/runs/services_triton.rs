//! `gpudeck triton REPO --host` with the real tritonserver of the nvidia-pytriton wheel (in
//! `target/test-venv`, found inside the environment as a user's venv on PATH would have it):
//! started on a simulated GPU with the test model repository, ready before the command
//! returns, its model and then an inference's count and latency in `gpudeck services --json`,
//! and stopped, every port closed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::runs::{gpudeck, output, record, wait_until, GroupGuard};
use crate::support::{services, stderr, stdout, Dirs};

fn listed(dirs: &Dirs, id: &str) -> Value {
    let out = output(dirs, &["services", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("services --json is JSON");
    doc["services"]
        .as_array()
        .expect("services[]")
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} is not listed: {doc}"))
}

fn infer(port: u16) -> String {
    let body =
        r#"{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP32","data":[1.0,2.5,-3.0]}]}"#;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    write!(
        stream,
        "POST /v2/models/identity/infer HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

#[test]
fn a_host_triton_serves_the_repository_on_its_gpu_and_counts_inferences() {
    let test = "a_host_triton_serves_the_repository_on_its_gpu_and_counts_inferences";
    let Some(server) = services::or_skip(test, services::tritonserver()) else {
        return;
    };
    // As a user has it: the environment's bin on PATH, the server inside the wheel.
    let env_bin = server
        .ancestors()
        .find(|dir| dir.join("bin/python3").exists())
        .map(|env| env.join("bin"))
        .expect("the wheel's environment");
    let dirs = Dirs::new();
    let repo = dirs.root.path().join("models");
    services::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/services/triton-test-repo"),
        &repo,
    );
    let path = format!(
        "{}:{}",
        env_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = gpudeck(
        &dirs,
        &["triton", "--host", "--gpus", "2", "--name", "serve"],
    )
    .arg(&repo)
    .env("PATH", &path)
    .output()
    .expect("gpudeck runs");
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    let id = stdout(&out).trim().to_string();
    let rec = record(&dirs, &id);
    let _guard = GroupGuard(rec["process_group"]["pid"].as_i64());
    assert!(
        said.contains("Triton Inference Server is ready, on GPU 2")
            && said.contains("model identity READY"),
        "{said}"
    );
    assert_eq!(
        rec["ranks"][0]["env"]["CUDA_VISIBLE_DEVICES"],
        rec["gpus"][0]["uuid"]
    );

    let row = listed(&dirs, &id);
    assert_eq!(
        (row["kind"].as_str(), row["health"].as_str()),
        (Some("triton"), Some("ready"))
    );
    let port = |name: &str| {
        row["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["port"].as_u64())
            .unwrap_or_else(|| panic!("no {name} port: {row}")) as u16
    };
    let (http, grpc, metrics) = (port("http"), port("grpc"), port("metrics"));
    assert_eq!(row["url"], format!("http://127.0.0.1:{http}/v2"));
    for p in [http, grpc, metrics] {
        assert!(
            row["ssh"]
                .as_str()
                .expect("ssh")
                .contains(&format!("-L {p}:127.0.0.1:{p}")),
            "{row}"
        );
    }
    assert_eq!(row["models"][0]["name"], "identity");
    assert_eq!(row["models"][0]["state"], "READY");
    assert_eq!(row["models"][0]["inferences"], 0);

    let answer = infer(http);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    wait_until("the inference to be counted", || {
        listed(&dirs, &id)["models"][0]["inferences"] == 1
    });
    let model = &listed(&dirs, &id)["models"][0];
    assert_eq!(
        (model["successes"].as_u64(), model["failures"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(
        model["mean_latency_us"].as_f64().is_some_and(|us| us > 0.0),
        "{model}"
    );

    let stop = output(&dirs, &["stop", &id]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    assert_eq!(listed(&dirs, &id)["state"], "stopped");
    for p in [http, grpc, metrics] {
        assert!(
            TcpStream::connect(("127.0.0.1", p)).is_err(),
            "port {p} still open"
        );
    }
}
