//! Shared test helpers: building the NVML simulator library and running the gpudeck binary.
#![allow(dead_code)]
// Helpers outside `#[test]` functions unwrap too: clippy.toml's allow-unwrap-in-tests covers
// only the test functions themselves.
#![allow(clippy::unwrap_used)]

pub mod demo;
pub mod docker;
pub mod docker_cleanup;
pub mod engine_proxy;
pub mod fake_engine;
pub mod fake_registry;
pub mod gate;
pub mod inert;
pub mod metrics;
pub mod pipes;
pub mod real;
pub mod registry;
pub mod run_containers;
pub mod run_fixture;
pub mod runs;
pub mod screen;
pub mod serve;
pub mod services;
pub mod slurm;
pub mod tls;
pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// Builds the NVML simulator cdylib once per test binary and returns its path.
pub fn sim_library() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "gpudeck-nvml-sim"])
            .current_dir(workspace_root())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the NVML simulator failed");
        let lib = target_dir().join("debug").join("libgpudeck_nvml_sim.so");
        assert!(
            lib.exists(),
            "simulator library missing at {}",
            lib.display()
        );
        lib
    })
}

/// A scratch set of gpudeck directories so tests never touch the user's config.
pub struct Dirs {
    pub root: tempfile::TempDir,
}

impl Dirs {
    pub fn new() -> Self {
        Self {
            root: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn config(&self) -> PathBuf {
        self.root.path().join("config")
    }

    pub fn state(&self) -> PathBuf {
        self.root.path().join("state")
    }

    /// A `Command` for the test-profile gpudeck binary with isolated dirs and the given simulation.
    pub fn gpudeck(&self, sim: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpudeck"));
        self.isolate(&mut cmd, sim);
        cmd
    }

    pub fn isolate(&self, cmd: &mut Command, sim: &str) {
        cmd.env("GPUDECK_CONFIG_DIR", self.config())
            .env("GPUDECK_DATA_DIR", self.root.path().join("data"))
            .env("GPUDECK_STATE_DIR", self.state())
            .env("GPUDECK_SIM", sim)
            .env_remove("NO_COLOR")
            // Text wraps at `COLUMNS` when a shell exports it: a test that wants a width sets it.
            .env_remove("COLUMNS");
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `text` as one line of words: messages are wrapped to the terminal, so a sentence is looked
/// for in this, not where the lines happen to break.
pub fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The name the test harness gives test `function` of the module at `module_path` (what
/// `module_path!()` says there, which begins with the test binary's crate name; the harness
/// leaves that out): what `<test binary> --exact NAME` runs.
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_binary, module)) => format!("{module}::{function}"),
        None => function.to_string(),
    }
}

/// Runs test `function` of the module at `module_path` (`module_path!()`) in a process of its
/// own, as if it were alone in its test binary: for tests that change what every thread of a
/// process shares (environment variables, a library loaded into it) or read the process's own
/// command line. Returns true in that process, where the caller goes on with the test's body,
/// and false in the calling one once the test passed there.
pub fn in_own_process(module_path: &str, function: &str) -> bool {
    const MARK: &str = "GPUDECK_TEST_OWN_PROCESS";
    let name = test_name(module_path, function);
    if std::env::var_os(MARK).is_some_and(|v| v == name.as_str()) {
        return true;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        // The test's name first: it is what the process's command line says it is.
        .arg(&name)
        .args(["--exact", "--test-threads=1", "--nocapture"])
        .env(MARK, &name)
        .output()
        .expect("the test binary runs");
    let (out_text, err_text) = (stdout(&out), stderr(&out));
    assert!(
        out.status.success(),
        "{name} failed in a process of its own:\n{out_text}\n{err_text}"
    );
    assert!(
        out_text.contains("test result: ok. 1 passed"),
        "{name} did not run in a process of its own:\n{out_text}\n{err_text}"
    );
    false
}
