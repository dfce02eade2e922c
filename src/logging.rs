//! Logging to a file under the state directory; the TUI owns the screen, so nothing is ever printed there.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

/// The environment variable holding the log filter (e.g. `debug`, `gpudeck=trace`).
pub const LOG_ENV: &str = "GPUDECK_LOG";

/// Starts file logging; returns the log file's path, or None if it could not be opened (logging
/// is then off).
pub fn init(state_dir: &Path) -> Option<PathBuf> {
    let (path, file) = open_log_file(state_dir)?;
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init()
        .ok()?;
    Some(path)
}

/// `gpudeck.log`, private (0600) in a state dir created 0700: it can hold container output and
/// paths. A symbolic link planted at its path is not followed (logging is then off).
fn open_log_file(state_dir: &Path) -> Option<(PathBuf, std::fs::File)> {
    crate::private_files::create_dir_all(state_dir).ok()?;
    let path = state_dir.join("gpudeck.log");
    let file = crate::private_files::open_append(&path).ok()?;
    Some((path, file))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_log_is_private_in_a_private_state_dir() {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state/gpudeck");
        let (path, _file) = open_log_file(&state).expect("opened");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&root.path().join("state")), 0o700);
    }

    #[test]
    fn a_link_planted_at_the_log_is_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let victim = root.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, root.path().join("gpudeck.log")).unwrap();
        assert!(
            open_log_file(root.path()).is_none(),
            "logging is off instead"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
}
