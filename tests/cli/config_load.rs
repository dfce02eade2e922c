//! `config::load` against real files in temporary config directories.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use gpudeck::config::{load, Config, ConfigError, Dirs, GraphMetric, ProcessSort, Theme};
use ratatui::style::Color;
use tempfile::TempDir;

struct Setup {
    _root: TempDir,
    dirs: Dirs,
}

impl Setup {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let dirs = Dirs {
            config: root.path().join("config"),
            data: root.path().join("data"),
            state: root.path().join("state"),
        };
        fs::create_dir_all(dirs.themes_dir()).unwrap();
        Self { _root: root, dirs }
    }

    fn write_config(&self, text: &str) -> PathBuf {
        let path = self.dirs.config_file();
        fs::write(&path, text).unwrap();
        path
    }

    fn write_theme(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dirs.themes_dir().join(format!("{name}.toml"));
        fs::write(&path, text).unwrap();
        path
    }

    fn write_other(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dirs.data.join(name);
        fs::create_dir_all(&self.dirs.data).unwrap();
        fs::write(&path, text).unwrap();
        path
    }
}

fn dark() -> Theme {
    Theme::builtin("dark").unwrap()
}

#[test]
fn no_files_gives_the_defaults() {
    let setup = Setup::new();
    let loaded = load(&setup.dirs, None, None).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert_eq!(loaded.theme, dark());
    assert_eq!(loaded.theme_name, "dark");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn a_partial_file_overlays_the_defaults() {
    let setup = Setup::new();
    setup.write_config("[general]\nrefresh_ms = 500\n\n[processes]\nsort = \"pid\"\n");
    let loaded = load(&setup.dirs, None, None).unwrap();
    let mut expected = Config::default();
    expected.general.refresh_ms = 500;
    expected.processes.sort = ProcessSort::Pid;
    assert_eq!(loaded.config, expected);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn every_key_can_be_set() {
    let setup = Setup::new();
    setup.write_config(
        "general = { theme = \"light\", refresh_ms = 250, history_secs = 60, mouse = false, read_only = true }\n\
         gpu.graph = \"power\"\ngpu.compact_threshold = 4\n\
         [processes]\nsort = \"command\"\nsort_descending = false\n",
    );
    let loaded = load(&setup.dirs, None, None).unwrap();
    let general = &loaded.config.general;
    assert_eq!(general.theme, "light");
    assert_eq!((general.refresh_ms, general.history_secs), (250, 60));
    assert!(!general.mouse && general.read_only);
    assert_eq!(loaded.config.gpu.graph, GraphMetric::Power);
    assert_eq!(loaded.config.gpu.compact_threshold, 4);
    assert_eq!(loaded.config.processes.sort, ProcessSort::Command);
    assert!(!loaded.config.processes.sort_descending);
    assert_eq!(loaded.theme, Theme::builtin("light").unwrap());
    assert_eq!(loaded.theme_name, "light");
}

/// The warning for a broken config file at the default location, which must be ignored whole.
fn warning_for(text: &str) -> String {
    let setup = Setup::new();
    setup.write_config(text);
    let loaded = load(&setup.dirs, None, None).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let path = setup.dirs.config_file().display().to_string();
    loaded.warnings[0].replace(&path, "CONFIG")
}

#[test]
fn unknown_field_warns_with_line_and_column() {
    let warning = warning_for("[general]\ntheme = \"light\"\n  refersh_ms = 500\n");
    assert_eq!(
        warning,
        "CONFIG:3:3: unknown key `refersh_ms` in [general]; did you mean `refresh_ms`? The keys \
         there are `theme`, `refresh_ms`, `history_secs`, `mouse`, `read_only`, `secret_names` — \
         using the built-in defaults"
    );
}

#[test]
fn unknown_section_warns() {
    let warning = warning_for("[gpus]\ngraph = \"power\"\n");
    assert_eq!(
        warning,
        "CONFIG:1:2: unknown key `gpus` at the top level; did you mean `gpu`? The keys there are \
         `general`, `gpu`, `processes`, `shell`, `metrics`, `runs`, `slurm`, `notebook` — using \
         the built-in defaults"
    );
}

#[test]
fn wrong_type_warns() {
    let warning = warning_for("[general]\nrefresh_ms = \"fast\"\n");
    assert_eq!(
        warning,
        "CONFIG:2:14: general.refresh_ms: expected a number of milliseconds (like 1000), found \
         \"fast\" — using the built-in defaults"
    );
}

#[test]
fn unknown_enum_value_warns() {
    let warning = warning_for("[processes]\nsort = \"vram\"\n");
    assert_eq!(
        warning,
        "CONFIG:2:8: processes.sort: expected \"memory\", \"pid\", \"user\", \"gpu\" or \
         \"command\", found \"vram\" — using the built-in defaults"
    );
}

#[test]
fn mistakes_are_worded_for_the_person_who_wrote_the_file() {
    let cases = [
        (
            "[general]\nrefresh_ms = -5\n",
            "CONFIG:2:14: general.refresh_ms: expected a number of milliseconds (like 1000), \
             found -5 (out of range)",
        ),
        (
            "general = { history_secs = 1.5 }\n",
            "CONFIG:1:28: general.history_secs: expected a number of seconds (like 600), found 1.5",
        ),
        (
            "[shell]\ncap_drop = [\"NET_RAW\",\n  7]\n",
            "CONFIG:3:3: shell.cap_drop: expected a list of capability names (like [\"NET_RAW\", \
             \"MKNOD\"]), found 7 in the list",
        ),
        (
            "[metrics]\nlisten = \"localhost\"\n",
            "CONFIG:2:10: metrics.listen: expected an address and port in quotes (like \
             \"127.0.0.1:9400\"), found \"localhost\"",
        ),
        (
            "[general]\ntheme = dark\n",
            "CONFIG:2:9: general.theme: expected a theme name in quotes (like \"dark\"), found dark",
        ),
        (
            "[gpu]\ncompact_threshold = 4\ncompact_threshold = 5\n",
            "CONFIG:3:1: `gpu.compact_threshold` is set twice; keep one of them",
        ),
        (
            "gpu = 3\n",
            "CONFIG:1:7: gpu: expected a table of settings (like [gpu]), found 3",
        ),
    ];
    for (text, expected) in cases {
        let warning = warning_for(text);
        let expected = format!("{expected} — using the built-in defaults");
        assert_eq!(warning, expected, "{text:?}");
    }
}

#[test]
fn syntax_error_warns() {
    let warning = warning_for("[general]\nmouse = yes\n");
    assert!(warning.starts_with("CONFIG:2:9: "), "{warning}");
    assert!(
        warning.ends_with(" — using the built-in defaults"),
        "{warning}"
    );
}

#[test]
fn unreadable_implicit_file_warns() {
    let setup = Setup::new();
    fs::create_dir(setup.dirs.config_file()).unwrap();
    let loaded = load(&setup.dirs, None, None).unwrap();
    assert_eq!(loaded.config, Config::default());
    let path = setup.dirs.config_file().display().to_string();
    assert_eq!(
        loaded.warnings,
        [format!(
            "cannot read {path}: Is a directory (os error 21) — using the built-in defaults"
        )]
    );
}

#[test]
fn explicit_file_replaces_the_implicit_one() {
    let setup = Setup::new();
    setup.write_config("[general]\nrefresh_ms = 500\n");
    let explicit = setup.write_other("other.toml", "[gpu]\ncompact_threshold = 2\n");
    let loaded = load(&setup.dirs, Some(&explicit), None).unwrap();
    assert_eq!(loaded.config.general.refresh_ms, 1000);
    assert_eq!(loaded.config.gpu.compact_threshold, 2);
}

#[test]
fn explicit_bad_file_is_an_error_with_its_location() {
    let setup = Setup::new();
    let explicit = setup.write_other("bad.toml", "# mine\n[gpu]\ngraph = 3\n");
    let error = load(&setup.dirs, Some(&explicit), None).unwrap_err();
    assert!(
        matches!(
            &error,
            ConfigError::Invalid {
                position: Some((3, 9)),
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{}:3:9: gpu.graph: expected \"utilization\", \"memory\" or \"power\", found 3",
            explicit.display()
        )
    );
}

#[test]
fn explicit_missing_file_is_an_error() {
    let setup = Setup::new();
    let missing = setup.dirs.data.join("nope.toml");
    let error = load(&setup.dirs, Some(&missing), None).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "cannot read {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
}

#[test]
fn refresh_below_the_minimum_is_clamped_with_a_warning() {
    let setup = Setup::new();
    setup.write_config("[general]\nrefresh_ms = 20\n");
    let loaded = load(&setup.dirs, None, None).unwrap();
    assert_eq!(loaded.config.general.refresh_ms, 100);
    assert_eq!(
        loaded.warnings,
        ["general.refresh_ms = 20 is below the minimum of 100 ms; using 100 ms"]
    );
}

#[test]
fn user_theme_is_layered_over_dark() {
    let setup = Setup::new();
    setup.write_theme("mine", "accent = \"#ff0000\"\nok = 34\n");
    setup.write_config("[general]\ntheme = \"mine\"\n");
    let loaded = load(&setup.dirs, None, None).unwrap();
    let expected = Theme {
        accent: Color::Rgb(255, 0, 0),
        ok: Color::Indexed(34),
        ..dark()
    };
    assert_eq!(loaded.theme, expected);
    assert_eq!(loaded.theme_name, "mine");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn user_file_named_like_a_builtin_adjusts_it() {
    let setup = Setup::new();
    setup.write_theme("dark", "border = \"white\"\n");
    let loaded = load(&setup.dirs, None, None).unwrap();
    assert_eq!(
        loaded.theme,
        Theme {
            border: Color::White,
            ..dark()
        }
    );
}

#[test]
fn theme_override_beats_the_config() {
    let setup = Setup::new();
    setup.write_config("[general]\ntheme = \"light\"\n");
    let loaded = load(&setup.dirs, None, Some("high-contrast")).unwrap();
    assert_eq!(loaded.theme, Theme::builtin("high-contrast").unwrap());
    assert_eq!(loaded.theme_name, "high-contrast");
    assert_eq!(loaded.config.general.theme, "light");
}

#[test]
fn unknown_theme_in_config_warns_and_uses_dark() {
    let setup = Setup::new();
    setup.write_theme("mine", "accent = \"red\"\n");
    setup.write_config("[general]\ntheme = \"solarized\"\n");
    let loaded = load(&setup.dirs, None, None).unwrap();
    assert_eq!(loaded.theme, dark());
    assert_eq!(loaded.theme_name, "dark");
    let expected_file = setup.dirs.themes_dir().join("solarized.toml");
    assert_eq!(
        loaded.warnings,
        [format!(
            "unknown theme `solarized`; available themes: dark, high-contrast, light, mine \
             (or create {}) — using the dark theme",
            expected_file.display()
        )]
    );
}

#[test]
fn unknown_theme_override_is_an_error() {
    let setup = Setup::new();
    let error = load(&setup.dirs, None, Some("solarized")).unwrap_err();
    let ConfigError::UnknownTheme {
        name, available, ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(name, "solarized");
    assert_eq!(available, &["dark", "high-contrast", "light"]);
}

#[test]
fn theme_names_cannot_leave_the_themes_directory() {
    let setup = Setup::new();
    setup.write_other("evil.toml", "accent = \"red\"\n");
    let error = load(&setup.dirs, None, Some("../../data/evil")).unwrap_err();
    assert!(matches!(
        error,
        ConfigError::UnknownTheme {
            expected_file: None,
            ..
        }
    ));
}

#[test]
fn bad_theme_file_warns_with_its_location() {
    let setup = Setup::new();
    let theme_file = setup.write_theme("mine", "accent = \"red\"\nbroder = \"blue\"\n");
    setup.write_config("[general]\ntheme = \"mine\"\n");
    let loaded = load(&setup.dirs, None, None).unwrap();
    assert_eq!(loaded.theme, dark());
    assert_eq!(loaded.warnings.len(), 1);
    let prefix = format!(
        "{}:2:1: unknown key `broder` at the top level; did you mean `border`? The keys there \
         are `fg`, ",
        theme_file.display()
    );
    assert!(
        loaded.warnings[0].starts_with(&prefix),
        "{:?}",
        loaded.warnings
    );
    assert!(loaded.warnings[0].ends_with(" — using the dark theme"));
}

#[test]
fn bad_colour_in_theme_override_is_an_error() {
    let setup = Setup::new();
    let theme_file = setup.write_theme("mine", "\nerror = \"crimson\"\n");
    let error = load(&setup.dirs, None, Some("mine")).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}:2:9: unknown colour `crimson`: use a name like \"red\" or \"light-blue\", \
             \"reset\", \"#rrggbb\", or a palette index 0-255",
            theme_file.display()
        )
    );
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let pairs: Vec<(String, OsString)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

#[test]
fn env_overrides_each_dir() {
    let defaults = Dirs::resolve(env_of(&[])).unwrap();
    let dirs = Dirs::resolve(env_of(&[
        ("GPUDECK_CONFIG_DIR", "/etc/gpudeck-test"),
        ("GPUDECK_STATE_DIR", "/var/tmp/gpudeck-state"),
        ("GPUDECK_DATA_DIR", ""),
    ]))
    .unwrap();
    assert_eq!(dirs.config, Path::new("/etc/gpudeck-test"));
    assert_eq!(dirs.state, Path::new("/var/tmp/gpudeck-state"));
    // An empty value counts as unset.
    assert_eq!(dirs.data, defaults.data);
    assert_eq!(
        dirs.config_file(),
        Path::new("/etc/gpudeck-test/config.toml")
    );
    assert_eq!(dirs.themes_dir(), Path::new("/etc/gpudeck-test/themes"));
}

#[test]
fn default_dirs_are_per_user_and_named_for_gpudeck() {
    let dirs = Dirs::resolve(env_of(&[])).unwrap();
    for dir in [&dirs.config, &dirs.data, &dirs.state] {
        assert!(dir.ends_with("gpudeck"), "{}", dir.display());
    }
    // The fallback is checked for its owner, so it is asked for as the user running the test:
    // the owner of a directory the test just made.
    let temp = tempfile::tempdir().unwrap();
    let uid = std::os::unix::fs::MetadataExt::uid(&fs::metadata(temp.path()).unwrap());
    let fallback = Dirs::fallback_in(temp.path(), uid).unwrap();
    let root = temp.path().join(format!("gpudeck-{uid}"));
    assert_eq!(fallback.config, root.join("config"));
    assert_eq!(fallback.data, root.join("data"));
    assert_eq!(fallback.state, root.join("state"));
}
