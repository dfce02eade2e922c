//! `[metrics] listen` in the config: the dashboard (in tmux) serves the same
//! endpoint while it runs, and says so on screen when the address is taken.

use crate::support;

use support::metrics::{demo, gpus_json, FROZEN};
use support::serve::{free_port, scrape, value};
use support::tmux::Session;
use support::Dirs;

fn with_listen(addr: &str) -> Dirs {
    let dirs = Dirs::new();
    std::fs::create_dir_all(dirs.config()).expect("mkdir");
    std::fs::write(
        dirs.config().join("config.toml"),
        format!("[metrics]\nlisten = \"{addr}\"\n"),
    )
    .expect("write");
    dirs
}

#[test]
fn the_dashboard_serves_metrics_when_the_config_asks() {
    let _gate = crate::support::gate::gate(module_path!());
    let addr = format!("127.0.0.1:{}", free_port());
    let env = format!("GPUDECK_SIM={FROZEN}");
    let s = Session::start_with("metrics", 160, 40, &env, "--demo", with_listen(&addr));
    s.wait_for("the dashboard", |t| t.contains("H100"));
    let text = scrape(&addr);
    let gpus = gpus_json(demo(&Dirs::new(), &[]));
    for gpu in &gpus {
        let series = format!(
            r#"gpudeck_gpu_utilization_ratio{{gpu="{}",uuid="{}"}}"#,
            gpu["index"],
            gpu["uuid"].as_str().unwrap()
        );
        let want = gpu["util_gpu_pct"].as_f64().unwrap() / 100.0;
        assert_eq!(value(&text, &series), Some(want), "{series}\n{text}");
    }
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
    assert!(std::net::TcpStream::connect(&addr).is_err(), "still served");
}

#[test]
fn a_taken_metrics_address_is_shown_and_the_dashboard_runs_on() {
    let _gate = crate::support::gate::gate(module_path!());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let s = Session::start_with("metrics-taken", 200, 40, "", "--demo", with_listen(&addr));
    s.wait_for("the error and the dashboard", |t| {
        t.contains("already in use") && t.contains("H100")
    });
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}
