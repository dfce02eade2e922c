//! End to end: a real JupyterLab (from target/test-venv or PATH) started with `gpudeck notebook
//! --host`, found in the Services tab of the dashboard in tmux at 80x24 with its URL whole, and
//! stopped from there until its port closes, as a user would.

use crate::support;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::runs::{gpudeck, record, start_with};
use support::services;
use support::tmux::Session;
use support::Dirs;

/// The screen's text without box borders or spaces, the lines joined: a URL (which has no
/// spaces) wrapped over several lines reads whole in it.
fn joined(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' ').replace(' ', ""))
        .collect()
}

#[test]
fn a_user_finds_a_notebook_in_the_services_tab_reads_its_url_whole_and_stops_it() {
    let test = "a_user_finds_a_notebook_in_the_services_tab";
    let Some(jupyter) = services::or_skip(test, services::jupyter()) else {
        return;
    };
    let bin = jupyter.parent().expect("its directory").to_path_buf();
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let mut notebook = gpudeck(&dirs, &["notebook", "--host", "--gpus", "none"]);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&path)))
        .expect("a PATH");
    notebook.env("PATH", path).current_dir(dirs.root.path());
    let (id, _guard) = start_with(&dirs, notebook);
    let run = record(&dirs, &id);
    let port = run["service"]["ports"][0]["port"]
        .as_u64()
        .expect("its port") as u16;
    let token = run["ranks"][0]["env"]["JUPYTER_TOKEN"]
        .as_str()
        .expect("its token")
        .to_string();
    let url = format!("http://127.0.0.1:{port}/lab?token={token}");
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_ok(),
        "the notebook listens on {port}"
    );

    let run_json = support::runs::run_dir(&dirs, &id).join("run.json");
    let s = Session::start_with("services", 80, 24, "", "--demo", dirs);
    s.wait_for("the dashboard", |t| t.contains("DEMO"));
    s.keys(&["9"]);
    let short = id.splitn(3, '-').nth(2).expect("the id's name part");
    let screen = s.wait_for_secs("the notebook, ready", 30, |t| {
        t.contains(short) && t.contains("ready")
    });
    assert!(
        joined(&screen).contains(&format!("open{url}")),
        "the URL whole, wrapped:\n{screen}"
    );
    assert!(screen.contains("Services · 1 · 1 live"), "{screen}");
    assert!(
        screen.lines().all(|l| l.chars().count() <= 80),
        "nothing wider than the terminal:\n{screen}"
    );

    s.keys(&["x"]);
    s.wait_for("a confirmation", |t| t.contains(&format!("Stop {id}?")));
    s.keys(&["y"]);
    s.wait_for_secs("the notebook stopped", 30, |t| {
        t.contains("Services · 1 · 0 live") && t.contains("stopped")
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(Instant::now() < deadline, "port {port} still open");
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = std::fs::read_to_string(run_json).expect("run.json");
    let run: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(run["state"], "stopped");
}
