//! Messages, help, themes and Ctrl-Z: every message readable whole, key hints never hidden,
//! help scrolled to its end at 80x24, a theme switched in the dashboard, the terminal handed
//! back on Ctrl-Z and taken again on `fg`.

use crate::support;

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use gpudeck::app::action::{Action, DockerCommand, Tab};
use gpudeck::app::messages::{SHOWN_SECS, STALE_SECS};
use gpudeck::app::state::Overlay;
use gpudeck::app::themes::ThemeChoice;
use gpudeck::app::App;
use gpudeck::config::{usable_themes, Config, Theme};
use gpudeck::docker::update::DockerUpdate;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::Terminal;
use support::demo::demo_state;
use support::screen::{find, render, text};

const SPEC: &str = "gpus=2,seed=42,frozen=100";

/// An error as long as the ones the dashboard really shows (a pull the registry refused).
const LONG: &str = "pull of 127.0.0.1:43001/m3/model:v1 failed: Registry unreachable: the \
    registry 127.0.0.1:43001 cannot be reached: Get \"http://127.0.0.1:43001/v2/\": dial tcp \
    127.0.0.1:43001: connect: connection refused. What to do: Check the host name and port of \
    127.0.0.1:43001, your network and proxy, and that the registry is running.";

fn dark() -> Theme {
    Theme::builtin("dark").expect("dark theme")
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text inside the messages view's borders, rows joined with spaces.
fn popup_text(buf: &Buffer) -> String {
    let (title_x, top) = find(buf, "Messages, newest first");
    let row = |y: u16| -> Vec<String> {
        (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect()
    };
    let cells = row(top);
    let left = (0..title_x as usize).rev().find(|&x| cells[x] == "┌");
    let left = left.expect("the view's corner");
    let right = (title_x as usize..cells.len()).find(|&x| cells[x] == "┐");
    let right = right.expect("the view's corner");
    let mut rows = Vec::new();
    for y in top + 1..buf.area.height {
        let cells = row(y);
        if cells[left] == "└" {
            break;
        }
        rows.push(cells[left + 1..right].concat());
    }
    words(&rows.join(" "))
}

#[test]
fn key_hints_stay_on_screen_under_a_long_message() {
    let mut s = demo_state(SPEC, 3);
    s.set_status(LONG, true);
    let buf = render(&s, 80, 24);
    let screen = text(&buf);
    let rows: Vec<&str> = screen.lines().collect();
    assert!(
        rows[23].contains("q quit") && rows[23].contains("? help"),
        "the key hints keep the last row:\n{screen}"
    );
    assert!(rows[22].contains("✗ pull of 127.0.0.1:43001/m3/model:v1 failed"));
    assert!(
        rows[22].ends_with("M: read it whole"),
        "a cut message says how to read it whole:\n{screen}"
    );
    let (x, y) = find(&buf, "✗ pull of");
    assert_eq!(buf[(x, y)].fg, dark().error, "an error is drawn as one");
    let (x, y) = find(&buf, "M: read it whole");
    assert_eq!(buf[(x, y)].fg, dark().accent);
}

#[test]
fn a_long_message_reads_whole_in_the_messages_view_at_80_columns() {
    let mut s = demo_state(SPEC, 3);
    s.set_status("started run-1 (running)", false);
    s.set_status(LONG, true);
    s.update(Action::ShowMessages);
    assert_eq!(s.overlay, Overlay::Messages);
    let buf = render(&s, 80, 24);
    let inside = popup_text(&buf);
    assert!(
        inside.contains(&words(LONG)),
        "the whole message is in the view:\n{}",
        text(&buf)
    );
    assert!(
        inside.find("✗ error") < inside.find("› info"),
        "newest first"
    );
    let (x, y) = find(&buf, "✗ error");
    assert_eq!(buf[(x, y)].fg, dark().error);
    assert!(buf[(x, y)].modifier.contains(Modifier::BOLD));
    s.update(Action::Cancel);
    assert_eq!(s.overlay, Overlay::None, "any other key closes the view");
}

#[test]
fn a_message_dims_when_stale_and_gives_its_line_back_later() {
    let mut s = demo_state(SPEC, 3);
    s.set_status("sent SIGTERM to process 7", false);
    s.stamp_messages(1_000);
    let buf = render(&s, 80, 24);
    let (x, y) = find(&buf, "› sent SIGTERM");
    assert_eq!(y, 22);
    assert_eq!(buf[(x, y)].fg, dark().ok);
    assert!(!buf[(x, y)].modifier.contains(Modifier::DIM));

    s.stamp_messages(1_000 + STALE_SECS);
    let buf = render(&s, 80, 24);
    let (x, y) = find(&buf, "› sent SIGTERM");
    assert!(
        buf[(x, y)].modifier.contains(Modifier::DIM),
        "a stale message is dimmed"
    );
    assert_eq!(buf[(x, y)].fg, dark().muted);

    s.stamp_messages(1_000 + SHOWN_SECS);
    let buf = render(&s, 80, 24);
    assert!(!text(&buf).contains("sent SIGTERM"), "{}", text(&buf));
    assert!(s
        .messages
        .newest_first()
        .any(|m| m.text.contains("SIGTERM")));
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn screen(term: &Terminal<TestBackend>) -> String {
    text(term.backend().buffer())
}

const AREA: Rect = Rect {
    x: 0,
    y: 0,
    width: 80,
    height: 24,
};

fn app() -> App {
    let mut app = App::new(&Config::default(), dark(), "testhost".into(), false);
    support::demo::feed(&mut app.state, SPEC, 3);
    app
}

#[test]
fn help_shows_the_tab_keys_first_and_scrolls_to_its_end_at_80x24() {
    let mut app = app();
    let mut term = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    app.handle_event(&key(KeyCode::Char('8')), AREA);
    assert_eq!(app.state.tab, Tab::Runs);
    app.handle_event(&key(KeyCode::Char('?')), AREA);
    app.draw(&mut term).expect("draw");
    let first = screen(&term);
    let rows: Vec<&str> = first.lines().collect();
    let top = rows.iter().position(|r| r.contains("Keys: Runs first"));
    let top = top.unwrap_or_else(|| panic!("help is open:\n{first}"));
    assert!(
        rows[top + 1].contains("Runs"),
        "the tab's own keys come first:\n{first}"
    );
    assert!(first.contains("more below"), "{first}");
    assert!(!first.contains("End/G"), "the end is not on the first page");

    app.handle_event(&key(KeyCode::End), AREA);
    assert_eq!(
        app.state.overlay,
        Overlay::Help,
        "End scrolls, it does not close"
    );
    app.draw(&mut term).expect("draw");
    let end = screen(&term);
    assert!(end.contains("End/G"), "the last binding is reached:\n{end}");
    assert!(end.contains("closes this help."), "{end}");
    let (x, y) = find(term.backend().buffer(), "End/G");
    assert_eq!(term.backend().buffer()[(x, y)].fg, dark().accent);

    // The app keeps the real last page, so one ↑ moves at once.
    app.handle_event(&key(KeyCode::Up), AREA);
    app.draw(&mut term).expect("draw");
    assert!(
        !screen(&term).contains("closes this help."),
        "{}",
        screen(&term)
    );
    app.handle_event(&key(KeyCode::Char('x')), AREA);
    assert_eq!(app.state.overlay, Overlay::None);
}

#[test]
fn t_switches_the_theme_and_the_screen_is_drawn_in_it() {
    let mut app = app();
    let no_user_themes = tempfile::tempdir().expect("tmp dir");
    app.state.themes = ThemeChoice::new(usable_themes(no_user_themes.path()), "dark", dark());
    let mut term = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    app.draw(&mut term).expect("draw");
    let (x, y) = find(term.backend().buffer(), "gpudeck");
    assert_eq!(term.backend().buffer()[(x, y)].fg, dark().title);

    app.handle_event(&key(KeyCode::Char('T')), AREA);
    let contrast = Theme::builtin("high-contrast").expect("theme");
    assert_eq!(app.state.themes.current(), Some(&contrast));
    app.draw(&mut term).expect("draw");
    let buf = term.backend().buffer();
    let (x, y) = find(buf, "gpudeck");
    assert_eq!(
        buf[(x, y)].fg,
        contrast.title,
        "the frame uses the new theme"
    );
    assert!(
        screen(&term).contains("theme: high-contrast"),
        "{}",
        screen(&term)
    );

    for _ in 0..2 {
        app.handle_event(&key(KeyCode::Char('T')), AREA);
    }
    assert_eq!(app.state.themes.current_name(), Some("dark"), "it cycles");

    app.state.themes = ThemeChoice::fixed("monochrome", Theme::monochrome(), "NO_COLOR is set");
    app.handle_event(&key(KeyCode::Char('T')), AREA);
    let status = app.state.status.clone().expect("a reason");
    assert!(status.is_error && status.text.contains("NO_COLOR"));
}

#[test]
fn ctrl_z_asks_to_suspend_from_anywhere() {
    let mut app = app();
    let ctrl_z = Event::Key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL));
    app.handle_event(&key(KeyCode::Char('?')), AREA);
    app.handle_event(&ctrl_z, AREA);
    assert!(app.state.suspend);
    assert_eq!(app.state.overlay, Overlay::Help, "it comes back as it was");
}

/// The dashboard's own pull, through the Docker collector against the real Engine: its failure
/// carries the Engine's reason and the fix into the footer and the messages view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_pull_shows_the_engines_reason_in_the_dashboard() {
    if !support::docker::engine_or_skip("a_failed_pull_shows_the_engines_reason_in_the_dashboard") {
        return;
    }
    let mut s = demo_state(SPEC, 1);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let docker = gpudeck::docker::collector::spawn(None, tx);
    // Nothing listens on this port of m3's range: the Engine says "connection refused".
    let reference = "127.0.0.1:43001/m3/nosuch:v1";
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut sent = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let update = tokio::time::timeout(left, rx.recv())
            .await
            .expect("the pull ends within 60 s")
            .expect("collector alive");
        let finished = matches!(update, DockerUpdate::PullFinished { .. });
        s.apply_docker(update);
        if !sent && s.docker.is_ready() {
            docker
                .send(DockerCommand::Pull(reference.into()))
                .expect("send");
            sent = true;
        }
        if finished {
            break;
        }
    }
    let status = s.status.clone().expect("a message");
    assert!(status.is_error);
    assert!(
        status.text.contains("connection refused") && status.text.contains("What to do"),
        "the Engine's reason and the fix: {}",
        status.text
    );
    s.update(Action::ShowMessages);
    let inside = popup_text(&render(&s, 80, 24));
    assert!(inside.contains(&words(&status.text)), "{inside}");
}

