//! The Services tab: its state and what its keys ask for (stop, restart, copy, logs, read-only),
//! the collector told when the tab is shown and left, and what it draws at 80x24 and wider.

use crate::support;

use std::time::Duration;

use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::keymap::{bindings, footer_hints};
use gpudeck::app::state::{AppState, Overlay};
use gpudeck::config::Config;
use gpudeck::runs::watch::{LogChunk, RunsCommand, RunsUpdate};
use gpudeck::runs::{RunGpu, RunState, ServiceKind, ServicePort};
use gpudeck::services::jupyter::{Kernel, KernelState};
use gpudeck::services::listing::ModelRow;
use gpudeck::services::{Health, ServiceRow, ServicesCommand, ServicesUpdate};
use support::demo::{demo_state, feed};
use support::screen::{find, render, text};

const SPEC: &str = "gpus=2,seed=42,frozen=100";
const T0: u64 = 1_800_000_000_000;
const TOKEN: &str = "4f1c0ffee2b7d0c8a9e6b5a4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4";

fn notebook() -> ServiceRow {
    ServiceRow {
        id: "20270115-080000-notebook-3f9a".into(),
        kind: ServiceKind::Notebook,
        name: "notebook".into(),
        state: RunState::Running,
        health: Health::Ready,
        problem: None,
        url: format!("http://127.0.0.1:8888/lab?token={TOKEN}"),
        ssh: "ssh -N -L 8888:127.0.0.1:8888 alice@gpu-node-07.cluster.example.org".into(),
        ports: vec![ServicePort {
            name: "http".into(),
            port: 8888,
        }],
        gpus: vec![RunGpu {
            index: 0,
            uuid: "GPU-0".into(),
            name: "H100".into(),
        }],
        image: None,
        started_ms: Some(T0),
        ended_ms: None,
        error: None,
        idle_seconds: Some(7_500),
        idle_alert: true,
        kernels: vec![Kernel {
            id: "k1".into(),
            name: "python3".into(),
            execution_state: KernelState::Idle,
            last_activity_ms: Some(T0 + 100_000),
            connections: 1,
        }],
        models: Vec::new(),
        gpu_memory_bytes: None,
        own: Default::default(),
    }
}

fn triton() -> ServiceRow {
    ServiceRow {
        id: "20270115-070000-triton-77c1".into(),
        kind: ServiceKind::Triton,
        name: "triton".into(),
        health: Health::Ready,
        url: "http://127.0.0.1:8000/".into(),
        ssh: "ssh -N -L 8000:127.0.0.1:8000 alice@gpu-node-07.cluster.example.org".into(),
        ports: ["http", "grpc", "metrics"]
            .iter()
            .zip([8000, 8001, 8002])
            .map(|(name, port)| ServicePort {
                name: (*name).into(),
                port,
            })
            .collect(),
        image: Some("nvcr.io/nvidia/tritonserver:25.10-py3".into()),
        idle_seconds: None,
        idle_alert: false,
        kernels: Vec::new(),
        models: vec![ModelRow {
            name: "resnet50".into(),
            version: Some("1".into()),
            state: Some("READY".into()),
            reason: None,
            inferences: 1200,
            successes: 1198,
            failures: 2,
            mean_latency_us: Some(4_250.0),
        }],
        gpus: vec![RunGpu {
            index: 1,
            uuid: "GPU-1".into(),
            name: "H100".into(),
        }],
        ..notebook()
    }
}

fn tensorboard_ended() -> ServiceRow {
    ServiceRow {
        id: "20270114-180000-tensorboard-0b2e".into(),
        kind: ServiceKind::Tensorboard,
        name: "tensorboard".into(),
        state: RunState::Stopped,
        health: Health::Ended,
        url: "http://127.0.0.1:6006/".into(),
        ssh: "ssh -N -L 6006:127.0.0.1:6006 alice@gpu-node-07.cluster.example.org".into(),
        ports: vec![ServicePort {
            name: "http".into(),
            port: 6006,
        }],
        gpus: Vec::new(),
        idle_seconds: None,
        idle_alert: false,
        kernels: Vec::new(),
        ..notebook()
    }
}

