//! The command line: exit codes and messages for what users get wrong, and the plain-text report.

use crate::support;

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
        text.contains("/79.6G"),
        "memory in the dashboard's words (used/total GiB): {text}"
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
fn the_text_report_folds_to_the_terminal_width() {
    let dirs = Dirs::new();
    let sim = "gpus=8,frozen=100,downgrade=2,throttle=1:thermal,ecc=3:5:1";
    for columns in [80usize, 100, 160] {
        let out = dirs
            .gpudeck(sim)
            .args(["gpus", "--demo"])
            .env("COLUMNS", columns.to_string())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        let text = stdout(&out);
        for line in text.lines() {
            assert!(
                line.chars().count() <= columns,
                "COLUMNS={columns}: a {}-column line: {line:?}\n{text}",
                line.chars().count()
            );
        }
        let header = text
            .lines()
            .find(|l| l.starts_with("GPU NAME"))
            .expect("header");
        let row = text
            .lines()
            .find(|l| l.starts_with("0   "))
            .expect("GPU 0 row");
        if columns >= 120 {
            assert!(
                header.contains("POWER") && header.contains("FAN"),
                "one line: {text}"
            );
            assert!(
                row.contains("P0") || row.contains("P2") || row.contains("P8"),
                "{text}"
            );
        } else {
            assert!(
                header.contains("POWER") && !header.contains("FAN"),
                "folded: {text}"
            );
            assert!(text
                .lines()
                .any(|l| l.trim_start().starts_with("SM") && l.contains("FAN")));
        }
        assert!(
            text.contains("Topology:") && text.contains("NV18"),
            "{text}"
        );
    }
}

#[test]
fn the_text_report_notes_memory_repairs_that_need_attention() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("gpus=3,frozen=10,ecc=0:0:1,remap=1:failed")
        .args(["gpus", "--demo"])
        // Wide enough for a GPU's notes on one line (at 80 columns each note gets its own).
        .env("COLUMNS", "120")
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

/// Every command that prints, with its reader gone before the first byte (`| head -c 0`):
/// no panic, no "Broken pipe", exit code 0.
mod closed_pipes {
    use super::support::pipes::{assert_quiet_end, with_reader_gone};
    use super::support::run_fixture::{FakeRun, RunFacts};
    use super::support::runs::{gpudeck, output, wait_until};
    use super::support::Dirs;

    /// A finished run with a log long enough to need several writes.
    fn finished_run(dirs: &Dirs) -> String {
        let run = FakeRun::write(
            &dirs.root.path().join("data"),
            &RunFacts {
                id: "20260101-000000-train-ab12",
                state: "succeeded",
                gpus: &[0],
                ranks: 1,
                started_ms: 1_767_225_600_000,
                ended_ms: Some(1_767_225_660_000),
                exit_code: Some(0),
                supervised: false,
            },
        );
        run.metrics(&[(1_767_225_601_000, 0, 90, 40, 300.0)]);
        run.log(0, "stdout", &"step 1 loss 0.5\n".repeat(20_000));
        run.id
    }

    #[test]
    fn every_printing_command_ends_quietly() {
        let dirs = Dirs::new();
        let id = finished_run(&dirs);
        let commands: &[&[&str]] = &[
            &["gpus"],
            &["gpus", "--json"],
            &["doctor"],
            &["doctor", "--json"],
            &["compat"],
            &["compat", "--json"],
            &["runs"],
            &["runs", "--json"],
            &["logs", &id],
            &["export", &id, "--format", "csv"],
            &["export", &id, "--format", "json"],
            &["run", "--on", "slurm", "--dry-run", "--", "true"],
            &["--help"],
            &["run", "--help"],
        ];
        for args in commands {
            let out = with_reader_gone(gpudeck(&dirs, args));
            assert_quiet_end(&args.join(" "), &out);
        }
    }

    #[test]
    fn following_a_quiet_run_ends_when_the_reader_goes() {
        let dirs = Dirs::new();
        // Running (this test is its supervisor) and silent: nothing is ever written.
        let run = FakeRun::write(
            &dirs.root.path().join("data"),
            &RunFacts {
                id: "20260101-000000-quiet-cd34",
                state: "running",
                gpus: &[0],
                ranks: 1,
                started_ms: 1_767_225_600_000,
                ended_ms: None,
                exit_code: None,
                supervised: true,
            },
        );
        let out = with_reader_gone(gpudeck(&dirs, &["logs", &run.id, "-f"]));
        assert_quiet_end("logs -f", &out);
    }

