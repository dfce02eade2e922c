//! Containers on the real engine: listing, GPU grants, details, and start/stop/restart/remove.

use crate::support;

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use bollard::models::{ContainerCreateBody, DeviceRequest, HostConfig};
use bollard::query_parameters::CreateContainerOptionsBuilder;
use gpudeck::docker::{
    render_containers_text, ContainerInfo, ContainerListing, ContainerState, DockerError, Engine,
    GpuGrant, GpuSelection,
};
use support::docker::{connect as engine, docker, engine_or_skip, unique};
use support::docker_cleanup::Cleanup;
use support::real::Part;

/// Re-reads the container until `done` holds, or panics after 20 s with what it saw last.
async fn wait_for(
    engine: &Engine,
    id: &str,
    what: &str,
    done: impl Fn(&Option<ContainerInfo>) -> bool,
) -> Option<ContainerInfo> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = engine.container(id).await.unwrap();
        if done(&seen) {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn in_state(state: ContainerState) -> impl Fn(&Option<ContainerInfo>) -> bool {
    move |seen| seen.as_ref().is_some_and(|c| c.state == state)
}

#[tokio::test]
async fn the_list_shows_a_created_container_and_its_env_gpus() {
    if !engine_or_skip("the_list_shows_a_created_container_and_its_env_gpus") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("listed");
    cleanup.container(&name);
    let id = docker(&[
        "create",
        "--name",
        &name,
        "-e",
        "NVIDIA_VISIBLE_DEVICES=0,1",
        "--label",
        "role=test",
        &image,
        "sleep",
        "30",
    ]);

    let engine = engine().await;
    let all = engine.containers().await.unwrap();
    let found = all
        .iter()
        .find(|c| c.id == id)
        .expect("the new container is listed");
    assert_eq!(found.name, name);
    assert_eq!(found.image, image);
    assert_eq!(found.state, ContainerState::Created);
    assert_eq!(found.status, "Created");
    assert_eq!(found.command, "sleep 30");
    assert_eq!(found.started_at, None);
    assert_eq!(found.exit_code, None);
    assert_eq!(found.labels.get("role").map(String::as_str), Some("test"));
    assert_eq!(
        found.gpus,
        vec![GpuGrant::Env {
            devices: GpuSelection::Devices(vec!["0".into(), "1".into()])
        }]
    );
    assert!(found.created > 1_600_000_000, "{}", found.created);

    let one = engine.container(&name).await.unwrap();
    assert_eq!(
        one.as_ref(),
        Some(found),
        "by name, the same as in the list"
    );
    let listed: Vec<ContainerListing> = all
        .iter()
        .map(|c| ContainerListing::new(c.clone(), None, false))
        .collect();
    let text = render_containers_text(&listed, 1000);
    let row = text.lines().find(|l| l.ends_with(&name)).expect("a row");
    assert!(row.starts_with(&id[..12]), "{text}");
    assert!(row.contains("env:0,1"), "{text}");
    assert_eq!(
        engine.container("gpudeck-test-no-such").await.unwrap(),
        None
    );
}

/// An engine for the GPU tests, or `None` (skipped) when it has the nvidia runtime and the
/// refusal these tests expect cannot happen.
async fn engine_without_gpu_runtime(test: &str) -> Option<Engine> {
    if !engine_or_skip(test) {
        return None;
    }
    let engine = engine().await;
    let runtimes = engine.info().await.unwrap().runtimes;
    let without = !runtimes.iter().any(|r| r == "nvidia");
    let why = "this engine has the nvidia runtime, so GPUs would be granted";
    support::real::have(Part::EngineWithoutNvidia, test, without, why).then_some(engine)
}

#[tokio::test]
async fn gpus_all_from_the_cli_is_created_and_refused_at_start() {
    let test = "gpus_all_from_the_cli_is_created_and_refused_at_start";
    let Some(engine) = engine_without_gpu_runtime(test).await else {
        return;
    };
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("gpus-cli");
    cleanup.container(&name);
    docker(&["create", "--name", &name, "--gpus", "all", &image, "true"]);
    let info = engine.container(&name).await.unwrap().unwrap();
    assert_eq!(
        info.gpus,
        vec![GpuGrant::DeviceRequest {
            devices: GpuSelection::All
        }]
    );

    let start = Command::new("docker")
        .args(["start", &name])
        .output()
        .unwrap();
    assert!(!start.status.success());
    let stderr = String::from_utf8_lossy(&start.stderr);
    assert!(
        stderr.contains(r#"could not select device driver "" with capabilities: [[gpu]]"#),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_gpu_device_request_through_the_api_is_refused_at_start() {
    let test = "a_gpu_device_request_through_the_api_is_refused_at_start";
    let Some(engine) = engine_without_gpu_runtime(test).await else {
        return;
    };
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("gpus-api");
    cleanup.container(&name);
    let body = ContainerCreateBody {
        image: Some(image.clone()),
        cmd: Some(vec!["true".into()]),
        host_config: Some(HostConfig {
            device_requests: Some(vec![DeviceRequest {
                driver: Some("nvidia".into()),
                device_ids: Some(vec!["0".into(), "1".into()]),
                capabilities: Some(vec![vec!["gpu".into()]]),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptionsBuilder::new().name(&name).build();
    let client = engine.client();
    let created = client.create_container(Some(options), body).await.unwrap();
    let info = engine.container(&created.id).await.unwrap().unwrap();
    let ids = GpuSelection::Devices(vec!["0".into(), "1".into()]);
    assert_eq!(info.gpus, vec![GpuGrant::DeviceRequest { devices: ids }]);

    let err = engine.start(&created.id).await.unwrap_err();
    let DockerError::NoGpuRuntime { detail } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        detail,
        r#"could not select device driver "nvidia" with capabilities: [[gpu]]"#
    );
    assert_eq!(err.title(), "No GPU support in Docker");
}

#[tokio::test]
async fn start_stop_restart_and_remove() {
    if !engine_or_skip("start_stop_restart_and_remove") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("lifecycle");
    cleanup.container(&name);
    let id = docker(&["create", "--name", &name, &image, "sleep", "300"]);
    let engine = engine().await;

    engine.start(&id).await.unwrap();
    let running = wait_for(&engine, &id, "running", in_state(ContainerState::Running)).await;
    let running = running.unwrap();
    assert!(running.started_at.is_some(), "{running:?}");
    assert!(running.status.starts_with("Up"), "{}", running.status);

    engine.stop(&id, 1).await.unwrap();
    let stopped = wait_for(&engine, &id, "exited", in_state(ContainerState::Exited)).await;
    let stopped = stopped.unwrap();
    // `sleep` as PID 1 ignores SIGTERM, so the stop ends in SIGKILL.
    assert_eq!(stopped.exit_code, Some(137), "{stopped:?}");
    assert_eq!(stopped.started_at, None);

    engine.restart(&id).await.unwrap();
    wait_for(
        &engine,
        &id,
        "running again",
        in_state(ContainerState::Running),
    )
    .await;

    let err = engine.remove(&id, false).await.unwrap_err();
    let DockerError::Conflict { detail } = &err else {
        panic!("{err:?}");
    };
    assert!(detail.contains("running container"), "{detail}");
    assert_eq!(err.title(), "Docker refused the change");

    engine.remove(&id, true).await.unwrap();
    wait_for(&engine, &id, "removal", |seen| seen.is_none()).await;
    let err = engine.start(&id).await.unwrap_err();
    assert_eq!(
        err,
        DockerError::NotFound {
            what: format!("container {id}")
        }
    );
}

#[tokio::test]
async fn details_tell_what_the_list_does_not() {
    if !engine_or_skip("details_tell_what_the_list_does_not") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("details");
    cleanup.container(&name);
    let dir = tempfile::tempdir().unwrap();
    let volume = format!("{}:/data:ro", dir.path().display());
    docker(&[
        "create",
        "--name",
        &name,
        "-e",
        "MODE=fast",
        "-w",
        "/tmp",
        "-u",
        "65534",
        "-v",
        &volume,
        "-p",
        "127.0.0.1:18931:80",
        "--restart",
        "on-failure:3",
        "--entrypoint",
        "sh",
        &image,
        "-c",
        "sleep 1",
    ]);
    let engine = engine().await;
    let details = engine.details(&name).await.unwrap();
    assert_eq!(details.info.name, name);
    assert_eq!(details.entrypoint, vec!["sh"]);
    assert_eq!(details.cmd, vec!["-c", "sleep 1"]);
    assert!(
        details.env.contains(&"MODE=fast".to_string()),
        "{:?}",
        details.env
    );
    assert!(
        details.env.contains(&"PATH=/bin".to_string()),
        "image env too"
    );
    assert_eq!(details.working_dir, "/tmp");
    assert_eq!(details.user, "65534");
    assert_eq!(
        details.mounts,
        vec![format!("{} -> /data (ro)", dir.path().display())]
    );
    assert_eq!(details.ports, vec!["127.0.0.1:18931 -> 80/tcp"]);
    assert_eq!(details.restart_policy, "on-failure:3");
    assert_eq!(details.network_mode, "default");
    assert_eq!(details.runtime, "runc");

    let err = engine.details("gpudeck-test-no-such").await.unwrap_err();
    assert!(matches!(err, DockerError::NotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn many_containers_are_listed_at_once() {
    if !engine_or_skip("many_containers_are_listed_at_once") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let mut ids = HashMap::new();
    for _ in 0..20 {
        let name = unique("many");
        ids.insert(
            docker(&["create", "--name", &name, &image, "true"]),
            name.clone(),
        );
        cleanup.container(&name);
    }
    let listed = engine().await.containers().await.unwrap();
    for (id, name) in &ids {
        let found = listed.iter().find(|c| &c.id == id);
        assert_eq!(found.map(|c| c.name.as_str()), Some(name.as_str()));
    }
    let mut created: Vec<i64> = listed.iter().map(|c| c.created).collect();
    let newest_first = created.clone();
    created.sort_by(|a, b| b.cmp(a));
    assert_eq!(
        created, newest_first,
        "the engine's order (newest first) is kept"
    );
}

/// The inspect view of a real container, drawn from what the engine says about it, with
/// `MY_CREDS` in the config's secret names.
fn inspect_screen(
    info: gpudeck::docker::EngineInfo,
    details: gpudeck::docker::ContainerDetails,
    show_secrets: bool,
) -> String {
    use gpudeck::app::action::{Action, Tab};
    use gpudeck::docker::update::DockerUpdate;
    let mut config = gpudeck::config::Config::default();
    config.general.secret_names = vec!["MY_CREDS".into()];
    let mut state = gpudeck::app::state::AppState::new(&config, "testhost".into(), false);
    if show_secrets {
        state.secrets = gpudeck::secrets::Secrets::shown();
    }
    state.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(info),
    });
    state.apply_docker(DockerUpdate::Containers(vec![details.info.clone()]));
    state.update(Action::SelectTab(Tab::Containers));
    state.update(Action::OpenInspect);
    state.apply_docker(DockerUpdate::Details(Box::new(details)));
    let area = ratatui::layout::Rect::new(0, 0, 120, 50);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    let theme = gpudeck::config::Theme::builtin("dark").unwrap();
    gpudeck::ui::render(
        area,
        &mut buf,
        &state,
        &theme,
        &gpudeck::app::keymap::bindings(),
    );
    (0..area.height)
        .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect::<Vec<String>>()
        .join("\n")
}

#[tokio::test]
async fn the_inspect_view_of_a_real_container_hides_its_secrets() {
    if !engine_or_skip("the_inspect_view_of_a_real_container_hides_its_secrets") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("secrets");
    cleanup.container(&name);
    docker(&[
        "create",
        "--name",
        &name,
        "-e",
        "HF_TOKEN=hf_realvalue",
        "-e",
        "MY_CREDS=hunter2",
        "-e",
        "MODE=fast",
        &image,
        "true",
    ]);
    let engine = engine().await;
    let info = engine.info().await.unwrap();
    let details = engine.details(&name).await.unwrap();
    let hidden = inspect_screen(info.clone(), details.clone(), false);
    assert!(hidden.contains("HF_TOKEN=<redacted>"), "{hidden}");
    assert!(hidden.contains("MY_CREDS=<redacted>"), "{hidden}");
    assert!(hidden.contains("MODE=fast"), "{hidden}");
    assert!(!hidden.contains("hf_realvalue") && !hidden.contains("hunter2"));
    let shown = inspect_screen(info, details, true);
    assert!(shown.contains("HF_TOKEN=hf_realvalue"), "{shown}");
}