/// A state on the Services tab with a notebook (selected), a Triton server and an ended
/// TensorBoard, `read_only` or not.
pub(crate) fn state_with_services(read_only: bool) -> AppState {
    let mut config = Config::default();
    config.notebook.idle_alert.0 = Some(Duration::from_secs(3600));
    let mut state = AppState::new(&config, "testhost".into(), read_only);
    feed(&mut state, SPEC, 1);
    state.now = (T0 / 1000) as i64 + 7_800;
    let commands = state.update(Action::SelectTab(Tab::Services));
    assert_eq!(
        commands,
        vec![Command::Services(ServicesCommand::Shown(true))],
        "the collector looks at once and often while the tab is shown"
    );
    state.apply_services(ServicesUpdate {
        rows: vec![notebook(), triton(), tensorboard_ended()],
        store_error: None,
    });
    state
}

#[test]
fn the_first_service_is_selected_and_stays_selected_across_looks() {
    let mut state = state_with_services(false);
    assert_eq!(
        state.services.selected.as_deref(),
        Some(notebook().id.as_str())
    );
    assert!(state.update(Action::Down).is_empty());
    assert_eq!(
        state.services.selected.as_deref(),
        Some(triton().id.as_str())
    );
    // A new notebook comes first: the selection stays on Triton.
    let mut newer = notebook();
    newer.id = "20270115-090000-notebook-aaaa".into();
    state.apply_services(ServicesUpdate {
        rows: vec![newer, notebook(), triton()],
        store_error: None,
    });
    assert_eq!(state.services.selected_row(), Some(2));
    // Triton goes away: the first is selected.
    state.apply_services(ServicesUpdate {
        rows: vec![notebook()],
        store_error: None,
    });
    assert_eq!(
        state.services.selected.as_deref(),
        Some(notebook().id.as_str())
    );
    let left = state.update(Action::SelectTab(Tab::Runs));
    assert!(left.contains(&Command::Services(ServicesCommand::Shown(false))));
}

#[test]
fn stop_asks_first_and_an_ended_service_is_not_stopped_again() {
    let mut state = state_with_services(false);
    assert!(state.update(Action::StopRun).is_empty());
    let Overlay::Confirm(question) = &state.overlay else {
        panic!("no question: {:?}", state.overlay);
    };
    assert_eq!(question.title, "Stop service");
    assert!(question
        .details
        .iter()
        .any(|d| d.contains("save your notebooks")));
    assert_eq!(
        state.update(Action::Confirm),
        vec![Command::StopRun { id: notebook().id }]
    );
    state.update(Action::Bottom);
    assert!(state.update(Action::StopRun).is_empty());
    assert_eq!(state.overlay, Overlay::None);
    let status = state.status.as_ref().expect("a status line");
    assert!(
        status.text.contains("has already ended (stopped)"),
        "{}",
        status.text
    );
}

#[test]
fn restart_asks_first_and_stops_then_starts_the_same_spec() {
    let mut state = state_with_services(false);
    state.update(Action::RerunRun);
    let Overlay::Confirm(question) = &state.overlay else {
        panic!("no question: {:?}", state.overlay);
    };
    assert_eq!(question.title, "Restart service");
    assert!(question.details[0].starts_with("stops it, then starts it again"));
    assert_eq!(
        state.update(Action::Confirm),
        vec![Command::RestartService { id: notebook().id }]
    );
    // Any other key says no.
    state.update(Action::RerunRun);
    assert!(state.update(Action::Cancel).is_empty());
    assert_eq!(state.overlay, Overlay::None);
}

