//! TensorBoard as a service: its command line, and the answer that says it is up and which
//! log directory it serves.
//!
//! Checked against tensorboard 2.21.0 (tensorboard-data-server 0.7.2), without TensorFlow:
//! - `--host 127.0.0.1` binds loopback only (`--bind_all` would be every interface; the two
//!   are exclusive). TensorBoard has no authentication of its own: loopback is the guard.
//! - It answers in about 1.3 s with the default `--load_fast=auto`, which starts the Rust data
//!   server as a child (on localhost, `--die-after-stdin`, so it goes with its parent);
//!   `--load_fast=false` starts no faster here (1.2 s) and reads large logs far slower, so the
//!   default stays. Without TensorFlow it prints "running with reduced feature set", which is
//!   harmless: the scalars, images and histograms plugins work.
//! - `GET /data/logdir` answers `{"logdir": "DIR"}` once it serves; `/` is the HTML page.
//!   SIGTERM ends it ("TensorBoard caught SIGTERM; exiting...") and its data server with it.

use std::path::Path;

use serde::Deserialize;

/// Answers `{"logdir": ...}` once TensorBoard serves.
pub const READY_PATH: &str = "/data/logdir";

/// `tensorboard` over `logdir` on `address`:`port` (127.0.0.1 on the host, every address in a
/// container).
pub fn tensorboard_command(
    tensorboard: &Path,
    address: &str,
    logdir: &Path,
    port: u16,
) -> Vec<String> {
    vec![
        tensorboard.to_string_lossy().into_owned(),
        "--logdir".into(),
        logdir.to_string_lossy().into_owned(),
        "--host".into(),
        address.into(),
        "--port".into(),
        port.to_string(),
    ]
}

#[derive(Deserialize)]
struct LogdirJson {
    logdir: String,
}

/// The log directory a `/data/logdir` answer names.
pub fn parse_logdir(body: &str) -> Result<String, String> {
    serde_json::from_str::<LogdirJson>(body)
        .map(|l| l.logdir)
        .map_err(|e| format!("the answer is not TensorBoard's {{\"logdir\": ...}}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_serves_the_log_directory_on_loopback() {
        assert_eq!(
            tensorboard_command(
                Path::new("/v/bin/tensorboard"),
                "127.0.0.1",
                Path::new("/runs/x"),
                6010
            ),
            [
                "/v/bin/tensorboard",
                "--logdir",
                "/runs/x",
                "--host",
                "127.0.0.1",
                "--port",
                "6010"
            ]
        );
    }

    #[test]
    fn the_ready_answer_names_the_log_directory() {
        let body = include_str!("../../tests/fixtures/services/tensorboard-logdir.json");
        assert_eq!(parse_logdir(body).unwrap(), "/tmp/tb/logs");
        let err = parse_logdir("<!doctype html>").unwrap_err();
        assert!(err.starts_with("the answer is not TensorBoard's"), "{err}");
    }
}
