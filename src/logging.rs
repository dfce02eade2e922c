//! Logging to a file under the state directory; the TUI owns the screen, so nothing is ever printed there.

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// The environment variable holding the log filter (e.g. `debug`, `gpudeck=trace`).
pub const LOG_ENV: &str = "GPUDECK_LOG";

/// Starts file logging; returns the log file's path, or None if it could not be opened (logging is then off).
pub fn init(state_dir: &Path) -> Option<PathBuf> {
    fs::create_dir_all(state_dir).ok()?;
    let path = state_dir.join("gpudeck.log");
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .ok()?;
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init()
        .ok()?;
    Some(path)
}
