//! The whole app on the simulated source against ratatui's TestBackend: keys and clicks in, frames and commands out.

use crate::support;

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use gpudeck::app::action::{Command, Tab};
use gpudeck::app::event::Redraw;
use gpudeck::app::App;
use gpudeck::config::{Config, Theme};
use gpudeck::gpu::collector::CollectorCommand;
use gpudeck::gpu::process_watch::PROCESS_UTIL_EVERY;
use gpudeck::host::KillSignal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

fn app() -> App {
    let mut app = App::new(
        &Config::default(),
        Theme::builtin("dark").expect("theme"),
        "testhost".into(),
        false,
    );
    support::demo::feed(&mut app.state, "gpus=4,seed=42,frozen=100", 3);
    app
}

fn key(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn screen(term: &Terminal<TestBackend>) -> String {
    let buf = term.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const AREA: Rect = Rect {
    x: 0,
    y: 0,
    width: 100,
    height: 30,
};

#[test]
fn keys_drive_the_app_from_gpus_to_a_kill_command() {
    let mut app = app();
    let mut term = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    app.draw(&mut term).expect("draw");
    assert!(screen(&term).contains("H100"));
    for c in ['j', 'j'] {
        let handled = app.handle_event(&key(c), AREA);
        assert_eq!(handled.redraw, Redraw::Now);
        assert!(handled.commands.is_empty());
    }
    assert_eq!(app.state.selected_gpu, 2);
    let watch = app.handle_event(
        &Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        AREA,
    );
    assert_eq!(
        watch.commands,
        [Command::Gpu(CollectorCommand::WatchProcesses(Some(
            PROCESS_UTIL_EVERY
        )))],
        "the processes on screen are watched"
    );
    assert_eq!(app.state.tab, Tab::Processes);
    app.draw(&mut term).expect("draw");
    assert!(
        screen(&term).contains("filter \"gpu:2\""),
        "{}",
        screen(&term)
    );
    let pid = app
        .state
        .processes
        .selected_pid
        .expect("a process on GPU 2");
    app.handle_event(&key('x'), AREA);
    app.draw(&mut term).expect("draw");
    assert!(screen(&term).contains("Send SIGTERM"), "{}", screen(&term));
    let commands = app.handle_event(&key('y'), AREA).commands;
    assert!(
        matches!(
            commands.as_slice(),
            [Command::SignalProcess {
                pid: p,
                start_ticks: Some(_),
                signal: KillSignal::Term
            }] if *p == pid
        ),
        "{commands:?}"
    );
}

#[test]
fn mouse_clicks_select_tabs_and_motion_costs_no_frame() {
    let mut app = app();
    let mut term = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    app.draw(&mut term).expect("draw");
    let line = screen(&term).lines().nth(1).unwrap_or_default().to_string();
    let x = line.find("3 Topo").expect("tab title") as u16 + 2;
    let click = |kind, column, row| {
        Event::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    app.handle_event(&click(MouseEventKind::Down(MouseButton::Left), x, 1), AREA);
    assert_eq!(app.state.tab, Tab::Topology);
    let handled = app.handle_event(&click(MouseEventKind::Moved, 5, 5), AREA);
    assert_eq!(
        handled.redraw,
        Redraw::No,
        "mouse motion must not cost a frame"
    );
    app.handle_event(&click(MouseEventKind::ScrollDown, 5, 5), AREA);
    assert_eq!(app.state.selected_gpu, 1);
}

#[test]
fn ctrl_c_quits_even_inside_the_filter_prompt() {
    let mut app = app();
    app.handle_event(&key('2'), AREA);
    app.handle_event(&key('/'), AREA);
    assert!(app.state.processes.filter.editing);
    app.handle_event(&key('q'), AREA);
    assert!(!app.state.quit, "q is text while filtering");
    assert_eq!(app.state.processes.filter.text, "q");
    app.handle_event(
        &Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        AREA,
    );
    assert!(app.state.quit);
}
