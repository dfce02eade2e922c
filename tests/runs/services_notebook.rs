//! `gpudeck notebook --host` with the real JupyterLab (from `target/test-venv`, which
//! `.ci/run` fills from PyPI, or the `jupyter` on PATH): started detached on a simulated GPU,
//! token-protected, listed by `gpudeck services`, its idle kernel flagged, left out of
//! `gpudeck runs`, outliving the command that started it, and closed by `gpudeck stop`.

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::Value;

use crate::support::runs::{gpudeck, output, record, run_dir, session_of, wait_until, GroupGuard};
use crate::support::{serve, services, stderr, stdout, Dirs};

/// PATH with the directory holding `jupyter` first.
fn path_with(bin: &std::path::Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn services(dirs: &Dirs) -> Vec<Value> {
    let out = output(dirs, &["services", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("services --json is JSON");
    assert_eq!(doc["schema"], "gpudeck.services/v1");
    doc["services"].as_array().expect("services[]").clone()
}

fn service(dirs: &Dirs, id: &str) -> Value {
    services(dirs)
        .into_iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not listed"))
}

/// An HTTP GET on loopback with curl-free std: the status code.
fn http_status(port: u16, path: &str, token: Option<&str>) -> u16 {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let auth = token.map_or(String::new(), |t| format!("Authorization: token {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
    )
    .expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {answer:?}"))
}

fn post_kernel(port: u16, token: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let body = r#"{"name": "python3"}"#;
    write!(
        stream,
        "POST /api/kernels HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: token {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 201"),
        "kernel not started: {answer}"
    );
    answer
}

/// A test's JupyterLab (`None` after saying why it is skipped), its directory for PATH, and
/// isolated dirs whose config.toml holds `config`.
fn setup(test: &str, config: &str) -> Option<(std::path::PathBuf, Dirs)> {
    let jupyter = services::or_skip(test, services::jupyter())?;
    let bin = jupyter.parent().expect("jupyter's directory").to_path_buf();
    let dirs = Dirs::new();
    std::fs::create_dir_all(dirs.config()).expect("config dir");
    std::fs::write(dirs.config().join("config.toml"), config).expect("config");
    Some((bin, dirs))
}

#[test]
fn a_host_notebook_is_token_protected_listed_flagged_when_idle_and_stopped() {
    let test = "a_host_notebook_is_token_protected_listed_flagged_when_idle_and_stopped";
    let Some((bin, dirs)) = setup(test, "[notebook]\nidle_alert = \"2s\"\n") else {
        return;
    };
    let work = dirs.root.path().join("project");
    std::fs::create_dir_all(&work).expect("work dir");

    let out = gpudeck(
        &dirs,
        &[
            "notebook",
            "--host",
            "--gpus",
            "1",
            "--name",
            "nb",
            "--workdir",
        ],
    )
    .arg(&work)
    .env("PATH", path_with(&bin))
    .output()
    .expect("gpudeck runs");
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    let id = stdout(&out).trim().to_string();
    assert!(id.contains("-nb-"), "{id}");
    assert!(said.contains("JupyterLab is ready, on GPU 1"), "{said}");

    // What was printed: the URL with its token, and the SSH line for the same port.
    let listed = service(&dirs, &id);
    let url = listed["url"].as_str().expect("url").to_string();
    let port = listed["ports"][0]["port"].as_u64().expect("port") as u16;
    let token = url
        .split("token=")
        .nth(1)
        .expect("a token in the URL")
        .to_string();
    assert!(token.len() >= 32, "{url}");
    assert!(said.contains(&url), "the URL is printed whole: {said}");
    let ssh = format!("ssh -N -L {port}:127.0.0.1:{port} ");
    assert!(said.contains(&ssh) && listed["ssh"].as_str().unwrap().starts_with(&ssh));
    assert_eq!(listed["kind"], "notebook");
    assert_eq!(listed["health"], "ready");
    assert_eq!(listed["gpus"][0]["index"], 1);
    assert_eq!(listed["image"], Value::Null);

    // The token is required, and is nowhere another user can read it.
    assert_eq!(http_status(port, "/api/status", Some(&token)), 200);
    assert_eq!(http_status(port, "/api/status", None), 403);
    let rec = record(&dirs, &id);
    let pid = rec["ranks"][0]["pid"].as_i64().expect("the rank's pid");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(&token),
        "the token is on the command line"
    );
    let _guard = GroupGuard(rec["process_group"]["pid"].as_i64());
    assert_eq!(
        rec["ranks"][0]["env"]["CUDA_VISIBLE_DEVICES"], rec["gpus"][0]["uuid"],
        "JupyterLab sees GPU 1 alone"
    );
    for file in ["run.json", "spec.toml"] {
        let mode = std::fs::metadata(run_dir(&dirs, &id).join(file))
            .expect(file)
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file} holds the token");
    }

    // It outlives the gpudeck that started it: its supervisor is in a session of its own.
    let supervisor = rec["supervisor"]["pid"].as_i64().expect("supervisor pid");
    assert_ne!(
        session_of(supervisor),
        session_of(std::process::id() as i64)
    );

    // `gpudeck runs` leaves it out and says where it is.
    let runs = output(&dirs, &["runs"]);
    assert!(!stdout(&runs).contains(&id), "{}", stdout(&runs));
    assert!(stdout(&runs).contains("1 service not listed here: gpudeck services"));

    // A kernel left idle past idle_alert (2 s) on a GPU is flagged.
    post_kernel(port, &token);
    wait_until("the idle kernel to be flagged", || {
        let s = service(&dirs, &id);
        s["idle_alert"] == true && s["kernels"].as_array().is_some_and(|k| k.len() == 1)
    });
    // The metrics endpoint says so too, labelled with the service and its GPUs.
    let served = serve::start({
        let mut cmd = gpudeck(&dirs, &["serve", "--metrics", "127.0.0.1:0"]);
        cmd.env("PATH", path_with(&bin));
        cmd
    });
    let series = format!(
        "gpudeck_service_idle_seconds{{service=\"{id}\",kind=\"notebook\",name=\"nb\",gpus=\"1\"}}"
    );
    // The endpoint looks at services on a clock of its own: its first look may follow the
    // first GPU sample.
    let text = serve::wait_for(30, "the service in the metrics", || {
        Some(serve::scrape(&served.addr)).filter(|t| t.contains("gpudeck_service_idle_seconds"))
    });
    let up =
        format!("gpudeck_service_up{{service=\"{id}\",kind=\"notebook\",name=\"nb\",gpus=\"1\"}}");
    assert_eq!(serve::value(&text, &up), Some(1.0), "{text}");
    assert!(
        serve::value(&text, &series).is_some_and(|idle| idle >= 2.0),
        "{text}"
    );
    drop(served);

    // Doctor warns about it, with the command that frees the GPU.
    let doctor = output(&dirs, &["doctor", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&doctor)).expect("doctor --json");
    let check = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == "gpus.idle_notebooks")
        .expect("the idle notebooks check")
        .clone();
    assert_eq!(check["status"], "warn", "{check}");
    assert!(check["fix"]
        .as_str()
        .unwrap()
        .contains(&format!("gpudeck stop {id}")));

    let table = output(&dirs, &["services"]);
    assert!(
        stdout(&table).contains("while holding GPU 1"),
        "{}",
        stdout(&table)
    );

    // Stopping it closes the port and ends the kernel with it.
    let stop = output(&dirs, &["stop", &id]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    assert_eq!(service(&dirs, &id)["state"], "stopped");
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still open"
    );

    // `gpudeck rerun` starts it again as a service on the same port, told as a start is, with
    // a new token: whoever saw the old one is out.
    let again = gpudeck(&dirs, &["rerun", &id])
        .env("PATH", path_with(&bin))
        .output()
        .expect("gpudeck runs");
    let said = stderr(&again);
    assert!(again.status.success(), "{said}");
    let new_id = stdout(&again).trim().to_string();
    assert_ne!(new_id, id);
    let _again = GroupGuard(record(&dirs, &new_id)["process_group"]["pid"].as_i64());
    assert!(said.contains("JupyterLab is ready, on GPU 1"), "{said}");
    let new_url = service(&dirs, &new_id)["url"].as_str().unwrap().to_string();
    let new_token = new_url.split("token=").nth(1).unwrap().to_string();
    assert!(said.contains(&new_url), "{said}");
    assert_ne!(new_token, token);
    assert_eq!(
        new_url.replace(&new_token, ""),
        url.replace(&token, ""),
        "same port"
    );
    assert_eq!(http_status(port, "/api/status", Some(&new_token)), 200);
    assert_eq!(http_status(port, "/api/status", Some(&token)), 403);
    let stop = output(&dirs, &["stop", &new_id]);
    assert!(stop.status.success(), "{}", stderr(&stop));

    // --keep-token keeps it.
    let kept = gpudeck(&dirs, &["rerun", &new_id, "--keep-token"])
        .env("PATH", path_with(&bin))
        .output()
        .expect("gpudeck runs");
    let said = stderr(&kept);
    assert!(kept.status.success(), "{said}");
    let kept_id = stdout(&kept).trim().to_string();
    let _kept = GroupGuard(record(&dirs, &kept_id)["process_group"]["pid"].as_i64());
    assert!(said.contains(&new_url), "{said}");
    assert_eq!(http_status(port, "/api/status", Some(&new_token)), 200);
    let stop = output(&dirs, &["stop", &kept_id]);
    assert!(stop.status.success(), "{}", stderr(&stop));
}