#[test]
fn read_only_refuses_stop_and_restart_and_the_footer_does_not_offer_them() {
    let mut state = state_with_services(true);
    for action in [Action::StopRun, Action::RerunRun] {
        assert!(state.update(action).is_empty());
        assert_eq!(state.overlay, Overlay::None);
        let status = state.status.as_ref().expect("a status line");
        assert!(status.is_error);
        assert!(
            status.text.starts_with("read-only mode:"),
            "{}",
            status.text
        );
    }
    let hints: Vec<&str> = footer_hints(&state, &bindings())
        .iter()
        .map(|(label, _)| *label)
        .collect();
    for changes in ["n", "x", "R"] {
        assert!(!hints.contains(&changes), "{changes}: {hints:?}");
    }
    assert!(hints.contains(&"c"), "copying changes nothing: {hints:?}");
    // Copying is allowed.
    assert_eq!(
        state.update(Action::CopyUrl),
        vec![Command::Copy {
            what: format!("the URL of {}", notebook().id),
            text: notebook().url,
        }]
    );
}

#[test]
fn copy_asks_for_the_whole_url_or_ssh_line() {
    let mut state = state_with_services(false);
    let commands = state.update(Action::CopySsh);
    assert_eq!(
        commands,
        vec![Command::Copy {
            what: format!("the SSH line of {}", notebook().id),
            text: notebook().ssh,
        }]
    );
}

#[test]
fn logs_open_in_the_run_logs_view_and_closing_them_follows_the_runs_tab_again() {
    let mut state = state_with_services(false);
    let id = notebook().id;
    assert_eq!(
        state.update(Action::OpenLogs),
        vec![Command::Runs(RunsCommand::FollowLogs {
            id: id.clone(),
            rank: 0
        })]
    );
    assert!(state.services.log_open);
    let chunk = LogChunk {
        id: id.clone(),
        rank: 0,
        lines: vec![(true, "[I ServerApp] Jupyter Server is running".into())],
        reset: true,
        skipped: 0,
    };
    assert!(state.apply_runs(RunsUpdate::Log(chunk)).is_empty());
    let logs = state.services.logs.as_ref().expect("the service's logs");
    assert_eq!(logs.lines.len(), 1);
    assert!(state.runs.logs.is_none(), "not the Runs tab's");
    let screen = text(&render(&state, 80, 24));
    assert!(screen.contains("Jupyter Server is running"), "{screen}");
    // Away and back: the runs collector follows the Runs tab's output there, the service's
    // again here.
    state.update(Action::SelectTab(Tab::Runs));
    let back = state.update(Action::SelectTab(Tab::Services));
    assert!(
        back.contains(&Command::Runs(RunsCommand::FollowLogs {
            id: id.clone(),
            rank: 0
        })),
        "{back:?}"
    );
    // Esc closes them; the runs collector goes back to the Runs tab's selection (none here).
    let closed = state.update(Action::CloseView);
    assert!(!state.services.log_open);
    assert_eq!(closed, vec![Command::Runs(RunsCommand::Focus(None))]);
}

/// The screen's text with the box borders taken off each line and the lines joined.
fn words(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
        .collect::<String>()
}

#[test]
fn the_tab_at_80x24_shows_the_url_and_the_ssh_line_whole() {
    let state = state_with_services(false);
    let buf = render(&state, 80, 24);
    let screen = text(&buf);
    insta::assert_snapshot!("services_tab_80x24", screen);
    let joined = words(&screen).replace("open", "").replace("ssh ", "");
    assert!(joined.contains(&notebook().url), "{screen}");
    assert!(
        words(&screen)
            .contains("ssh -N -L 8888:127.0.0.1:8888 alice@gpu-node-07.cluster.example.org"),
        "{screen}"
    );
    let theme = gpudeck::config::Theme::builtin("dark").unwrap();
    let (x, y) = find(&buf, "2h05m!");
    assert_eq!(buf[(x, y)].fg, theme.warn, "the idle flag");
    let (x, y) = find(&buf, "notebook-3f9a");
    assert_eq!(buf[(x, y)].bg, theme.selected_bg, "the selected row");
    assert!(
        screen
            .lines()
            .next()
            .unwrap()
            .contains("1 idle notebook (9)"),
        "{screen}"
    );
    // A click on a row selects it.
    let (_, y) = find(&buf, "triton-77c1");
    let area = ratatui::layout::Rect::new(0, 0, 80, 24);
    assert_eq!(
        gpudeck::ui::click(area, &state, 10, y),
        Some(Action::SelectRow(1))
    );
}

