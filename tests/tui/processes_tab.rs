//! The Processes tab: numbers right-aligned, the direction each sort starts in, the process
//! view (Enter, Esc), the per-process GPU share read only while the tab is shown, and kills in
//! the demo that free the simulated GPU.

use crate::support;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::state::{AppState, Overlay};
use gpudeck::app::App;
use gpudeck::config::{Config, ProcessSort, Theme};
use gpudeck::gpu::collector::CollectorCommand;
use gpudeck::gpu::process_watch::PROCESS_UTIL_EVERY;
use gpudeck::gpu::{GpuProcess, ProcessKind};
use gpudeck::host::{KillSignal, ProcessTarget};
use gpudeck::units;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use support::demo::{demo_state, WatchedDemo};
use support::screen::{find, render, text};

const SPEC: &str = "gpus=4,seed=42,frozen=200";

fn theme() -> Theme {
    Theme::builtin("dark").expect("dark theme")
}

fn row(buf: &Buffer, y: u16) -> String {
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

/// The column just after the last character of `needle` on row `y`.
fn end_of(buf: &Buffer, y: u16, needle: &str) -> u16 {
    let line = row(buf, y);
    let byte = line
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not on row {y}: {line}"));
    (line[..byte].chars().count() + needle.chars().count()) as u16
}

fn process(s: &AppState, pid: u32) -> GpuProcess {
    let found = s.visible_processes().into_iter().find(|p| p.pid == pid);
    found.expect("the process is listed").clone()
}

fn select(s: &mut AppState, pid: u32) {
    let row = s.visible_processes().iter().position(|p| p.pid == pid);
    s.update(Action::SelectRow(row.expect("the process is listed")));
    assert_eq!(s.processes.selected_pid, Some(pid));
}

#[test]
fn numbers_are_right_aligned_and_a_cut_command_ends_with_an_ellipsis() {
    let (_demo, mut s) = WatchedDemo::start(SPEC);
    s.update(Action::Down);
    let buf = render(&s, 80, 20);
    let (_, header) = find(&buf, "CONTAINER");
    let procs: Vec<GpuProcess> = s.visible_processes().into_iter().cloned().collect();
    assert!(procs.len() >= 3, "{}", text(&buf));
    for p in &procs {
        let y = find(&buf, &format!(" {} ", p.pid)).1;
        let mem = units::mib(p.used_memory_bytes.expect("memory"));
        let share = format!("{}%", p.gpu_util.expect("a GPU share").sm_pct);
        let cpu = format!("{:.0}%", p.cpu_pct.expect("a CPU reading"));
        assert_eq!(
            end_of(&buf, y, &p.pid.to_string()),
            end_of(&buf, header, "PID")
        );
        assert_eq!(end_of(&buf, y, &mem), end_of(&buf, header, "GPU MEM"));
        assert_eq!(end_of(&buf, y, &share), end_of(&buf, header, "GPU%"));
        assert_eq!(end_of(&buf, y, &cpu), end_of(&buf, header, "CPU%"));
        let line = row(&buf, y);
        let command = p.command.as_deref().expect("a command");
        let start = command.split_whitespace().next().expect("a word");
        let shown: String = line
            .chars()
            .skip(line.find(start).map(|b| line[..b].chars().count()).unwrap())
            .take_while(|c| *c != '│')
            .collect();
        assert_eq!(
            shown.chars().last(),
            Some('…'),
            "a cut command ends with an ellipsis, next to the border: {line}"
        );
        assert!(command.starts_with(shown.trim_end_matches('…')));
    }
    let selected = s.processes.selected_pid.expect("a selection").to_string();
    let (x, y) = find(&buf, &format!(" {selected} "));
    assert_eq!(buf[(x + 1, y)].bg, theme().selected_bg);
    let (mx, _) = find(
        &buf,
        &units::mib(
            process(&s, selected.parse().unwrap())
                .used_memory_bytes
                .unwrap(),
        ),
    );
    assert_eq!(
        buf[(mx, y)].bg,
        theme().selected_bg,
        "the whole row is selected"
    );
}

#[test]
fn the_command_takes_the_spare_width_of_a_wide_screen() {
    let (_demo, s) = WatchedDemo::start(SPEC);
    let buf = render(&s, 200, 20);
    let vllm = "--model meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.90";
    assert!(text(&buf).contains(vllm), "{}", text(&buf));
    assert!(!text(&buf).contains('…'), "{}", text(&buf));
}

#[test]
fn each_sort_starts_in_its_useful_direction() {
    let (_demo, mut s) = WatchedDemo::start(SPEC);
    assert_eq!(
        (s.processes.sort, s.processes.descending),
        (ProcessSort::Memory, true)
    );
    let expected = [
        (ProcessSort::GpuUtil, true),
        (ProcessSort::Cpu, true),
        (ProcessSort::Pid, false),
        (ProcessSort::User, false),
        (ProcessSort::Gpu, false),
        (ProcessSort::Command, false),
        (ProcessSort::Memory, true),
    ];
    for (sort, descending) in expected {
        s.update(Action::CycleSort);
        assert_eq!(
            (s.processes.sort, s.processes.descending),
            (sort, descending)
        );
        if sort == ProcessSort::GpuUtil {
            let shares: Vec<u32> = s
                .visible_processes()
                .iter()
                .map(|p| p.gpu_util.expect("a share").sm_pct)
                .collect();
            assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
            assert!(shares[0] > 0, "{shares:?}");
        }
        if sort == ProcessSort::User {
            let users: Vec<String> = s
                .visible_processes()
                .iter()
                .map(|p| p.user.clone().expect("a user"))
                .collect();
            assert!(users.windows(2).all(|w| w[0] <= w[1]), "{users:?}");
        }
    }
}

#[test]
fn the_per_process_share_is_asked_for_only_while_the_tab_is_shown() {
    let mut s = demo_state(SPEC, 1);
    let watch = |every| vec![Command::Gpu(CollectorCommand::WatchProcesses(every))];
    assert_eq!(s.update(Action::SelectTab(Tab::Topology)), vec![]);
    assert_eq!(
        s.update(Action::SelectTab(Tab::Processes)),
        watch(Some(PROCESS_UTIL_EVERY))
    );
    assert_eq!(s.update(Action::Down), vec![]);
    assert_eq!(s.update(Action::OpenProcess), vec![]);
    assert_eq!(s.update(Action::SelectTab(Tab::Processes)), vec![]);
    assert_eq!(s.update(Action::NextTab), watch(None));
    assert_eq!(s.update(Action::PrevTab), watch(Some(PROCESS_UTIL_EVERY)));
    assert_eq!(
        s.update(Action::SelectTab(Tab::Runs)).first(),
        watch(None).first()
    );
    assert!(
        PROCESS_UTIL_EVERY.as_secs() >= 2,
        "a slower cadence than the GPUs'"
    );
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

#[test]
fn enter_opens_the_process_view_and_esc_goes_back_to_the_filtered_list() {
    let (_demo, state) = WatchedDemo::start(SPEC);
    let mut app = App::new(&Config::default(), theme(), "testhost".into(), false);
    app.state = state;
    let area = Rect::new(0, 0, 100, 30);
    app.handle_event(&key(KeyCode::Char('/')), area);
    for c in "gpu:2".chars() {
        app.handle_event(&key(KeyCode::Char(c)), area);
    }
    app.handle_event(&key(KeyCode::Enter), area);
    let pid = app.state.processes.selected_pid.expect("the GPU 2 process");
    assert_eq!(
        app.state.processes.view_pid, None,
        "Enter ended the filter only"
    );
    app.handle_event(&key(KeyCode::Enter), area);
    assert_eq!(app.state.processes.view_pid, Some(pid));

    let buf = render(&app.state, 100, 30);
    let screen = text(&buf);
    let p = process(&app.state, pid);
    let command = p.command.clone().expect("a command");
    let joined: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(joined.contains("0.90"), "the whole command line: {screen}");
    assert!(command.ends_with("--gpu-memory-utilization 0.90"));
    for needle in [
        "Command",
        "Started",
        " UTC · running for ",
        "CPU",
        "% of one core",
        "resident on the host",
        "Container",
        "(simulated)",
        "GPU 2",
        "SM ",
        "Esc",
    ] {
        assert!(screen.contains(needle), "{needle:?} missing:\n{screen}");
    }
    let (lx, ly) = find(&buf, "Started");
    assert_eq!(buf[(lx, ly)].fg, theme().muted, "labels are muted");
    assert!(
        screen.contains("Esc back"),
        "the footer offers the way back:\n{screen}"
    );

    app.handle_event(&key(KeyCode::Esc), area);
    assert_eq!(app.state.processes.view_pid, None);
    assert_eq!(
        app.state.processes.filter.text, "gpu:2",
        "Esc left the view only"
    );
    assert_eq!(app.state.tab, Tab::Processes);
}

#[test]
fn killing_a_demo_process_frees_its_gpu() {
    let (mut demo, mut s) = WatchedDemo::start(SPEC);
    let victim = s
        .visible_processes()
        .into_iter()
        .find(|p| p.gpu_index == 0 && p.kind == ProcessKind::Compute)
        .expect("the training job on GPU 0")
        .clone();
    let started = victim.identity.and_then(|i| i.started_unix_ms);
    assert!(started.is_some(), "a simulated process has a start time");
    let gpu0 = |s: &AppState| s.data().expect("data").samples[0].clone();
    let before = gpu0(&s);
    assert!(before.util_gpu_pct.unwrap_or(0) > 0, "{before:?}");

    select(&mut s, victim.pid);
    s.update(Action::OpenProcess);
    assert!(s.update(Action::KillSelected).is_empty());
    assert!(
        matches!(s.overlay, Overlay::Confirm(_)),
        "a kill asks first"
    );
    let commands = s.update(Action::Confirm);
    let [Command::SignalProcess {
        pid,
        start_ticks,
        signal,
    }] = commands.as_slice()
    else {
        panic!("{commands:?}");
    };
    assert_eq!((*pid, *signal), (victim.pid, KillSignal::Term));
    let target = ProcessTarget {
        pid: *pid,
        start_ticks: *start_ticks,
    };
    let result = demo
        .table
        .signal_exact(target, *signal)
        .map_err(|e| e.to_string());
    assert_eq!(result, Ok(()));
    s.apply_signal_result(target, *signal, result);
    demo.tick(&mut s);

    let after = gpu0(&s);
    assert!(
        after.processes.iter().all(|p| p.pid != victim.pid),
        "{after:?}"
    );
    let freed = before.memory_used_bytes.unwrap() - after.memory_used_bytes.unwrap();
    assert!(
        freed >= victim.used_memory_bytes.unwrap(),
        "{freed} freed of {:?}",
        victim.used_memory_bytes
    );
    assert_eq!(
        after.util_gpu_pct,
        Some(0),
        "nothing runs on GPU 0 any more"
    );
    let screen = text(&render(&s, 100, 24));
    assert!(
        screen.contains(&format!("Process {} has exited", victim.pid)),
        "{screen}"
    );
    assert!(s.update(Action::Down).is_empty());
    assert!(s.update(Action::KillSelected).is_empty());
    assert_eq!(
        s.overlay,
        Overlay::None,
        "no other process is offered in its place"
    );
    let status = s.status.clone().expect("a status line");
    assert!(
        status.is_error && status.text.contains("has exited"),
        "{status:?}"
    );
    assert_eq!(
        demo.table
            .signal_exact(target, KillSignal::Kill)
            .map_err(|e| e.to_string()),
        Err(format!("process {} has already exited", victim.pid)),
        "a second kill finds nothing"
    );
}

#[test]
fn a_real_process_on_a_demo_gpu_is_signalled_through_the_host() {
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .expect("sleep starts");
    // The parent may resume before exec has laid out the new command line (a vfork-style spawn
    // is released early in exec): until then /proc shows an empty cmdline. Wait for it.
    let cmdline = format!("/proc/{}/cmdline", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read(&cmdline).map_or(true, |c| c.is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "{cmdline} stays empty"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let spec = format!("gpus=2,seed=42,frozen=200,pids=1:{}", child.id());
    let (demo, mut s) = WatchedDemo::start(&spec);
    let real = process(&s, child.id());
    assert_eq!(real.command.as_deref(), Some("sleep 60"), "read from /proc");
    select(&mut s, child.id());
    s.update(Action::KillSelected);
    let commands = s.update(Action::Confirm);
    let [Command::SignalProcess {
        pid,
        start_ticks,
        signal,
    }] = commands.as_slice()
    else {
        panic!("{commands:?}");
    };
    let target = ProcessTarget {
        pid: *pid,
        start_ticks: *start_ticks,
    };
    let wrong = ProcessTarget {
        start_ticks: start_ticks.map(|t| t + 1),
        ..target
    };
    assert!(
        demo.table.signal_exact(wrong, *signal).is_err(),
        "another start time is another process: not signalled"
    );
    assert_eq!(
        demo.table
            .signal_exact(target, *signal)
            .map_err(|e| e.to_string()),
        Ok(())
    );
    let status = child.wait().expect("the child is reaped");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn a_long_command_line_wraps_under_its_label_in_the_process_view() {
    let (_demo, mut s) = WatchedDemo::start(SPEC);
    let vllm = s
        .visible_processes()
        .into_iter()
        .find(|p| p.container.is_some())
        .expect("the vLLM server")
        .pid;
    select(&mut s, vllm);
    s.update(Action::OpenProcess);
    let buf = render(&s, 60, 24);
    let (x, _) = find(&buf, "python3 -m vllm");
    let (wx, wy) = find(&buf, "--gpu-memory-utilization");
    assert_eq!(
        wx,
        x,
        "continued under the value, not under the label:\n{}",
        text(&buf)
    );
    assert!(row(&buf, wy)[..].chars().skip(1).take(10).all(|c| c == ' '));
}
