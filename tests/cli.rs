//! The command line: exit codes and messages for what users get wrong, and the plain-text report.

mod support;

use std::fs;

use support::{stderr, stdout, Dirs};

#[test]
fn a_bad_explicit_config_is_an_error_with_its_location() {
    let dirs = Dirs::new();
    let file = dirs.root.path().join("mine.toml");
    fs::write(&file, "[general]\nrefresh_ms = 500\nrefersh_ms = 1\n").expect("write");
    let out = dirs
        .gpudeck("")
        .arg("--config")
        .arg(&file)
        .args(["gpus", "--demo"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("mine.toml:3:1"), "{err}");
    assert!(err.contains("refersh_ms"), "{err}");
}

#[test]
fn a_missing_explicit_config_is_an_error() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("")
        .args(["--config", "/nonexistent/gpudeck.toml", "gpus", "--demo"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent/gpudeck.toml"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_implicit_config_warns_and_carries_on() {
    let dirs = Dirs::new();
    fs::create_dir_all(dirs.config()).expect("mkdir");
    fs::write(
        dirs.config().join("config.toml"),
        "[gpu]\ngraph = \"sideways\"\n",
    )
    .expect("write");
    let out = dirs
        .gpudeck("gpus=2")
        .args(["gpus", "--demo"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("2 GPUs"));
    let log =
        fs::read_to_string(dirs.state().join("gpudeck.log")).expect("a log file in the state dir");
    assert!(log.contains("config.toml:2:9"), "{log}");
}

#[test]
fn an_unknown_theme_is_an_error_naming_the_choices() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("")
        .args(["--theme", "neon", "gpus", "--demo"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("neon") && err.contains("high-contrast"),
        "{err}"
    );
}

#[test]
fn a_bad_simulation_setting_is_explained() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("gpus=lots")
        .args(["gpus", "--demo"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("gpus"), "{}", stderr(&out));
}

#[test]
fn the_dashboard_needs_a_terminal_and_says_what_to_use_instead() {
    let dirs = Dirs::new();
    let out = dirs.gpudeck("").arg("--demo").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("gpudeck gpus"), "{}", stderr(&out));
}

#[test]
fn the_text_report_lists_gpus_processes_and_topology() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("gpus=4,frozen=100,downgrade=2")
        .args(["gpus", "--demo"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("DEMO: simulated GPUs"), "{text}");
    assert!(
        text.contains("81559MiB"),
        "memory in MiB like nvidia-smi: {text}"
    );
    assert!(text.contains("GPU 2: PCIe link"), "{text}");
    assert!(
        text.contains("Processes:") && text.contains("python"),
        "{text}"
    );
    assert!(
        text.contains("Topology:") && text.contains("GPU3"),
        "{text}"
    );
}

#[test]
fn the_text_report_notes_memory_repairs_that_need_attention() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("gpus=3,frozen=10,ecc=0:0:1,remap=1:failed")
        .args(["gpus", "--demo"])
        .output()
        .expect("runs");
    let text = stdout(&out);
    assert!(
        text.contains("GPU 0: ECC errors since boot: 0 corrected, 1 uncorrected; a row remap waits for a GPU reset"),
        "{text}"
    );
    assert!(text.contains("GPU 1: row remapping failed"), "{text}");
    assert!(!text.contains("GPU 2:"), "{text}");
}

/// `--read-only` and `read_only = true` hold on the command line: every command that would
/// change the machine is refused with exit code 2 before it touches anything.
mod read_only {
    use std::os::unix::net::UnixListener;
    use std::path::Path;

    use super::support::runs::{gpudeck, record, start, wait_state};
    use super::support::{stderr, Dirs};

    /// How read-only mode is turned on, and the words that say how to lift it.
    #[derive(Clone, Copy)]
    enum Mode {
        Flag,
        Config,
    }

    fn run_dirs(dirs: &Dirs) -> usize {
        std::fs::read_dir(dirs.root.path().join("data").join("runs"))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    fn refused(dirs: &Dirs, mode: Mode, args: &[&str]) {
        let mut all = Vec::new();
        if matches!(mode, Mode::Flag) {
            all.push("--read-only");
        }
        all.extend_from_slice(args);
        let out = gpudeck(dirs, &all).output().expect("gpudeck runs");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let flat = err.replace('\n', " ");
        assert!(flat.contains("read-only mode allows nothing"), "{err}");
        let lift = match mode {
            Mode::Flag => "run it without --read-only".to_string(),
            Mode::Config => format!(
                "set `read_only = false` under [general] in {}",
                dirs.config().join("config.toml").display()
            ),
        };
        assert!(flat.contains(&lift), "{args:?}: {err}");
        assert!(err.lines().all(|l| l.chars().count() <= 80), "{err}");
    }

    /// Nothing connected to the engine's socket: no pull, no container.
    fn untouched(engine: &UnixListener, what: &str) {
        match engine.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("{what} reached the Docker Engine: {other:?}"),
        }
    }

    fn check(mode: Mode) {
        let dirs = Dirs::new();
        let (live, _guard) = start(&dirs, &["--name", "live", "--", "sleep", "60"]);
        wait_state(&dirs, &live, "running");
        if matches!(mode, Mode::Config) {
            std::fs::create_dir_all(dirs.config()).unwrap();
            std::fs::write(
                dirs.config().join("config.toml"),
                "[general]\nread_only = true\n",
            )
            .unwrap();
        }
        let socket = dirs.root.path().join("engine.sock");
        let engine = UnixListener::bind(&socket).unwrap();
        engine.set_nonblocking(true).unwrap();
        let host = format!("unix://{}", socket.display());

        refused(&dirs, mode, &["run", "--gpus", "count:1", "--", "true"]);
        refused(&dirs, mode, &["rerun", "live"]);
        assert_eq!(run_dirs(&dirs), 1, "no run was created");
        refused(&dirs, mode, &["stop", "live", "--grace", "0"]);
        assert!(!run_dir_has_stop(&dirs, &live), "no stop was asked for");
        assert_eq!(record(&dirs, &live)["state"], "running");

        refused(&dirs, mode, &["--docker-host", &host, "pull", "busybox:1"]);
        untouched(&engine, "pull");
        refused(&dirs, mode, &["--docker-host", &host, "shell", "busybox"]);
        refused(
            &dirs,
            mode,
            &["--docker-host", &host, "shell", "--attach", "x"],
        );
        untouched(&engine, "shell");

        // Reading is still allowed.
        let logs = gpudeck(&dirs, &["--read-only", "runs"]).output().unwrap();
        assert!(logs.status.success(), "{}", stderr(&logs));
    }

    fn run_dir_has_stop(dirs: &Dirs, id: &str) -> bool {
        let dir = dirs.root.path().join("data").join("runs").join(id);
        Path::new(&dir).join("stop-requested").exists()
    }

    #[test]
    fn the_flag_refuses_run_rerun_stop_pull_and_shell() {
        check(Mode::Flag);
    }

    #[test]
    fn the_config_key_refuses_run_rerun_stop_pull_and_shell() {
        check(Mode::Config);
    }
}