#[test]
fn a_notebook_newly_idle_past_the_alert_is_said_once_on_the_status_line() {
    let mut state = state_with_services(false);
    let said = state.status.clone().expect("a status line");
    assert_eq!(
        said.text,
        format!(
            "{} has been idle 2h05m, on GPU 0, on this machine: save your work and stop it (9, then x)",
            notebook().id
        )
    );
    state.status = None;
    let again = || ServicesUpdate {
        rows: vec![notebook(), triton()],
        store_error: None,
    };
    state.apply_services(again());
    assert!(state.status.is_none(), "said once");
    let mut busy = notebook();
    busy.idle_alert = false;
    state.apply_services(ServicesUpdate {
        rows: vec![busy],
        store_error: None,
    });
    state.apply_services(again());
    assert!(
        state.status.is_some(),
        "idle again after working: said again"
    );
}

#[test]
fn the_tab_wider_shows_whole_ids_and_tritons_models() {
    let mut state = state_with_services(false);
    state.update(Action::Down);
    let screen = text(&render(&state, 160, 30));
    insta::assert_snapshot!("services_tab_160x30_triton", screen);
    assert!(screen.contains("│20270115-070000-triton-77c1 "), "{screen}");
    assert!(
        screen.contains("resnet50 v1 READY · 1200 inferences · 1198 ok, 2 failed · mean 4.2 ms"),
        "{screen}"
    );
}

#[test]
fn no_services_says_how_to_start_one() {
    let mut state = demo_state(SPEC, 1);
    state.update(Action::SelectTab(Tab::Services));
    let screen = text(&render(&state, 80, 24));
    assert!(screen.contains("looking for services…"), "{screen}");
    state.apply_services(ServicesUpdate {
        rows: Vec::new(),
        store_error: None,
    });
    let screen = text(&render(&state, 80, 24));
    assert!(screen.contains("No services."), "{screen}");
    assert!(
        screen.contains("gpudeck notebook --host --gpus 0"),
        "{screen}"
    );
    // Nothing to act on: the keys do nothing.
    for action in [
        Action::StopRun,
        Action::RerunRun,
        Action::CopyUrl,
        Action::OpenLogs,
    ] {
        assert!(state.update(action).is_empty());
    }
}

#[test]
fn n_opens_a_form_that_starts_a_notebook_and_read_only_refuses_it() {
    let mut state = state_with_services(false);
    assert!(state.update(Action::NewRun).is_empty());
    assert!(matches!(state.overlay, Overlay::ServiceForm(_)));
    let screen = text(&render(&state, 80, 24));
    assert!(
        screen.contains("As     gpudeck notebook --host --gpus count:1"),
        "{screen}"
    );
    // Tab to the GPUs, type `none` over the default, Enter.
    state.update(Action::NextTab);
    for _ in 0.."count:1".len() {
        state.update(Action::FilterBackspace);
    }
    for c in "none".chars() {
        state.update(Action::FilterInput(c));
    }
    let commands = state.update(Action::Confirm);
    let [Command::StartService(request)] = commands.as_slice() else {
        panic!("no start: {commands:?}");
    };
    assert_eq!(request.kind, ServiceKind::Notebook);
    assert_eq!(request.image, None);
    assert_eq!(request.gpus, gpudeck::runs::GpuSelection::None);
    assert_eq!(state.overlay, Overlay::None);
    // A bad GPU list is said in the form, which stays open.
    state.update(Action::NewRun);
    state.update(Action::Down);
    state.update(Action::FilterInput('x'));
    assert!(state.update(Action::Confirm).is_empty());
    let Overlay::ServiceForm(form) = &state.overlay else {
        panic!("the form closed");
    };
    assert!(form
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with("GPUs: ")));
    assert!(state.update(Action::Cancel).is_empty());
    assert_eq!(state.overlay, Overlay::None);

    let mut read_only = state_with_services(true);
    assert!(read_only.update(Action::NewRun).is_empty());
    assert_eq!(read_only.overlay, Overlay::None);
    assert!(read_only.status.as_ref().is_some_and(|s| s.is_error));
}

