//! The Containers and Images tabs on injected engine updates: state, commands and rendered panels.

use crate::support;

use std::collections::BTreeMap;

use gpudeck::app::action::{Action, Command, DockerCommand, Tab};
use gpudeck::app::keymap::bindings;
use gpudeck::app::state::{AppState, Overlay};
use gpudeck::config::{Config, Theme};
use gpudeck::docker::update::DockerUpdate;
use gpudeck::docker::{
    ContainerInfo, ContainerState, ContainerStats, GpuGrant, GpuSelection, ImageFacts, ImageInfo,
    LogLine, LogStream,
};
use gpudeck::ui;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use support::demo::engine_info;

const NOW: i64 = 1_800_000_000;

fn container(name: &str, state: ContainerState, gpus: Vec<GpuGrant>) -> ContainerInfo {
    ContainerInfo {
        id: format!("{name:0>64}").replace(|c: char| !c.is_ascii_hexdigit(), "a"),
        name: name.into(),
        image: "tensorflow/tensorflow:2.17.0-gpu".into(),
        image_id: "sha256:1".into(),
        command: "python train.py".into(),
        state,
        status: "Up 2 hours".into(),
        created: NOW - 7300,
        started_at: Some(NOW - 7200),
        exit_code: None,
        gpus,
        labels: BTreeMap::new(),
    }
}

fn ready_state(read_only: bool) -> AppState {
    let mut s = AppState::new(&Config::default(), "testhost".into(), read_only);
    s.now = NOW;
    s.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(engine_info(&["runc"])),
    });
    s.apply_docker(DockerUpdate::Containers(vec![
        container("zeta-exited", ContainerState::Exited, vec![]),
        container(
            "trainer",
            ContainerState::Running,
            vec![GpuGrant::DeviceRequest {
                devices: GpuSelection::Devices(vec!["2".into(), "3".into()]),
            }],
        ),
        container(
            "notebook",
            ContainerState::Running,
            vec![GpuGrant::Env {
                devices: GpuSelection::All,
            }],
        ),
    ]));
    s.apply_docker(DockerUpdate::Images(vec![ImageInfo {
        id: "sha256:abcdef0123456789".into(),
        tags: vec!["tensorflow/tensorflow:2.17.0-gpu".into()],
        digests: vec![],
        size_bytes: 3_500_000_000,
        created: NOW - 86_400 * 30,
        facts: ImageFacts {
            cuda: Some("12.3.2".into()),
            cudnn: Some("8.9.7".into()),
            tensorflow: Some("2.17.0".into()),
            ..ImageFacts::default()
        },
    }]));
    s.update(Action::SelectTab(Tab::Containers));
    s
}

