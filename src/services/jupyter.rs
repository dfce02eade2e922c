//! JupyterLab as a service: its command line and environment, and what its REST API says
//! (`/api/kernels`, `/api/status`), down to since when every kernel has been idle.
//!
//! Checked against jupyterlab 4.6.6 (jupyter_server 2.21.1, ipykernel 7.4.0):
//! - The token comes from `JUPYTER_TOKEN` (jupyter_server's `IdentityProvider.token` reads it),
//!   never from the command line: `/proc/PID/cmdline` is readable by every user. The server
//!   then logs `http://127.0.0.1:P/lab?token=...`, the token masked.
//! - Without the token every API but `/api` answers 403 `{"message": "Forbidden", "reason":
//!   null}` (not 401); `/api` answers `{"version": "2.21.1"}` to anyone, so it tells that the
//!   server is up without a token, `/api/status` that the token is right.
//! - `--ServerApp.port_retries=0` makes a taken port an error instead of the next port up;
//!   `--no-browser` keeps it from opening one; `--allow-root` lets it run as root (in a
//!   container, as CI does), and changes nothing for other users. It answers in about 4 s.
//! - `jupyter lab` execs `jupyter-lab` (same PID). SIGTERM shuts the kernels down and exits.
//!   Kernels run in a session of their own (out of the server's process group, so a signal to
//!   the group misses them) and listen on 127.0.0.1; a kernel whose server was killed exits by
//!   itself within seconds (ipykernel watches its parent).
//! - A port already taken ends it at once: "ERROR: the Jupyter server could not be started
//!   because port P is not available."
//! - A kernel started by `POST /api/kernels` stays `starting` until a client connects to its
//!   channels; then `busy`/`idle`. Its `last_activity` is the kernel's; the server's own
//!   `/api/status` `last_activity` moves with every API request, probes included, so it says
//!   nothing about idleness.

use std::path::Path;

use serde::Deserialize;

/// The environment variable jupyter_server takes its token from: gpudeck hands the token over
/// here, never on the command line, which every user of the machine can read in /proc. (A
/// container notebook gets it in a private file instead: `JUPYTER_TOKEN_FILE`.)
pub const TOKEN_ENV: &str = crate::runs::NOTEBOOK_TOKEN_ENV;

/// Answers to anyone once the server is up (`{"version": ...}`).
pub const UP_PATH: &str = "/api";
/// Answers only with the token.
pub const STATUS_PATH: &str = "/api/status";
/// The running kernels (GET), or a new one (POST `{"name": "python3"}`).
pub const KERNELS_PATH: &str = "/api/kernels";

/// `jupyter lab` serving `root_dir` on `address`:`port` (127.0.0.1 on the host; every address
/// inside a container, whose port is published on the host's 127.0.0.1 only); the token goes
/// in [`notebook_env`].
pub fn notebook_command(jupyter: &Path, address: &str, port: u16, root_dir: &Path) -> Vec<String> {
    vec![
        jupyter.to_string_lossy().into_owned(),
        "lab".into(),
        "--no-browser".into(),
        format!("--ip={address}"),
        format!("--port={port}"),
        "--ServerApp.port_retries=0".into(),
        format!("--ServerApp.root_dir={}", root_dir.to_string_lossy()),
        "--allow-root".into(),
    ]
}

/// The environment [`notebook_command`] needs beside the caller's: the token.
pub fn notebook_env(token: &str) -> Vec<(String, String)> {
    vec![(TOKEN_ENV.to_string(), token.to_string())]
}

/// The address users open, token included (it stays on this machine: loopback only).
pub fn lab_url(port: u16, token: &str) -> String {
    format!("http://127.0.0.1:{port}/lab?token={token}")
}

/// A fresh token: 24 random bytes from the kernel, in hex.
pub fn new_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What a kernel is doing, as jupyter_server reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelState {
    Starting,
    Idle,
    Busy,
    Restarting,
    Dead,
    /// Any other word a server uses (`autorestarting`, `terminating`, ...).
    Other(String),
}

impl KernelState {
    /// Whether the kernel computes nothing: idle, or waiting for its first client.
    pub fn is_quiet(&self) -> bool {
        matches!(self, KernelState::Idle | KernelState::Starting)
    }

    /// The word jupyter_server uses.
    pub fn as_str(&self) -> &str {
        match self {
            KernelState::Starting => "starting",
            KernelState::Idle => "idle",
            KernelState::Busy => "busy",
            KernelState::Restarting => "restarting",
            KernelState::Dead => "dead",
            KernelState::Other(word) => word,
        }
    }

