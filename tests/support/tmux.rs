//! A tmux harness for end-to-end tests: gpudeck (the test profile's binary, the one cargo builds
//! for these tests) in a detached session, keys in, screen out.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::Dirs;

/// One gpudeck in tmux. Each session has a tmux server of its own (`-L`), so tests starting
/// sessions at the same time never race to start or share a server; its name is unique in the
/// test process (tests of several files share a test binary, and may pick the same tag).
pub struct Session {
    pub name: String,
    _dirs: Dirs,
}

impl Session {
    /// Starts gpudeck in a detached tmux session of the given size.
    pub fn start(tag: &str, w: u16, h: u16, args: &str) -> Session {
        Self::start_with(tag, w, h, "", args, Dirs::new())
    }

    /// Starts gpudeck with extra `KEY=VALUE` environment (later settings win) in prepared dirs.
    pub fn start_with(tag: &str, w: u16, h: u16, env: &str, args: &str, dirs: Dirs) -> Session {
        let binary = Path::new(env!("CARGO_BIN_EXE_gpudeck"));
        let name = format!("gpudeck-e2e-{tag}-{}", unique_suffix());
        let cmd = format!(
            // A shell stays behind gpudeck, as in real use, so the restored terminal can be inspected.
            "env GPUDECK_CONFIG_DIR={} GPUDECK_STATE_DIR={} GPUDECK_DATA_DIR={} GPUDECK_SIM=gpus=8,seed=42 TERM=xterm-256color {env} {} {args}; echo \"gpudeck exited with $?\"; exec sleep 600",
            dirs.config().display(),
            dirs.state().display(),
            dirs.root.path().join("data").display(),
            binary.display()
        );
        let out = Command::new("tmux")
            .args(["-L", &name, "-f", "/dev/null"])
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                &cmd,
            ])
            .output()
            .expect("tmux starts");
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Session { name, _dirs: dirs }
    }

    /// An interactive bash with job control (so Ctrl-Z and `fg` work as for a user) in which
    /// the test profile's gpudeck is typed and started; the session's name starts with `prefix`.
    pub fn start_in_shell(prefix: &str, (w, h): (u16, u16), args: &str, dirs: Dirs) -> Session {
        let name = format!("{prefix}-gpudeck-{}", unique_suffix());
        let out = Command::new("tmux")
            .args(["-L", &name, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", &name, "-x", &w.to_string()])
            .args(["-y", &h.to_string()])
            .args(["env", "PS1=$ ", "TERM=xterm-256color"])
            .args(["bash", "--norc", "--noprofile", "-i"])
            .output()
            .expect("tmux starts");
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let session = Session { name, _dirs: dirs };
        let line = format!(
            "env GPUDECK_CONFIG_DIR={} GPUDECK_STATE_DIR={} GPUDECK_DATA_DIR={} GPUDECK_SIM=gpus=8,seed=42 {} {args}",
            session._dirs.config().display(),
            session._dirs.state().display(),
            session._dirs.root.path().join("data").display(),
            Path::new(env!("CARGO_BIN_EXE_gpudeck")).display()
        );
        session.wait_for("the shell's prompt", |t| t.contains('$'));
        session.keys(&[&line, "Enter"]);
        session
    }

    /// Runs a tmux command against this session's own server; returns its stdout.
    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.name])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.name])
    }

    pub fn display(&self, format: &str) -> String {
        self.tmux(&["display-message", "-p", "-t", &self.name, format])
            .trim()
            .to_string()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.name.as_str()];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Waits until `check` holds for the screen, failing with the last screen after 15 s.
    pub fn wait_for(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        self.wait_for_secs(what, 15, check)
    }

    /// Waits until `check` holds for the screen, failing with the last screen after `secs`.
    pub fn wait_for_secs(&self, what: &str, secs: u64, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for gpudeck to exit and returns its exit status as the shell behind it printed it.
    pub fn wait_exit(&self) -> String {
        let screen = self.wait_for("gpudeck to exit", |t| t.contains("gpudeck exited with"));
        screen
            .split("gpudeck exited with ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default()
            .to_string()
    }

    /// The PID of gpudeck, the child of the pane's shell.
    pub fn gpudeck_pid(&self) -> String {
        let shell = self.display("#{pane_pid}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
                .unwrap_or_default();
            if let Some(pid) = children.split_whitespace().next() {
                return pid.to_string();
            }
            assert!(Instant::now() < deadline, "gpudeck did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `PID-N`: this process and a count of the sessions it started.
fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

impl Drop for Session {
    fn drop(&mut self) {
        let socket = self.tmux(&["display-message", "-p", "#{socket_path}"]);
        self.tmux(&["kill-server"]);
        // tmux leaves its socket file behind; one server per test would litter the tmp dir.
        let _ = std::fs::remove_file(socket.trim());
    }
}
