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
