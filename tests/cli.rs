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
            assert_ne!(code, Some(2), "{args:?} must carry on: {err}");
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
