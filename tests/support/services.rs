//! The services' real programs (JupyterLab, TensorBoard, tritonserver) and PyTorch's torchrun
//! for tests: found in
//! `target/test-venv`, which `.ci/run` makes, or on PATH, else the reason the test is skipped
//! (or fails, under `CI=true`: see `real.rs`); and one started in a process group of its own,
//! stopped with everything it started.
#![allow(unsafe_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::real::Part;

/// The virtual environment `.ci/run` installs the programs in.
pub fn venv() -> PathBuf {
    super::target_dir().join("test-venv")
}

/// A program a test needs: the real part it is, and where it was found or why it was not.
pub struct Program {
    pub part: Part,
    pub found: Result<PathBuf, String>,
}

/// `jupyter` (JupyterLab's launcher), or why not.
pub fn jupyter() -> Program {
    Program {
        part: Part::JupyterLab,
        found: find("jupyter", &[venv().join("bin/jupyter")]),
    }
}

/// PyTorch's `torchrun` (its interpreter is the one torch is installed in), or why not.
pub fn torchrun() -> Program {
    Program {
        part: Part::Torch,
        found: find("torchrun", &[venv().join("bin/torchrun")]),
    }
}

/// `tensorboard`, or why not.
pub fn tensorboard() -> Program {
    Program {
        part: Part::TensorBoard,
        found: find("tensorboard", &[venv().join("bin/tensorboard")]),
    }
}

/// `tritonserver`: the one in the venv's nvidia-pytriton wheel, else one on PATH (the NGC
/// image's `/opt/tritonserver/bin`), or why not.
pub fn tritonserver() -> Program {
    let lib = venv().join("lib");
    let in_wheel: Vec<PathBuf> = std::fs::read_dir(&lib)
        .map(|dirs| {
            dirs.filter_map(Result::ok)
                .map(|d| {
                    d.path()
                        .join("site-packages/pytriton/tritonserver/bin/tritonserver")
                })
                .collect()
        })
        .unwrap_or_default();
    Program {
        part: Part::Triton,
        found: find("tritonserver", &in_wheel),
    }
}

fn find(program: &str, candidates: &[PathBuf]) -> Result<PathBuf, String> {
    if let Some(found) = candidates.iter().find(|c| is_executable(c)) {
        return Ok(found.clone());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|c| is_executable(c))
        .ok_or_else(|| format!("no {program} in {} or on PATH", venv().display()))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The program, or None after saying why `test` is skipped (under `CI=true` the test fails
/// instead: [`super::real::require`]).
pub fn or_skip(test: &str, program: Program) -> Option<PathBuf> {
    super::real::require(program.part, test, program.found)
}

/// A service started by a test, in a process group of its own, its output in a log file. Its
/// group is killed when it is dropped, so a failing test leaves nothing running.
pub struct Service {
    child: Child,
    pub log: PathBuf,
    stopped: bool,
}

impl Service {
    /// Starts `argv` with `env` added to the test's environment, output to `log`.
    pub fn start(argv: &[String], env: &[(String, OsString)], log: &Path) -> Service {
        use std::os::unix::process::CommandExt;
        let out = std::fs::File::create(log).expect("the service's log file");
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{} could not be started: {e}", argv[0]));
        Service {
            child,
            log: log.to_path_buf(),
            stopped: false,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it has printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM to its process group, as gpudeck stops a run; waits up to `grace` for the
    /// program to exit, and returns how it exited. Panics with its output if it did not.
    pub fn stop(&mut self, grace: Duration) -> ExitStatus {
        signal_group(self.child.id(), libc::SIGTERM);
        let deadline = Instant::now() + grace;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                self.stopped = true;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not stop within {grace:?} of SIGTERM:\n{}",
                self.child.id(),
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if !self.stopped {
            signal_group(self.child.id(), libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

fn signal_group(leader: u32, signal: i32) {
    // SAFETY: kill(2) on the process group this test started; no memory is touched.
    unsafe {
        libc::kill(-(leader as i32), signal);
    }
}

/// The PIDs of the processes whose command line contains `needle`, other than this one: what
/// a service left behind (a Jupyter kernel lives in a session of its own, out of the group).
pub fn processes_with(needle: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

/// Waits until no process's command line contains `needle`, up to `timeout`; returns those
/// left.
pub fn wait_gone(needle: &str, timeout: Duration) -> Vec<u32> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = processes_with(needle);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Copies a directory tree (the test model repository: the python backend writes bytecode
/// beside a model, which must not land in the source tree).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("copy the tree");
    for entry in std::fs::read_dir(from).expect("copy the tree") {
        let entry = entry.expect("copy the tree");
        let target = to.join(entry.file_name());
        match entry.file_type().expect("copy the tree").is_dir() {
            true => copy_tree(&entry.path(), &target),
            false => {
                std::fs::copy(entry.path(), &target).expect("copy the tree");
            }
        }
    }
}