fn draw(state: &AppState, w: u16, h: u16) -> String {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    ui::render(
        area,
        &mut buf,
        state,
        &Theme::builtin("dark").expect("theme"),
        &bindings(),
    );
    (0..h)
        .map(|y| {
            (0..w)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn running_containers_come_first_and_selection_follows_the_id() {
    let mut s = ready_state(false);
    let names: Vec<_> = s
        .docker
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["notebook", "trainer", "zeta-exited"]);
    s.update(Action::Down);
    assert_eq!(
        s.docker.selected_container_info().map(|c| c.name.as_str()),
        Some("trainer")
    );
    let mut changed = s.docker.containers[1].clone();
    changed.state = ContainerState::Exited;
    s.apply_docker(DockerUpdate::ContainerChanged(Box::new(changed)));
    assert_eq!(
        s.docker.selected_container_info().map(|c| c.name.as_str()),
        Some("trainer"),
        "the selection stays on the container"
    );
    assert_eq!(s.docker.containers[0].name, "notebook");
}

#[test]
fn stop_and_remove_ask_first_start_does_not() {
    let mut s = ready_state(false);
    let id = s.docker.containers[0].id.clone();
    assert_eq!(
        s.update(Action::StartContainer),
        vec![Command::Docker(DockerCommand::Start(id.clone()))]
    );
    assert!(s.update(Action::StopContainer).is_empty());
    assert!(matches!(s.overlay, Overlay::Confirm(_)));
    assert_eq!(
        s.update(Action::Confirm),
        vec![Command::Docker(DockerCommand::Stop(id.clone()))]
    );
    s.update(Action::RemoveSelected);
    assert_eq!(
        s.update(Action::Confirm),
        vec![Command::Docker(DockerCommand::RemoveContainer(id))]
    );
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::RemoveSelected);
    assert_eq!(
        s.update(Action::Confirm),
        vec![Command::Docker(DockerCommand::RemoveImage(
            "sha256:abcdef0123456789".into()
        ))]
    );
}

#[test]
fn read_only_refuses_container_actions() {
    let mut s = ready_state(true);
    for a in [
        Action::StartContainer,
        Action::StopContainer,
        Action::RemoveSelected,
    ] {
        assert!(s.update(a).is_empty());
        assert_eq!(s.overlay, Overlay::None);
    }
}

#[test]
fn logs_open_follow_search_save_and_close() {
    let mut s = ready_state(false);
    let id = s.docker.containers[0].id.clone();
    assert_eq!(
        s.update(Action::OpenLogs),
        vec![Command::Docker(DockerCommand::OpenLogs(id.clone()))]
    );
    let line = |t: &str, stream| LogLine {
        stream,
        timestamp: None,
        text: t.into(),
    };
    s.apply_docker(DockerUpdate::LogLines {
        container: id.clone(),
        lines: vec![
            line("Epoch 1/3 loss 0.9", LogStream::Stdout),
            line("warning: slow input", LogStream::Stderr),
            line("Epoch 2/3 loss 0.5", LogStream::Stdout),
        ],
    });
    let screen = draw(&s, 100, 20);
    assert!(
        screen.contains("Logs · notebook · 3 lines · following"),
        "{screen}"
    );
    assert!(
        screen.contains("E warning: slow input"),
        "stderr is marked: {screen}"
    );
    s.update(Action::StartFilter);
    for c in "epoch".chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    let logs = s.docker.logs.as_ref().expect("logs open");
    assert!(!logs.follow);
    assert_eq!(logs.scroll, 2, "jumped to Epoch 1");
    let saved = s.update(Action::SaveLogs);
    assert!(
        matches!(&saved[..], [Command::SaveLogs { text, .. }] if text.contains("[stderr] warning"))
    );
    assert_eq!(
        s.update(Action::CloseView),
        vec![Command::Docker(DockerCommand::CloseLogs)]
    );
    assert!(s.docker.logs.is_none());
}

#[test]
fn stats_are_asked_for_running_containers_near_the_selection() {
    let mut s = AppState::new(&Config::default(), "h".into(), false);
    s.update(Action::SelectTab(Tab::Containers));
    s.apply_docker(DockerUpdate::Connected {
        host: "x".into(),
        info: Box::new(engine_info(&["runc"])),
    });
    let cmds = s.apply_docker(DockerUpdate::Containers(vec![
        container("a", ContainerState::Running, vec![]),
        container("b", ContainerState::Exited, vec![]),
    ]));
    let running = s.docker.containers[0].id.clone();
    assert_eq!(
        cmds,
        vec![Command::Docker(DockerCommand::WatchStats(vec![running]))]
    );
    assert!(
        s.apply_docker(DockerUpdate::Stats(
            s.docker.containers[0].id.clone(),
            ContainerStats {
                cpu_pct: 150.0,
                memory_used_bytes: 1 << 30,
                memory_limit_bytes: 1 << 34
            }
        ))
        .is_empty(),
        "same set: no new command"
    );
}

#[test]
fn the_containers_and_images_tables_show_gpus_and_cuda() {
    let mut s = ready_state(false);
    let screen = draw(&s, 110, 12);
    insta::assert_snapshot!("containers_tab", screen);
    assert!(screen.contains("2,3"), "GPUs granted by device request");
    assert!(screen.contains("env:all"));
    assert!(screen.contains("2h 0m"), "uptime from StartedAt");
    s.update(Action::SelectTab(Tab::Images));
    let screen = draw(&s, 110, 8);
    insta::assert_snapshot!("images_tab", screen);
    assert!(
        screen.contains("12.3.2") && screen.contains("TensorFlow 2.17.0") && screen.contains("30d")
    );
}

#[test]
fn an_unreachable_engine_is_explained_and_the_lists_are_cleared() {
    let mut s = ready_state(false);
    s.apply_docker(DockerUpdate::Unavailable {
        host: "unix:///var/run/docker.sock".into(),
        title: "Docker is not running".into(),
        message: "connection refused".into(),
        fix: "Start it: sudo systemctl start docker".into(),
    });
    assert!(s.docker.containers.is_empty());
    let screen = draw(&s, 90, 16);
    assert!(
        screen.contains("Docker is not running") && screen.contains("sudo systemctl start docker"),
        "{screen}"
    );
    assert!(screen.contains("reconnects by itself"));
}

#[test]
fn a_container_shows_the_gpu_memory_and_utilisation_of_its_processes() {
    let mut s = support::demo::demo_state("gpus=8,seed=42,frozen=200", 1);
    s.now = NOW;
    let (cid, gpu) = s
        .visible_processes()
        .iter()
        .find_map(|p| p.container.as_ref().map(|c| (c.id.clone(), p.gpu_index)))
        .expect("the demo runs one process in a container");
    let mut info = container("vllm", ContainerState::Running, vec![]);
    info.id = cid;
    s.apply_docker(DockerUpdate::Connected {
        host: "x".into(),
        info: Box::new(engine_info(&["runc"])),
    });
    s.apply_docker(DockerUpdate::Containers(vec![info]));
    s.update(Action::SelectTab(Tab::Containers));
    let screen = draw(&s, 120, 8);
    let row = screen
        .lines()
        .find(|l| l.contains("vllm"))
        .expect("row")
        .to_string();
    assert!(
        row.contains(&format!("uses {gpu}")),
        "GPUs its processes use: {row}"
    );
    assert!(row.contains("GiB"), "GPU memory of its processes: {row}");
    assert!(row.contains('%'), "utilisation of those GPUs: {row}");
}

#[test]
fn an_empty_list_is_only_called_empty_once_the_engine_has_answered() {
    let mut s = AppState::new(&Config::default(), "h".into(), false);
    s.update(Action::SelectTab(Tab::Containers));
    s.apply_docker(DockerUpdate::Connected {
        host: "x".into(),
        info: Box::new(engine_info(&["runc"])),
    });
    assert!(draw(&s, 80, 10).contains("listing containers…"));
    s.apply_docker(DockerUpdate::Containers(vec![]));
    assert!(draw(&s, 80, 10).contains("no containers"));
}

#[test]
fn the_inspect_view_hides_secret_looking_environment_values() {
    let mut config = Config::default();
    config.general.secret_names = vec!["MY_CREDS".into()];
    let details = |info: ContainerInfo| gpudeck::docker::ContainerDetails {
        info,
        entrypoint: vec![],
        cmd: vec!["python".into(), "train.py".into()],
        env: vec![
            "HF_TOKEN=hf_abcdef".into(),
            "MY_CREDS=hunter2".into(),
            "LANG=C.UTF-8".into(),
        ],
        mounts: vec![],
        ports: vec![],
        working_dir: "/work".into(),
        user: String::new(),
        runtime: "runc".into(),
        network_mode: "bridge".into(),
        restart_policy: "no".into(),
    };
    let inspected = |secrets: Option<gpudeck::secrets::Secrets>| {
        let mut s = AppState::new(&config, "testhost".into(), false);
        if let Some(secrets) = secrets {
            s.secrets = secrets;
        }
        s.now = NOW;
        s.apply_docker(DockerUpdate::Connected {
            host: "unix:///var/run/docker.sock".into(),
            info: Box::new(engine_info(&["runc"])),
        });
        let info = container("trainer", ContainerState::Running, vec![]);
        s.apply_docker(DockerUpdate::Containers(vec![info.clone()]));
        s.update(Action::SelectTab(Tab::Containers));
        s.update(Action::OpenInspect);
        s.apply_docker(DockerUpdate::Details(Box::new(details(info))));
        draw(&s, 100, 40)
    };
    let hidden = inspected(None);
    assert!(hidden.contains("HF_TOKEN=<redacted>"), "{hidden}");
    assert!(hidden.contains("MY_CREDS=<redacted>"), "{hidden}");
    assert!(hidden.contains("LANG=C.UTF-8"), "{hidden}");
    assert!(!hidden.contains("hf_abcdef") && !hidden.contains("hunter2"));

    let shown = inspected(Some(gpudeck::secrets::Secrets::shown()));
    assert!(shown.contains("HF_TOKEN=hf_abcdef"), "{shown}");
    assert!(shown.contains("MY_CREDS=hunter2"), "{shown}");
}

#[test]
fn a_pull_the_engine_cut_is_retried_with_r_once_the_engine_is_back() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use gpudeck::app::keymap::action_for;
    use gpudeck::app::pulls::PullOutcome;
    use gpudeck::pull::PullError;

    let mut s = ready_state(false);
    s.update(Action::SelectTab(Tab::Images));
    let finish = |s: &mut AppState, id: u64, reference: &str, error: PullError| {
        s.apply_docker(DockerUpdate::PullStarted {
            id,
            reference: reference.into(),
        });
        s.apply_docker(DockerUpdate::PullFinished {
            id,
            outcome: PullOutcome::failed(&error),
        });
    };
    let cut = "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-devel";
    finish(
        &mut s,
        7,
        cut,
        PullError::EngineWentAway {
            detail: "error reading a body from connection".into(),
        },
    );
    finish(
        &mut s,
        8,
        "nosuch/image:1",
        PullError::UnknownImage {
            image: "nosuch/image".into(),
            registry: "docker.io".into(),
            detail: "pull access denied".into(),
        },
    );
    let screen = draw(&s, 80, 30);
    assert!(
        screen.contains("Docker Engine went away: r retries"),
        "{screen}"
    );
    assert!(!screen.contains("usermod"), "{screen}");
    let r = KeyEvent::new(KeyCode::Char('r'), KeyModifiers::NONE);
    assert_eq!(action_for(&s, &bindings(), r), Some(Action::RetryPull));
    assert!(bindings()
        .iter()
        .any(|b| b.action == Action::RetryPull && b.description.contains("Docker Engine")));

    // While the engine is away, r says to wait.
    s.apply_docker(DockerUpdate::Unavailable {
        host: "unix:///var/run/docker.sock".into(),
        title: "Docker is not running".into(),
        message: "connection refused".into(),
        fix: "Start it".into(),
    });
    assert!(s.update(Action::RetryPull).is_empty());
    let status = s
        .status
        .as_ref()
        .map(|m| m.text.clone())
        .unwrap_or_default();
    assert!(status.contains("not back yet"), "{status}");

    // Back: r pulls the cut image again, and only that one.
    s.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(engine_info(&["runc"])),
    });
    let commands = s.update(Action::RetryPull);
    assert_eq!(
        commands,
        vec![Command::Docker(DockerCommand::Pull(cut.into()))]
    );
    assert!(s.docker.pulls.iter().all(|p| p.reference != cut));
    assert!(
        s.update(Action::RetryPull).is_empty(),
        "nothing left to retry"
    );

    let mut read_only = ready_state(true);
    read_only.update(Action::SelectTab(Tab::Images));
    finish(
        &mut read_only,
        9,
        cut,
        PullError::EngineWentAway {
            detail: "reset".into(),
        },
    );
    assert!(read_only.update(Action::RetryPull).is_empty());
    let status = read_only.status.as_ref().map(|m| m.text.clone());
    assert!(status.is_some_and(|t| t.contains("read-only")));
}
