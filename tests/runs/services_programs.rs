//! The services' real programs, started with gpudeck's command lines and probed with its
//! probes and parsers: JupyterLab (token required, a kernel listed), TensorBoard (its log
//! directory served), Triton (a model READY on the CPU, one inference counted). Each is
//! stopped with SIGTERM at the end and leaves no process behind; a missing program is
//! SKIPPED with how to install it.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use gpudeck::services::{jupyter, probe, tensorboard, triton};

use crate::support::serve::free_port;
use crate::support::services::{self, or_skip, Service};

/// Starting takes 1 to 4 s here; CI machines under load are slower.
const START: Duration = Duration::from_secs(90);

#[tokio::test]
async fn jupyter_lab_wants_its_token_and_lists_the_kernel_it_started() {
    let test = "jupyter_lab_wants_its_token_and_lists_the_kernel_it_started";
    let Some(jupyter) = or_skip(test, services::jupyter()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir(&root).unwrap();
    let (port, token) = (free_port(), jupyter::new_token().unwrap());
    let mut env: Vec<(String, OsString)> = jupyter::notebook_env(&token)
        .into_iter()
        .map(|(k, v)| (k, v.into()))
        .collect();
    // The user's Jupyter config stays out of it, and the runtime files (which hold the token)
    // go to the test's directory.
    env.push((
        "JUPYTER_CONFIG_DIR".into(),
        dir.path().join("config").into(),
    ));
    env.push((
        "JUPYTER_RUNTIME_DIR".into(),
        dir.path().join("runtime").into(),
    ));
    let argv = jupyter::notebook_command(&jupyter, "127.0.0.1", port, &root);
    let mut lab = Service::start(&argv, &env, &dir.path().join("jupyter.log"));

    let cmdline = std::fs::read(format!("/proc/{}/cmdline", lab.pid())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains(&token));

    let client = probe::client().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let up = probe::wait_ready(&client, &format!("{base}{}", jupyter::UP_PATH), None, START)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", lab.output()));
    assert!(up.contains("\"version\""), "{up}");

    let status_url = format!("{base}{}", jupyter::STATUS_PATH);
    for wrong in [None, Some("not-the-token")] {
        let answer = probe::get(&client, &status_url, wrong).await.unwrap();
        assert_eq!(answer.status, 403, "{wrong:?}: {}", answer.body);
    }
    let status = probe::get(&client, &status_url, Some(&token))
        .await
        .unwrap();
    let status = jupyter::parse_status(&status.success().unwrap()).unwrap();
    assert_eq!((status.kernels, status.connections), (0, 0));

    let kernels_url = format!("{base}{}", jupyter::KERNELS_PATH);
    let started = probe::post(
        &client,
        &kernels_url,
        Some(&token),
        r#"{"name": "python3"}"#,
    )
    .await
    .unwrap();
    assert_eq!(started.status, 201, "{}", started.body);
    let id = serde_json::from_str::<serde_json::Value>(&started.body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = probe::get(&client, &kernels_url, Some(&token))
        .await
        .unwrap();
    let kernels = jupyter::parse_kernels(&listed.success().unwrap()).unwrap();
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    assert_eq!(
        (kernels[0].id.as_str(), kernels[0].name.as_str()),
        (id.as_str(), "python3")
    );
    assert!(kernels[0].last_activity_ms.is_some(), "{kernels:?}");
    // Nobody has connected to it: it says it is starting, or idle once it got there.
    assert!(
        matches!(
            kernels[0].execution_state,
            jupyter::KernelState::Starting | jupyter::KernelState::Idle
        ),
        "{kernels:?}"
    );
    assert!(
        !services::processes_with(&id).is_empty(),
        "no kernel process for {id}"
    );

    lab.stop(Duration::from_secs(30));
    assert_eq!(
        services::wait_gone(&id, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
    let refused = probe::get(&client, &status_url, Some(&token))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, probe::ProbeError::Refused { .. }),
        "{refused}"
    );
}

#[tokio::test]
async fn tensorboard_serves_its_log_directory_on_loopback() {
    let test = "tensorboard_serves_its_log_directory_on_loopback";
    let Some(tensorboard) = or_skip(test, services::tensorboard()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let logdir = dir.path().join("logs");
    std::fs::create_dir(&logdir).unwrap();
    let port = free_port();
    let argv = tensorboard::tensorboard_command(&tensorboard, "127.0.0.1", &logdir, port);
    let mut board = Service::start(&argv, &[], &dir.path().join("tensorboard.log"));

    let client = probe::client().unwrap();
    let url = format!("http://127.0.0.1:{port}{}", tensorboard::READY_PATH);
    let body = probe::wait_ready(&client, &url, None, START)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", board.output()));
    assert_eq!(
        tensorboard::parse_logdir(&body).unwrap(),
        logdir.to_str().unwrap()
    );

    board.stop(Duration::from_secs(30));
    let needle = logdir.to_str().unwrap();
    assert_eq!(
        services::wait_gone(needle, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn triton_serves_the_test_model_on_the_cpu_and_counts_an_inference() {
    let test = "triton_serves_the_test_model_on_the_cpu_and_counts_an_inference";
    let Some(server) = or_skip(test, services::tritonserver()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let backends = triton::prepare_backend_directory(&server, &dir.path().join("backends"))
        .unwrap_or_else(|e| panic!("{e}"));
    // A copy: the python backend's stub writes the model's bytecode beside it (its embedded
    // interpreter ignores PYTHONDONTWRITEBYTECODE), which must not land in the source tree.
    let repo = dir.path().join("models");
    services::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/services/triton-test-repo"),
        &repo,
    );
    let ports = triton::TritonPorts {
        http: free_port(),
        grpc: free_port(),
        metrics: free_port(),
    };
    let install = triton::TritonInstall::from_binary(&server);
    let env = triton::triton_env(
        &install,
        std::env::var_os("PATH"),
        std::env::var_os("LD_LIBRARY_PATH"),
    );
    let argv = triton::triton_command(&server, "127.0.0.1", &repo, Some(&backends), ports);
    let mut tritonserver = Service::start(&argv, &env, &dir.path().join("triton.log"));

    let client = probe::client().unwrap();
    let http = format!("http://127.0.0.1:{}", ports.http);
    let ready = format!("{http}{}", triton::api::READY_PATH);
    probe::wait_ready(&client, &ready, None, START)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", tritonserver.output()));

    let index_url = format!("{http}{}", triton::api::REPOSITORY_INDEX_PATH);
    let index = probe::post(&client, &index_url, None, "{}").await.unwrap();
    let models = triton::parse_repository_index(&index.success().unwrap()).unwrap();
    assert_eq!(
        models,
        [triton::Model {
            name: "identity".into(),
            version: Some("1".into()),
            state: Some(triton::ModelState::Ready),
            reason: None,
        }]
    );

    let request =
        r#"{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP32","data":[1.0,2.5,-3.0]}]}"#;
    let infer_url = format!("{http}/v2/models/identity/infer");
    let answer = probe::post(&client, &infer_url, None, request)
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer.success().unwrap()).unwrap();
    assert_eq!(answer["outputs"][0]["name"], "OUTPUT0");
    assert_eq!(
        answer["outputs"][0]["data"],
        serde_json::json!([1.0, 2.5, -3.0])
    );

    let metrics_url = format!("http://127.0.0.1:{}/metrics", ports.metrics);
    let stats = counted(&client, &metrics_url).await;
    assert_eq!(stats.len(), 1, "{stats:?}");
    let identity = &stats[0];
    assert_eq!(
        (identity.model.as_str(), identity.version.as_str()),
        ("identity", "1")
    );
    assert_eq!(
        (identity.inferences, identity.successes, identity.failures),
        (1, 1, 0)
    );
    let latency = identity.average_latency_us().unwrap();
    assert!(
        latency > 0.0 && latency == identity.request_duration_us as f64,
        "{identity:?}"
    );

    let status = tritonserver.stop(Duration::from_secs(40));
    assert!(status.success(), "{status}\n{}", tritonserver.output());
    let stubs = backends.to_str().unwrap();
    assert_eq!(
        services::wait_gone(stubs, Duration::from_secs(10)),
        Vec::<u32>::new()
    );
}

/// The parsed metrics once they count an inference (Triton counts as the response leaves, so
/// a scrape right after it may come first), within 10 s.
async fn counted(client: &reqwest::Client, url: &str) -> Vec<triton::ModelStats> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = probe::get(client, url, None).await.unwrap();
        let stats = triton::parse_metrics(&metrics.success().unwrap()).unwrap();
        if stats.iter().any(|s| s.inferences > 0) || std::time::Instant::now() > deadline {
            return stats;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
