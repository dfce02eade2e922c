//! The loop's one event type fed straight into the app: what each event changes, which commands
//! it asks for and when it is drawn.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Command;
use super::event::{Event, ExitSignal, Redraw, RunDone, SignalResult};
use super::state::GpuStatus;
use super::App;
use crate::config::{Config, Theme};
use crate::gpu::collector::GpuUpdate;
use crate::gpu::GpuError;
use crate::host::{KillSignal, ProcessTarget};
use crate::runs::watch::RunsCommand;
use ratatui::layout::Rect;

fn app() -> App {
    let theme = Theme::builtin("dark").expect("the dark theme is built in");
    App::new(&Config::default(), theme, "testhost".into(), false)
}

const AREA: Rect = Rect {
    x: 0,
    y: 0,
    width: 100,
    height: 30,
};

#[test]
fn a_key_is_drawn_at_once_and_q_quits() {
    let mut app = app();
    let q = crossterm::event::Event::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE));
    let handled = app.handle(Event::Input(q), AREA, None);
    assert_eq!(handled.redraw, Redraw::Now);
    assert!(handled.commands.is_empty());
    assert!(app.state.quit);
    assert!(!handled.exit);
}

#[test]
fn collector_updates_wait_for_the_data_frame() {
    let mut app = app();
    let handled = app.handle(Event::Gpu(GpuUpdate::Failed(GpuError::NoGpus)), AREA, None);
    assert_eq!(handled.redraw, Redraw::Data);
    assert!(matches!(app.state.gpu, GpuStatus::Failed(GpuError::NoGpus)));
}

#[test]
fn a_finished_run_start_is_shown_selected_and_the_list_refreshed() {
    let mut app = app();
    let done = RunDone {
        line: "started r1 (running)".into(),
        is_error: false,
        new_run: Some("r1".into()),
    };
    let handled = app.handle(Event::RunDone(done), AREA, None);
    assert_eq!(handled.commands, vec![Command::Runs(RunsCommand::Refresh)]);
    assert_eq!(handled.redraw, Redraw::Now);
    assert_eq!(app.state.runs.select_when_listed.as_deref(), Some("r1"));
    let status = app.state.status.as_ref().expect("a status line");
    assert_eq!(status.text, "started r1 (running)");
    assert!(!status.is_error);
}

#[test]
fn a_sent_signal_is_reported_and_a_failed_one_is_an_error() {
    let mut app = app();
    let target = ProcessTarget {
        pid: 42,
        start_ticks: Some(7),
    };
    let sent = SignalResult {
        target,
        signal: KillSignal::Term,
        result: Ok(()),
    };
    let handled = app.handle(Event::Signalled(sent), AREA, None);
    assert_eq!(handled.redraw, Redraw::Now);
    let status = app.state.status.as_ref().expect("a status line");
    assert_eq!(status.text, "sent SIGTERM to process 42");
    let failed = SignalResult {
        target,
        signal: KillSignal::Kill,
        result: Err("no such process".into()),
    };
    app.handle(Event::Signalled(failed), AREA, None);
    let status = app.state.status.as_ref().expect("a status line");
    assert!(status.is_error);
    assert_eq!(status.text, "no such process");
}

#[test]
fn every_exit_signal_ends_the_loop() {
    for signal in [
        ExitSignal::Terminate,
        ExitSignal::Hangup,
        ExitSignal::Interrupt,
    ] {
        let handled = app().handle(Event::Exit(signal), AREA, None);
        assert!(handled.exit);
        assert!(handled.commands.is_empty());
    }
}