    #[test]
    fn a_started_run_prints_its_id_to_nobody_and_still_runs() {
        let dirs = Dirs::new();
        let out = with_reader_gone(gpudeck(&dirs, &["run", "--", "echo", "hello"]));
        assert_quiet_end("run", &out);
        // The run was started before its id was printed: it runs to its end all the same.
        wait_until("the run to succeed", || {
            let listed = output(&dirs, &["runs", "--json"]);
            String::from_utf8_lossy(&listed.stdout).contains("\"succeeded\"")
        });
    }
}

/// The dashboard under `script` with stdin from /dev/null: a pseudo-terminal nobody answers.
mod silent_terminal {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use super::support::Dirs;

    #[test]
    fn a_terminal_that_never_answers_is_given_back_and_told_why() {
        let dirs = Dirs::new();
        // `stty -a` after gpudeck shows the mode gpudeck left the pseudo-terminal in.
        let inner = format!("{} --demo; stty -a", env!("CARGO_BIN_EXE_gpudeck"));
        let mut cmd = Command::new("script");
        cmd.args(["-qec", &inner, "/dev/null"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("TERM", "xterm-256color");
        dirs.isolate(&mut cmd, "gpus=2");
        let started = Instant::now();
        let mut child = cmd.spawn().expect("script runs");
        let deadline = started + Duration::from_secs(20);
        while child.try_wait().expect("try_wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let out = child.wait_with_output().expect("output");
                panic!(
                    "gpudeck still runs after 20 s:\n{}",
                    String::from_utf8_lossy(&out.stdout)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("output");
        let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
        let entered = text
            .rfind("\x1b[?1049h")
            .expect("the alternate screen was entered");
        let after = &text[entered..];
        let left = after
            .find("\x1b[?1049l")
            .unwrap_or_else(|| panic!("the alternate screen is never left: {after:?}"));
        let shown = after
            .find("\x1b[?25h")
            .unwrap_or_else(|| panic!("the cursor is never shown again: {after:?}"));
        let said = after
            .find("did not answer the start-up query")
            .unwrap_or_else(|| panic!("no reason given: {after:?}"));
        assert!(
            left < said && shown < said,
            "restored before the message: {after:?}"
        );
        assert!(
            after.contains("for scripts use `gpudeck gpus`"),
            "{after:?}"
        );
        let message = &after[after.find("gpudeck: the terminal").expect("one message")..];
        let end = message.find("`gpudeck gpus`").expect("the message's end");
        for line in message[..end].lines() {
            assert!(
                line.chars().count() <= 80,
                "longer than 80 columns: {line:?}"
            );
        }
        let modes: Vec<&str> = after.split_whitespace().collect();
        assert!(
            modes.contains(&"icanon") && modes.contains(&"echo"),
            "the terminal is left in raw mode: {after:?}"
        );
    }
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

        refused(&dirs, mode, &["notebook", "--host", "--gpus", "none"]);
        refused(
            &dirs,
            mode,
            &["--docker-host", &host, "notebook", "busybox", "--gpus", "0"],
        );
        untouched(&engine, "notebook");
        refused(&dirs, mode, &["tensorboard", ".", "--host"]);
        refused(&dirs, mode, &["triton", ".", "--host"]);
        assert_eq!(run_dirs(&dirs), 1, "no service was created");
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

#[test]
fn the_log_and_state_dir_are_private_and_an_old_open_log_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dirs = Dirs::new();
    let run = || {
        let out = dirs
            .gpudeck("gpus=1")
            .args(["gpus", "--demo"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    run();
    assert_eq!(mode(&dirs.state()), 0o700);
    let log = dirs.state().join("gpudeck.log");
    assert_eq!(mode(&log), 0o600);
    fs::set_permissions(&log, fs::Permissions::from_mode(0o644)).unwrap();
    run();
    assert_eq!(mode(&log), 0o600, "a log left 0644 by an older gpudeck");
}

/// gpudeck run as `uid`, a user with no passwd entry and so no home directory (HOME unset),
/// with its temp dir at `temp`; `None` unless the test runs as root (only root can switch).
fn homeless(uid: u32, temp: &std::path::Path) -> Option<std::process::Output> {
    use std::os::unix::process::CommandExt;
    let why = "switching to a user without a home needs root";
    let test = support::real::current_test();
    if !support::real::have(support::real::Part::Root, &test, running_as_root(), why) {
        return None;
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_gpudeck"));
    cmd.args(["gpus", "--demo"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TMPDIR", temp)
        .env("GPUDECK_SIM", "gpus=1")
        .current_dir("/")
        .uid(uid)
        .gid(uid);
    Some(cmd.output().expect("runs"))
}

fn running_as_root() -> bool {
    let probe = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::MetadataExt::uid(&fs::metadata(probe.path()).expect("stat")) == 0
}

/// A temp dir every user may create entries in, as /tmp is.
fn shared_temp() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let temp = tempfile::tempdir().expect("tempdir");
    fs::set_permissions(temp.path(), fs::Permissions::from_mode(0o1777)).expect("chmod");
    temp
}

#[test]
fn without_a_home_a_fallback_planted_by_another_user_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let uid = 48_213;
    let temp = shared_temp();
    // Another user (root here) pre-created the victim's fallback, open to all.
    let planted = temp.path().join(format!("gpudeck-{uid}"));
    fs::create_dir_all(planted.join("data/runs")).expect("mkdir");
    fs::set_permissions(&planted, fs::Permissions::from_mode(0o777)).expect("chmod");
    let Some(out) = homeless(uid, temp.path()) else {
        return;
    };
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    for name in [
        "GPUDECK_CONFIG_DIR",
        "GPUDECK_DATA_DIR",
        "GPUDECK_STATE_DIR",
    ] {
        assert!(err.contains(name), "{err}");
    }
    assert!(err.contains(&planted.display().to_string()), "{err}");
    assert!(err.contains("it belongs to uid 0, not to you"), "{err}");
    assert!(!planted.join("state").exists(), "nothing was written there");
}

#[test]
fn without_a_home_a_private_fallback_is_made_and_used() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let uid = 48_214;
    let temp = shared_temp();
    let Some(out) = homeless(uid, temp.path()) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let root = temp.path().join(format!("gpudeck-{uid}"));
    let meta = fs::symlink_metadata(&root).expect("the fallback was made");
    assert_eq!(
        (meta.uid(), meta.permissions().mode() & 0o777),
        (uid, 0o700)
    );
    assert!(root.join("state/gpudeck.log").is_file());
}

#[test]
fn show_secrets_is_a_dashboard_flag_and_not_one_of_every_command() {
    let dirs = Dirs::new();
    let dashboard = dirs
        .gpudeck("gpus=1")
        .args(["--demo", "--show-secrets"])
        .output()
        .expect("runs");
    // Accepted; without a terminal the dashboard then says what to use instead.
    assert!(
        stderr(&dashboard).contains("the dashboard needs a terminal"),
        "{}",
        stderr(&dashboard)
    );
    let gpus = dirs
        .gpudeck("gpus=1")
        .args(["gpus", "--demo", "--show-secrets"])
        .output()
        .expect("runs");
    assert_eq!(gpus.status.code(), Some(2), "{}", stderr(&gpus));
}

/// A mistake in the user's config or theme is said on stderr by every command, not only by
/// the dashboard, and the command carries on with the built-in values.
mod config_mistakes {
    use std::fs;
    use std::path::PathBuf;

    use super::support::{stderr, Dirs};

    /// A config dir with `text` as its config.toml; the file's path as messages show it.
    fn with_config(text: &str) -> (Dirs, PathBuf) {
        let dirs = Dirs::new();
        fs::create_dir_all(dirs.config()).expect("mkdir");
        let file = dirs.config().join("config.toml");
        fs::write(&file, text).expect("write");
        (dirs, file)
    }

    /// stderr of `gpudeck ARGS`, the wrapping undone, after checking that each line of the
    /// messages about the files in the test's directory fits 80 columns.
    fn told(dirs: &Dirs, args: &[&str]) -> (Option<i32>, String) {
        let out = dirs
            .gpudeck("gpus=1,frozen=5")
            .args(["--docker-host", "unix:///nonexistent/gpudeck-test.sock"])
            .args(args)
            .output()
            .expect("runs");
        let err = stderr(&out);
        let ours = format!("gpudeck: {}", dirs.root.path().display());
        let mut in_ours = false;
        for line in err.lines() {
            if !line.starts_with("  ") {
                in_ours = line.starts_with(&ours);
            }
            let width = line.chars().count();
            assert!(!in_ours || width <= 80, "{args:?}: {width} columns: {line}");
        }
        (out.status.code(), err.replace("\n  ", " "))
    }

    const WRONG_TYPE: &str = "# mine\n[general]\nrefresh_ms = \"fast\"\n";

    #[test]
    fn every_command_says_a_wrong_value_with_its_location() {
        let (dirs, file) = with_config(WRONG_TYPE);
        let at = format!("gpudeck: {}:3:14: general.refresh_ms: ", file.display());
        let commands: [&[&str]; 4] = [
            &["gpus", "--demo"],
            &["runs"],
            &["doctor", "--demo"],
            &["compat", "--demo", "127.0.0.1:1/gpudeck-test-none:1"],
        ];
        for args in commands {
            let (code, err) = told(&dirs, args);
            if args[0] == "doctor" {
                // doctor's own exit code 2 is a FAIL (the unreachable engine): it carried on if
                // it diagnosed.
                let report = dirs
                    .gpudeck("gpus=1,frozen=5")
                    .args(["--docker-host", "unix:///nonexistent/gpudeck-test.sock"])
                    .args(args)
                    .output()
                    .expect("runs");
                let text = String::from_utf8_lossy(&report.stdout);
                assert!(
                    text.contains("FAIL") && text.contains("PASS"),
                    "{args:?}: {text}"
                );
            } else {
                assert_ne!(code, Some(2), "{args:?} must carry on: {err}");
            }
            assert!(err.contains(&at), "{args:?}: {err}");
            assert!(
                err.contains(
                    "expected a number of milliseconds (like 1000), found \"fast\" — using the \
                     built-in defaults"
                ),
                "{args:?}: {err}"
            );
            assert!(!err.contains("u64"), "{args:?}: {err}");
        }
    }

    #[test]
    fn an_unknown_key_is_a_mistake_said_with_the_likely_fix() {
        let (dirs, file) = with_config("[general]\nrefersh_ms = 500\n");
        let (code, err) = told(&dirs, &["runs", "--json"]);
        assert_eq!(code, Some(0), "{err}");
        assert!(
            err.contains(&format!(
                "{}:2:1: unknown key `refersh_ms` in [general]; did you mean `refresh_ms`?",
                file.display()
            )),
            "{err}"
        );
        assert!(err.contains("using the built-in defaults"), "{err}");
    }

    #[test]
    fn a_bad_theme_file_is_said_and_the_built_in_theme_used() {
        let (dirs, _) = with_config("[general]\ntheme = \"mine\"\n");
        let themes = dirs.config().join("themes");
        fs::create_dir_all(&themes).expect("mkdir");
        let theme = themes.join("mine.toml");
        fs::write(&theme, "accent = \"red\"\nborder = true\n").expect("write");
        let (code, err) = told(&dirs, &["gpus", "--demo"]);
        assert_eq!(code, Some(0), "{err}");
        assert!(
            err.contains(&format!(
                "{}:2:10: border: expected a colour: a name (like \"red\"), \"#rrggbb\" or a \
                 palette index 0-255, found true — using the dark theme",
                theme.display()
            )),
            "{err}"
        );
    }

    #[test]
    fn a_bad_theme_named_by_flag_or_by_an_explicit_config_is_fatal() {
        let (dirs, _) = with_config("");
        let themes = dirs.config().join("themes");
        fs::create_dir_all(&themes).expect("mkdir");
        let theme = themes.join("mine.toml");
        fs::write(&theme, "\nborder = \"bleu\"\n").expect("write");
        let (code, err) = told(&dirs, &["--theme", "mine", "gpus", "--demo"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("{}:2:10: ", theme.display())),
            "{err}"
        );

        let explicit = dirs.root.path().join("explicit.toml");
        fs::write(&explicit, "[general]\ntheme = \"mine\"\n").expect("write");
        let config = explicit.to_str().expect("utf-8 path");
        let (code, err) = told(&dirs, &["--config", config, "gpus", "--demo"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("{}:2:10: ", theme.display())),
            "{err}"
        );
    }

    #[test]
    fn a_bad_explicit_config_is_fatal_and_worded_for_the_user() {
        let (dirs, _) = with_config("");
        let explicit = dirs.root.path().join("explicit.toml");
        fs::write(&explicit, "[gpu]\ngraph = \"sideways\"\n").expect("write");
        let config = explicit.to_str().expect("utf-8 path");
        let (code, err) = told(&dirs, &["--config", config, "runs"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "{}:2:9: gpu.graph: expected \"utilization\", \"memory\" or \"power\", found \
                 \"sideways\"",
                explicit.display()
            )),
            "{err}"
        );
    }
}

/// `gpudeck ARGS` with isolated dirs: its exit code, stdout and stderr.
fn said(dirs: &Dirs, args: &[&str]) -> (Option<i32>, String, String) {
    let out = dirs.gpudeck("").args(args).output().expect("runs");
    (out.status.code(), stdout(&out), stderr(&out))
}

#[test]
fn each_subcommand_help_lists_only_the_flags_that_apply_to_it() {
    let dirs = Dirs::new();
    let flags = |args: &[&str]| {
        let (code, out, err) = said(&dirs, args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        out
    };
    let top = flags(&["--help"]);
    for flag in [
        "--demo",
        "--theme",
        "--refresh",
        "--docker-host",
        "--show-secrets",
    ] {
        assert!(top.contains(flag), "the dashboard takes {flag}: {top}");
    }
    let dashboard_only = ["--theme", "--show-secrets"];
    for sub in [
        "gpus",
        "containers",
        "images",
        "compat",
        "doctor",
        "pull",
        "shell",
        "run",
        "runs",
        "logs",
        "stop",
        "export",
        "rerun",
        "serve",
        "completions",
        "man",
    ] {
        let help = flags(&[sub, "--help"]);
        assert!(help.contains("--config"), "{sub}: {help}");
        for flag in dashboard_only {
            assert!(
                !help.contains(flag) || sub == "runs" || sub == "export",
                "{sub}: {help}"
            );
        }
        assert_eq!(help.contains("--refresh"), sub == "serve", "{sub}: {help}");
    }
    let gpus = flags(&["gpus", "--help"]);
    assert!(
        gpus.contains("--demo") && gpus.contains("--nvml-lib"),
        "{gpus}"
    );
    assert!(
        !gpus.contains("--docker-host") && !gpus.contains("--read-only"),
        "{gpus}"
    );
    let containers = flags(&["containers", "--help"]);
    assert!(containers.contains("--docker-host"), "{containers}");
    assert!(!containers.contains("--demo"), "{containers}");
    let logs = flags(&["logs", "--help"]);
    for flag in ["--demo", "--nvml-lib", "--docker-host", "--read-only"] {
        assert!(!logs.contains(flag), "logs: {logs}");
    }
    let run = flags(&["run", "--help"]);
    for flag in [
        "--demo",
        "--nvml-lib",
        "--docker-host",
        "--read-only",
        "--gpus",
    ] {
        assert!(run.contains(flag), "run takes {flag}: {run}");
    }
    // Given after the subcommand or before it, a flag means the same.
    let (code, _, err) = said(&dirs, &["--demo", "gpus"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = said(&dirs, &["gpus", "--demo"]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn bash_completions_parse_and_name_the_subcommands() {
    let dirs = Dirs::new();
    let (code, script, err) = said(&dirs, &["completions", "bash"]);
    assert_eq!(code, Some(0), "{err}");
    for sub in [
        "gpus",
        "doctor",
        "run",
        "rerun",
        "serve",
        "completions",
        "man",
    ] {
        assert!(script.contains(sub), "{sub} missing from the completions");
    }
    assert!(script.contains("--nvml-lib"), "flags are completed too");
    let file = dirs.root.path().join("gpudeck.bash");
    fs::write(&file, &script).unwrap();
    let checked = std::process::Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .expect("bash runs");
    assert!(checked.status.success(), "{}", stderr(&checked));
    for shell in ["zsh", "fish"] {
        let (code, script, err) = said(&dirs, &["completions", shell]);
        assert_eq!(code, Some(0), "{err}");
        assert!(
            script.contains("gpudeck") && script.contains("doctor"),
            "{shell}"
        );
    }
    let (code, _, err) = said(&dirs, &["completions", "tcsh"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("bash") && err.contains("fish"), "{err}");
}

#[test]
fn the_man_page_is_roff_with_the_subcommands() {
    let dirs = Dirs::new();
    let (code, page, err) = said(&dirs, &["man"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        page.lines().any(|l| l.starts_with(".TH gpudeck 1")),
        "{page}"
    );
    assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
    assert!(page.contains("doctor") && page.contains("rerun"), "{page}");
}

#[test]
fn a_refresh_below_the_minimum_says_it_was_raised() {
    let dirs = Dirs::new();
    let (code, _, err) = said(&dirs, &["--demo", "--refresh", "1", "gpus"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(
            "gpudeck: --refresh 1 is below the minimum of 100 ms; it was raised to 100 ms."
        ),
        "{err}"
    );
    let (_, _, err) = said(&dirs, &["--demo", "--refresh", "100", "gpus"]);
    assert!(!err.contains("--refresh"), "{err}");
}

/// Text output wraps at the terminal's width (`COLUMNS` here, as a shell exports it), not at a
/// fixed 100 columns.
mod text_width {
    use super::support::run_fixture::{FakeRun, RunFacts};
    use super::support::{stderr, stdout, Dirs};

    const DEAD_DOCKER: &str = "unix:///nonexistent/gpudeck-w7-test.sock";

    /// Each line of `text` fits `width`. The one exception is a line that is a single word after
    /// its indent (a URL or a path longer than the line): words are never split.
    fn assert_fits(what: &str, text: &str, width: usize) {
        assert!(text.lines().count() > 2, "{what}: {text}");
        for line in text.lines() {
            let one_word = line.split_whitespace().count() == 1;
            assert!(
                line.chars().count() <= width || one_word,
                "{what} at {width} columns: {line:?} is {} wide\n{text}",
                line.chars().count()
            );
        }
    }

    fn printed(dirs: &Dirs, sim: &str, width: usize, args: &[&str]) -> String {
        let out = dirs
            .gpudeck(sim)
            .env("COLUMNS", width.to_string())
            .env_remove("CUDA_VISIBLE_DEVICES")
            .args(args)
            .output()
            .expect("gpudeck runs");
        assert!(!out.stdout.is_empty(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    }

    #[test]
    fn doctor_and_compat_fit_80_and_120_columns() {
        let dirs = Dirs::new();
        // An old driver and no Docker: the longest details and fixes either command has.
        let old = "profile=a100-pcie,gpus=2,driver=470.57.02,cuda=11040";
        for width in [80, 120] {
            let doctor = ["--demo", "--docker-host", DEAD_DOCKER, "doctor"];
            let text = printed(&dirs, old, width, &doctor);
            assert_fits("doctor", &text, width);
            assert!(text.contains("fix: "), "{text}");
            let compat = [
                "--demo",
                "--docker-host",
                DEAD_DOCKER,
                "compat",
                "tensorflow/tensorflow:2.17.0-gpu",
                "pytorch/pytorch:2.11.0-cuda13.0-cudnn9-runtime",
            ];
            let text = printed(&dirs, old, width, &compat);
            assert_fits("compat", &text, width);
            assert!(text.contains("2 images: "), "{text}");
        }
        // At 120 columns the lines use the room: the 100-column wrap is gone.
        let wide = printed(
            &dirs,
            old,
            120,
            &["--demo", "--docker-host", DEAD_DOCKER, "doctor"],
        );
        assert!(wide.lines().any(|l| l.chars().count() > 100), "{wide}");
    }

    #[test]
    fn the_runs_table_folds_to_80_columns_and_says_what_it_left_out() {
        let dirs = Dirs::new();
        let data = dirs.root.path().join("data");
        let t0 = 1_800_000_000_000;
        for (i, id) in ["20261125-000000-resnet-0001", "20261125-000100-cpu-0002"]
            .into_iter()
            .enumerate()
        {
            let started = t0 + i as u64 * 60_000;
            FakeRun::write(
                &data,
                &RunFacts {
                    id,
                    state: "succeeded",
                    gpus: if i == 0 { &[0, 1] } else { &[] },
                    ranks: 1,
                    started_ms: started,
                    ended_ms: Some(started + 5_000),
                    exit_code: Some(0),
                    supervised: false,
                },
            );
        }
        let narrow = printed(&dirs, "", 80, &["runs"]);
        // Every row fits, ID, STATE, GPUS and DURATION included; nothing is silently dropped.
        assert_fits("runs", &narrow, 80);
        let header: Vec<&str> = narrow
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        for kept in ["ID", "STATE", "GPUS", "DURATION"] {
            assert!(header.contains(&kept), "{narrow}");
        }
        assert!(!header.contains(&"NAME"), "{narrow}");
        assert!(
            narrow.contains("NAME"),
            "the note names the column: {narrow}"
        );
        assert!(narrow.contains("--json"), "{narrow}");
        let wide = printed(&dirs, "", 120, &["runs"]);
        assert_fits("runs", &wide, 120);
        assert!(
            wide.lines().next().unwrap_or_default().contains("NAME"),
            "{wide}"
        );
        let everything = printed(&dirs, "", 300, &["runs"]);
        assert!(!everything.contains("left out"), "{everything}");
        assert_eq!(everything.lines().count(), 3, "{everything}");
    }

    /// Long errors wrap at the width as every other message does: the runs a mistyped id
    /// could have meant, and a GPU selection that is not one.
    #[test]
    fn long_errors_wrap_to_the_width() {
        let dirs = Dirs::new();
        let data = dirs.root.path().join("data");
        let ids: Vec<String> = (0..8)
            .map(|i| format!("20261125-0{i}0000-resnet50-imagenet-{i:04}"))
            .collect();
        for (i, id) in ids.iter().enumerate() {
            FakeRun::write(
                &data,
                &RunFacts {
                    id,
                    state: "succeeded",
                    gpus: &[0],
                    ranks: 1,
                    started_ms: 1_800_000_000_000 + i as u64 * 60_000,
                    ended_ms: Some(1_800_000_000_000 + i as u64 * 60_000 + 5_000),
                    exit_code: Some(0),
                    supervised: false,
                },
            );
        }
        let told = |args: &[&str]| {
            let out = dirs
                .gpudeck("")
                .env("COLUMNS", "80")
                .args(args)
                .output()
                .expect("gpudeck runs");
            assert!(!out.status.success(), "{args:?}");
            stderr(&out)
        };
        let err = told(&["logs", "no-such-run"]);
        assert!(err.lines().all(|l| l.chars().count() <= 80), "{err}");
        assert!(err.contains("Recent runs"), "{err}");
        let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(&ids[7]), "{err}");

        let gpus = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,x";
        let err = told(&["--demo", "run", "--gpus", gpus, "--", "true"]);
        assert!(err.lines().all(|l| l.chars().count() <= 80), "{err}");
        assert!(err.contains("is not a GPU selection"), "{err}");
    }

    /// A Slurm submission the scheduler refused: its reason is in `gpudeck runs` as in the Runs
    /// tab's detail and the JSON, not only in the TUI.
    #[test]
    fn a_failed_runs_reason_is_in_the_text_as_in_the_json() {
        let dirs = Dirs::new();
        let data = dirs.root.path().join("data");
        let id = "20261128-085030-train-5e1f";
        let run = FakeRun::write(
            &data,
            &RunFacts {
                id,
                state: "failed",
                gpus: &[],
                ranks: 1,
                started_ms: 1_800_000_000_000,
                ended_ms: Some(1_800_000_000_100),
                exit_code: None,
                supervised: false,
            },
        );
        let reason = "sbatch refused the job: sbatch: error: Batch job submission failed: \
                      Invalid partition name specified";
        let path = run.dir.join("run.json");
        let mut record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        record["backend"] = "slurm".into();
        record["error"] = reason.into();
        std::fs::write(&path, record.to_string()).unwrap();

        let text = printed(&dirs, "", 80, &["runs"]);
        assert_fits("runs", &text, 80);
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(&format!("{id} failed: {reason}")), "{text}");
        let json = printed(&dirs, "", 80, &["runs", "--json"]);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(doc["runs"][0]["error"], reason);
        assert_eq!(doc["runs"][0]["state"], "failed");
    }
}

#[test]
fn gpus_without_processes_says_so_in_the_dashboards_words() {
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("gpus=1,unsupported=processes,frozen=10")
        .args(["gpus", "--demo"])
        .output()
        .expect("runs");
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("\nProcesses:\n  no processes\n"), "{text}");
}

#[test]
fn docker_refusals_fit_80_columns_and_name_the_fix() {
    let dirs = Dirs::new();
    let socket = dirs.root.path().join("no-docker.sock");
    for args in [
        vec!["containers"],
        vec!["images"],
        vec!["pull", "busybox:1"],
    ] {
        let out = dirs
            .gpudeck("")
            .args(&args)
            .env("DOCKER_HOST", format!("unix://{}", socket.display()))
            .output()
            .expect("runs");
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(
            err.lines().all(|l| l.chars().count() <= 80),
            "{args:?}: a line over 80 columns:\n{err}"
        );
        let words = err.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("is the Docker daemon running?")
                && words.contains("sudo systemctl start docker"),
            "{args:?}: {err}"
        );
    }
}