#[test]
fn idle_stop_shuts_a_notebooks_idle_kernel_down_and_the_notebook_keeps_running() {
    let test = "idle_stop_shuts_a_notebooks_idle_kernel_down_and_the_notebook_keeps_running";
    let Some((bin, dirs)) = setup(test, "[notebook]\nidle_stop = \"3s\"\n") else {
        return;
    };
    let out = gpudeck(
        &dirs,
        &["notebook", "--host", "--gpus", "0", "--name", "kept"],
    )
    .current_dir(dirs.root.path())
    .env("PATH", path_with(&bin))
    .output()
    .expect("gpudeck runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let id = stdout(&out).trim().to_string();
    let rec = record(&dirs, &id);
    let _guard = GroupGuard(rec["process_group"]["pid"].as_i64());
    assert_eq!(
        rec["service"]["idle_stop_secs"], 3,
        "the limit it started with is kept"
    );
    let listed = service(&dirs, &id);
    let port = listed["ports"][0]["port"].as_u64().expect("port") as u16;
    let url = listed["url"].as_str().expect("url").to_string();
    let token = url.split("token=").nth(1).expect("token").to_string();

    post_kernel(port, &token);
    assert_eq!(
        service(&dirs, &id)["kernels"].as_array().map(Vec::len),
        Some(1)
    );
    // Idle past 3 s, the supervisor's keeper shuts it down (it looks every second).
    wait_until("the idle kernel to be shut down", || {
        service(&dirs, &id)["kernels"]
            .as_array()
            .is_none_or(Vec::is_empty)
    });
    let s = service(&dirs, &id);
    assert_eq!(
        (s["state"].as_str(), s["health"].as_str()),
        (Some("running"), Some("ready"))
    );
    let log =
        std::fs::read_to_string(run_dir(&dirs, &id).join("supervisor.log")).unwrap_or_default();
    assert!(
        log.contains("shut down: idle for more than 3s ([notebook] idle_stop)"),
        "the supervisor's log says why: {log}"
    );
    let stop = output(&dirs, &["stop", &id]);
    assert!(stop.status.success(), "{}", stderr(&stop));
}