    fn from_word(word: &str) -> KernelState {
        match word {
            "starting" => KernelState::Starting,
            "idle" => KernelState::Idle,
            "busy" => KernelState::Busy,
            "restarting" => KernelState::Restarting,
            "dead" => KernelState::Dead,
            other => KernelState::Other(other.to_string()),
        }
    }
}

impl serde::Serialize for KernelState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One running kernel, from `/api/kernels`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Kernel {
    pub id: String,
    /// The kernel spec's name (`python3`).
    pub name: String,
    pub execution_state: KernelState,
    /// The kernel's last activity, in milliseconds since the Unix epoch.
    pub last_activity_ms: Option<u64>,
    /// Clients connected to its channels (open notebooks and consoles).
    pub connections: u32,
}

#[derive(Deserialize)]
struct KernelJson {
    id: String,
    name: String,
    execution_state: String,
    last_activity: Option<String>,
    #[serde(default)]
    connections: u32,
}

/// Parses a `/api/kernels` answer.
pub fn parse_kernels(body: &str) -> Result<Vec<Kernel>, String> {
    let kernels: Vec<KernelJson> = serde_json::from_str(body)
        .map_err(|e| format!("the kernel list is not what jupyter_server sends: {e}"))?;
    kernels
        .into_iter()
        .map(|k| {
            Ok(Kernel {
                last_activity_ms: millis(k.last_activity.as_deref())?,
                execution_state: KernelState::from_word(&k.execution_state),
                id: k.id,
                name: k.name,
                connections: k.connections,
            })
        })
        .collect()
}

/// The server's own counts, from `/api/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub kernels: u32,
    pub connections: u32,
    /// When the server started, in milliseconds since the Unix epoch.
    pub started_ms: Option<u64>,
    /// Moves with every API request, probes included: not a measure of use.
    pub last_activity_ms: Option<u64>,
}

#[derive(Deserialize)]
struct StatusJson {
    kernels: u32,
    connections: u32,
    started: Option<String>,
    last_activity: Option<String>,
}

/// Parses a `/api/status` answer.
pub fn parse_status(body: &str) -> Result<ServerStatus, String> {
    let status: StatusJson = serde_json::from_str(body)
        .map_err(|e| format!("the server status is not what jupyter_server sends: {e}"))?;
    Ok(ServerStatus {
        kernels: status.kernels,
        connections: status.connections,
        started_ms: millis(status.started.as_deref())?,
        last_activity_ms: millis(status.last_activity.as_deref())?,
    })
}

/// Since when (milliseconds since the Unix epoch) every kernel has been quiet: the latest of
/// their last activities. None when there is no kernel, when one works (busy, restarting, or
/// a state gpudeck does not know), or when one has no last activity to go by. A kernel that no
/// browser has connected to stays `starting` in jupyter_server's list however long it waits
/// (its status messages are read only once a client connects): it computes nothing, so it
/// counts as quiet since its last activity.
pub fn idle_since_ms(kernels: &[Kernel]) -> Option<u64> {
    let mut latest: Option<u64> = None;
    for kernel in kernels {
        if !kernel.execution_state.is_quiet() {
            return None;
        }
        let at = kernel.last_activity_ms?;
        latest = Some(latest.map_or(at, |l| l.max(at)));
    }
    latest
}