#[test]
fn the_runs_tab_lists_no_service_and_says_where_they_are() {
    let mut state = state_with_services(false);
    state.update(Action::SelectTab(Tab::Runs));
    state.apply_runs(RunsUpdate::Listed {
        runs: Vec::new(),
        warnings: Vec::new(),
    });
    let screen = text(&render(&state, 80, 24));
    assert!(screen.contains("No training runs yet."), "{screen}");
    assert!(screen.contains("3 services in tab 9"), "{screen}");
}

/// The detail says both of the JSON's fields (`running · ready`), and an ended service when it
/// ended, how long it ran and why it failed: never "started 24s ago" alone, which reads as live.
#[test]
fn the_detail_says_state_and_health_and_when_an_ended_service_ended() {
    let mut state = state_with_services(false);
    let screen = text(&render(&state, 120, 40));
    assert!(screen.contains("running · ready · started"), "{screen}");
    let failed = ServiceRow {
        state: RunState::Failed,
        started_ms: Some(T0),
        ended_ms: Some(T0 + 24_000),
        error: Some("tensorboard exited with code 2 before it answered".into()),
        ..tensorboard_ended()
    };
    state.apply_services(ServicesUpdate {
        rows: vec![failed],
        store_error: None,
    });
    let screen = text(&render(&state, 120, 40));
    let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("failed · ended 2h 9m ago · ran 24s"),
        "{screen}"
    );
    assert!(!words.contains("started"), "{screen}");
    assert!(
        words.contains("why tensorboard exited with code 2 before it answered"),
        "{screen}"
    );
}

/// The GPUS column says the memory the service's own processes hold (its kernel's), not the
/// whole GPU's: with its processes on no GPU it holds 0B however full the GPU is. `gpudeck services`
/// says the same, from the same reading.
#[test]
fn the_memory_shown_is_the_services_own_and_the_cli_agrees() {
    let mut state = state_with_services(false);
    let data = state.data().expect("GPU data").clone();
    let gpu = (data.samples.iter())
        .position(|s| !s.processes.is_empty())
        .expect("a GPU with a process");
    let kernel = &data.samples[gpu].processes[0];
    let own = kernel.used_memory_bytes.expect("its memory");
    let whole = data.samples[gpu]
        .memory_used_bytes
        .expect("the GPU's memory");
    assert!(own < whole, "the GPU's memory is more than the process's");
    let mut row = notebook();
    row.gpus[0].index = data.inventory.gpus[gpu].index;
    row.own.pids = vec![kernel.pid];
    state.apply_services(ServicesUpdate {
        rows: vec![row.clone(), triton()],
        store_error: None,
    });
    let screen = text(&render(&state, 120, 30));
    let shown = format!(
        "{} ({})",
        row.gpus[0].index,
        gpudeck::units::human_bytes(own)
    );
    let list = screen
        .lines()
        .find(|l| l.contains("notebook-3f9a"))
        .unwrap();
    assert!(list.contains(&shown), "{shown} in {list}\n{screen}");
    // Whose processes are on no GPU holds nothing there, whatever the GPU's memory in use.
    let mut elsewhere = row.clone();
    elsewhere.own.pids = vec![u32::MAX - 1];
    state.apply_services(ServicesUpdate {
        rows: vec![elsewhere],
        store_error: None,
    });
    let screen = text(&render(&state, 120, 30));
    let list = screen
        .lines()
        .find(|l| l.contains("notebook-3f9a"))
        .unwrap();
    let none = format!("{} (0B)", row.gpus[0].index);
    assert!(list.contains(&none), "{none} in {list}\n{screen}");
    row.gpu_memory_bytes = row.own_gpu_memory(&data.samples);
    let cli = gpudeck::cli::services::render(&[row]);
    let cli_row = cli.lines().nth(1).unwrap();
    assert!(cli_row.contains(&shown), "{cli}");
}