/// The state letter of a process (`T` when stopped), from /proc.
fn process_state(pid: &str) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or_default();
    after_name
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn ctrl_z_gives_the_terminal_back_and_fg_resumes_the_dashboard() {
    let found = which("tmux").is_some() && which("bash").is_some();
    let test = "ctrl_z_gives_the_terminal_back_and_fg_resumes_the_dashboard";
    if !support::real::have(support::real::Part::Tmux, test, found, "no tmux or bash") {
        return;
    }
    let s = support::tmux::Session::start_in_shell(
        "m3-suspend",
        (80, 24),
        "--demo",
        support::Dirs::new(),
    );
    s.wait_for("the dashboard", |t| t.contains("DEMO (simulated)"));
    let pid = s.gpudeck_pid();
    assert_eq!(s.display("#{alternate_on}"), "1");

    s.keys(&["C-z"]);
    let shell = s.wait_for("the shell to report the stopped job", |t| {
        t.contains("Stopped")
    });
    assert!(!shell.contains("DEMO (simulated)"), "{shell}");
    assert_eq!(
        s.display("#{alternate_on}"),
        "0",
        "the normal screen is back"
    );
    assert_eq!(s.display("#{cursor_flag}"), "1", "the cursor shows");
    assert_eq!(process_state(&pid), "T", "gpudeck is stopped");

    s.keys(&["fg", "Enter"]);
    s.wait_for("the dashboard again", |t| {
        t.contains("DEMO (simulated)") && t.contains("q quit")
    });
    assert_eq!(s.display("#{alternate_on}"), "1");
    assert_ne!(process_state(&pid), "T");
    // Keys reach it again: help opens.
    s.keys(&["?"]);
    s.wait_for("help after fg", |t| t.contains("Keys: GPUs first"));
    s.keys(&["x"]);
    s.wait_for("help closed", |t| !t.contains("Keys: GPUs first"));
    s.keys(&["q"]);
    s.wait_for("the shell after quitting", |t| {
        !t.contains("DEMO (simulated)")
    });
    assert_eq!(s.display("#{alternate_on}"), "0");
}

fn which(tool: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| std::path::Path::new(dir).join(tool))
        .find(|p| p.is_file())
}