/// An RFC 3339 time (`2026-11-25T20:58:07.277040Z`) in milliseconds since the Unix epoch.
fn millis(text: Option<&str>) -> Result<Option<u64>, String> {
    let Some(text) = text else { return Ok(None) };
    let at: jiff::Timestamp = text
        .parse()
        .map_err(|e| format!("{text:?} is not an RFC 3339 time: {e}"))?;
    u64::try_from(at.as_millisecond())
        .map(Some)
        .map_err(|_| format!("{text} is before 1970"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUSY: &str = include_str!("../../tests/fixtures/services/jupyter-kernels-busy.json");
    const IDLE: &str = include_str!("../../tests/fixtures/services/jupyter-kernels-idle.json");
    const STARTING: &str =
        include_str!("../../tests/fixtures/services/jupyter-kernels-starting.json");
    const EMPTY: &str = include_str!("../../tests/fixtures/services/jupyter-kernels-empty.json");
    const STATUS: &str = include_str!("../../tests/fixtures/services/jupyter-status.json");
    const FORBIDDEN: &str = include_str!("../../tests/fixtures/services/jupyter-forbidden.json");

    fn ms(rfc3339: &str) -> u64 {
        millis(Some(rfc3339)).unwrap().unwrap()
    }

    #[test]
    fn the_command_binds_loopback_on_the_port_and_never_carries_the_token() {
        let command = notebook_command(
            Path::new("/venv/bin/jupyter"),
            "127.0.0.1",
            8890,
            Path::new("/home/u/work"),
        );
        assert_eq!(
            command,
            [
                "/venv/bin/jupyter",
                "lab",
                "--no-browser",
                "--ip=127.0.0.1",
                "--port=8890",
                "--ServerApp.port_retries=0",
                "--ServerApp.root_dir=/home/u/work",
                "--allow-root",
            ]
        );
        assert_eq!(
            notebook_env("t0k"),
            [("JUPYTER_TOKEN".to_string(), "t0k".to_string())]
        );
        assert_eq!(lab_url(8890, "t0k"), "http://127.0.0.1:8890/lab?token=t0k");
    }

    #[test]
    fn tokens_are_48_hex_digits_and_differ() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 48);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn a_busy_kernel_and_an_idle_one_are_parsed_with_their_activity() {
        let kernels = parse_kernels(BUSY).unwrap();
        assert_eq!(
            kernels,
            [
                Kernel {
                    id: "252d67e5-8d98-4de8-8fde-99c7afd24eb3".into(),
                    name: "python3".into(),
                    execution_state: KernelState::Busy,
                    last_activity_ms: Some(ms("2026-11-25T20:58:38.626Z")),
                    connections: 1,
                },
                Kernel {
                    id: "f68eca5a-76dd-4fa2-a793-23b2de99c100".into(),
                    name: "python3".into(),
                    execution_state: KernelState::Idle,
                    last_activity_ms: Some(ms("2026-11-25T20:58:34.405Z")),
                    connections: 0,
                },
            ]
        );
        assert_eq!(idle_since_ms(&kernels), None);
    }

    #[test]
    fn all_kernels_idle_means_idle_since_the_latest_activity() {
        let kernels = parse_kernels(IDLE).unwrap();
        assert_eq!(kernels.len(), 2);
        assert_eq!(
            idle_since_ms(&kernels),
            Some(ms("2026-11-25T20:58:43.628Z"))
        );
        assert_eq!(idle_since_ms(&kernels), Some(1_795_640_323_628));
    }

    #[test]
    fn a_kernel_waiting_for_its_first_client_is_quiet_and_no_kernel_at_all_is_not_idleness() {
        let starting = parse_kernels(STARTING).unwrap();
        assert_eq!(starting[1].execution_state, KernelState::Starting);
        let latest = starting.iter().filter_map(|k| k.last_activity_ms).max();
        assert!(latest.is_some());
        assert_eq!(idle_since_ms(&starting), latest);
        assert_eq!(parse_kernels(EMPTY).unwrap(), []);
        assert_eq!(idle_since_ms(&[]), None);
    }

    #[test]
    fn an_idle_kernel_without_a_last_activity_cannot_say_since_when() {
        let kernels = parse_kernels(
            r#"[{"id": "k", "name": "python3", "last_activity": null,
                 "execution_state": "idle", "connections": 0}]"#,
        )
        .unwrap();
        assert_eq!(kernels[0].last_activity_ms, None);
        assert_eq!(idle_since_ms(&kernels), None);
    }

    #[test]
    fn unknown_states_are_kept_and_are_not_idle() {
        let kernels = parse_kernels(
            r#"[{"id": "k", "name": "ir", "last_activity": "2026-01-01T00:00:00Z",
                 "execution_state": "autorestarting", "connections": 2}]"#,
        )
        .unwrap();
        assert_eq!(
            kernels[0].execution_state,
            KernelState::Other("autorestarting".into())
        );
        assert_eq!(idle_since_ms(&kernels), None);
    }

    #[test]
    fn the_server_status_is_parsed() {
        assert_eq!(
            parse_status(STATUS).unwrap(),
            ServerStatus {
                kernels: 2,
                connections: 0,
                started_ms: Some(ms("2026-11-25T20:58:04.696Z")),
                last_activity_ms: Some(ms("2026-11-25T20:58:47.474Z")),
            }
        );
    }

    #[test]
    fn a_refusal_or_a_bad_time_is_an_error_that_says_what_it_got() {
        let err = parse_kernels(FORBIDDEN).unwrap_err();
        assert!(err.starts_with("the kernel list is not what"), "{err}");
        let err = parse_kernels(
            r#"[{"id": "k", "name": "p", "last_activity": "yesterday",
                 "execution_state": "idle", "connections": 0}]"#,
        )
        .unwrap_err();
        assert!(
            err.starts_with("\"yesterday\" is not an RFC 3339 time"),
            "{err}"
        );
        assert!(parse_status(FORBIDDEN).is_err());
    }
}
