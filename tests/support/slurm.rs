//! A real one-node Slurm for a test (started by `slurm-up.sh`, stopped when the guard drops),
//! and `gpudeck` commands pointed at it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::runs::gpudeck;
use super::{stderr, stdout, Dirs};

/// One cluster at a time: the tests count GPUs and queue positions, and the machine has 2 cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A running cluster; dropping it cancels its jobs and stops its daemons.
pub struct Cluster {
    state: tempfile::TempDir,
    _turn: MutexGuard<'static, ()>,
}

impl Cluster {
    /// Starts one, or says why it could not (no root, no Slurm packages, a daemon that died).
    pub fn start() -> Result<Cluster, String> {
        Cluster::start_with(false)
    }

    /// Starts one with accounting (MariaDB and slurmdbd), so sacct has the jobs' records.
    pub fn start_with_accounting() -> Result<Cluster, String> {
        Cluster::start_with(true)
    }

    fn start_with(accounting: bool) -> Result<Cluster, String> {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let state = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut ports = vec![free_port()?, free_port()?];
        if accounting {
            ports.extend([free_port()?, free_port()?]);
        }
        let out = Command::new(script())
            .arg("up")
            .arg(state.path())
            .args(ports.iter().map(u16::to_string))
            .output()
            .map_err(|e| format!("slurm-up.sh could not be run: {e}"))?;
        let cluster = Cluster { state, _turn: turn };
        match out.status.success() {
            true => Ok(cluster),
            false => Err(format!("slurm-up.sh failed: {}", stderr(&out).trim())),
        }
    }

    pub fn conf(&self) -> PathBuf {
        self.state.path().join("slurm.conf")
    }

    /// `gpudeck ARGS` against this cluster.
    pub fn gpudeck(&self, dirs: &Dirs, args: &[&str]) -> Output {
        self.gpudeck_with_path(dirs, args, None)
    }

    /// `gpudeck ARGS` with `dir` first on PATH (a job inherits the PATH it was submitted with).
    pub fn gpudeck_with_path(&self, dirs: &Dirs, args: &[&str], dir: Option<&Path>) -> Output {
        let mut cmd = gpudeck(dirs, args);
        cmd.env("SLURM_CONF", self.conf());
        if let Some(dir) = dir {
            let path = std::env::var("PATH").unwrap_or_default();
            cmd.env("PATH", format!("{}:{path}", dir.display()));
        }
        cmd.output().expect("gpudeck runs")
    }

    /// The stand-in `nvidia-smi` a job's GPU sampler runs here (`tests/support/fake-bin`).
    pub fn fake_nvidia_smi_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake-bin")
    }

    /// One of Slurm's own commands against this cluster.
    pub fn command(&self, program: &str, args: &[&str]) -> Output {
        Command::new(program)
            .args(args)
            .env("SLURM_CONF", self.conf())
            .output()
            .expect("the Slurm command runs")
    }

    /// Submits a run; its id.
    pub fn submit(&self, dirs: &Dirs, args: &[&str]) -> String {
        let mut all = vec!["run", "--on", "slurm"];
        all.extend_from_slice(args);
        let out = self.gpudeck(dirs, &all);
        assert!(out.status.success(), "gpudeck run failed: {}", stderr(&out));
        stdout(&out).trim().to_string()
    }

    /// The run as `gpudeck runs --json` shows it (which asks Slurm).
    pub fn listed(&self, dirs: &Dirs, id: &str) -> Value {
        let out = self.gpudeck(dirs, &["runs", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: Value = serde_json::from_str(&stdout(&out)).expect("runs --json is JSON");
        doc["runs"]
            .as_array()
            .and_then(|runs| runs.iter().find(|r| r["id"] == id).cloned())
            .unwrap_or_else(|| panic!("{id} is not listed: {doc}"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("down")
            .arg(self.state.path())
            .status();
    }
}

fn script() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/slurm-up.sh"
    ))
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}
