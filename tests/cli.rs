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
    if !running_as_root() {
        eprintln!("skipped: switching to a user without a home needs root");
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
