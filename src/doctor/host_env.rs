//! The seam between the doctor and the machine: files, environment variables, programs and disk
//! space, with the real implementation and a fake made of plain maps for tests.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::health::live::{self, LiveLog};

/// What the doctor reads from the machine it runs on. Every method answers, never panics.
pub trait HostEnv: Send + Sync {
    /// A text file's contents; None when it is absent or unreadable.
    fn read_file(&self, path: &Path) -> Option<String>;
    /// An environment variable; None when unset or not UTF-8.
    fn var(&self, name: &str) -> Option<String>;
    /// Whether `path` is a file someone may execute.
    fn is_executable(&self, path: &Path) -> bool;
    /// The entries of a directory (empty when it does not exist).
    fn list_dir(&self, dir: &Path) -> Vec<PathBuf>;
    /// Runs `program` with `args` (never through a shell) and returns stdout and stderr together.
    fn run(&self, program: &Path, args: &[&str]) -> Result<String, String>;
    /// Bytes an unprivileged user may still write on the filesystem holding `path`.
    fn free_bytes(&self, path: &Path) -> Result<u64, String>;
    /// `linux`, `macos`, ...: some advice only applies to Linux servers.
    fn os(&self) -> String;
    /// The kernel log since boot (`/dev/kmsg`, else `journalctl -k -b`), or why each could not
    /// be read.
    fn kernel_log(&self) -> Result<LiveLog, Vec<String>>;
}

/// The first executable called `program` in the directories of `PATH`.
pub fn find_on_path(env: &dyn HostEnv, program: &str) -> Option<PathBuf> {
    let path = env.var("PATH")?;
    path.split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| Path::new(dir).join(program))
        .find(|candidate| env.is_executable(candidate))
}

/// The machine gpudeck runs on.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemEnv;

impl HostEnv for SystemEnv {
    fn read_file(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn is_executable(&self, path: &Path) -> bool {
        crate::host::is_executable(path)
    }

    fn list_dir(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        paths
    }

    fn run(&self, program: &Path, args: &[&str]) -> Result<String, String> {
        let out = Command::new(program)
            .args(args)
            .output()
            .map_err(|e| format!("{} could not run: {e}", program.display()))?;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!(
                "{} failed ({}): {}",
                program.display(),
                out.status,
                text.trim()
            ))
        }
    }

    #[allow(unsafe_code)]
    fn free_bytes(&self, path: &Path) -> Result<u64, String> {
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| format!("{} contains a NUL byte", path.display()))?;
        // SAFETY: statvfs only writes into the zeroed struct we own; c_path is NUL-terminated.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut st) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        // f_bavail, as `df` reports it: the root-reserved blocks are a safety margin, not room
        // for images. The conversions are no-ops on 64-bit Linux but not on every libc target.
        #[allow(clippy::useless_conversion)]
        let (blocks, size) = (u64::from(st.f_bavail), u64::from(st.f_frsize));
        Ok(blocks.saturating_mul(size))
    }

    fn os(&self) -> String {
        std::env::consts::OS.to_string()
    }

    fn kernel_log(&self) -> Result<LiveLog, Vec<String>> {
        live::read()
    }
}

/// A machine described by plain maps, for tests of the gathering code.
#[derive(Debug, Clone)]
pub struct FakeEnv {
    pub files: BTreeMap<PathBuf, String>,
    pub vars: BTreeMap<String, String>,
    pub executables: BTreeSet<PathBuf>,
    /// What running a program prints, by program path; a missing entry fails to run.
    pub outputs: BTreeMap<PathBuf, String>,
    pub free: BTreeMap<PathBuf, u64>,
    pub os: String,
    /// The kernel log, or why it cannot be read (default: an empty `/dev/kmsg`).
    pub kernel_log: Result<LiveLog, Vec<String>>,
}

impl Default for FakeEnv {
    fn default() -> Self {
        Self {
            files: BTreeMap::new(),
            vars: BTreeMap::new(),
            executables: BTreeSet::new(),
            outputs: BTreeMap::new(),
            free: BTreeMap::new(),
            os: "linux".to_string(),
            kernel_log: Ok(LiveLog {
                source: live::KMSG.to_string(),
                text: String::new(),
            }),
        }
    }
}

impl FakeEnv {
    pub fn file(mut self, path: &str, contents: &str) -> Self {
        self.files.insert(PathBuf::from(path), contents.to_string());
        self
    }

    pub fn var(mut self, name: &str, value: &str) -> Self {
        self.vars.insert(name.to_string(), value.to_string());
        self
    }

    /// A kernel log read from `source` with `text` in it.
    pub fn with_kernel_log(mut self, source: &str, text: &str) -> Self {
        self.kernel_log = Ok(LiveLog {
            source: source.to_string(),
            text: text.to_string(),
        });
        self
    }

    /// A kernel log that cannot be read, for these reasons.
    pub fn with_kernel_log_denied(mut self, why: &[&str]) -> Self {
        self.kernel_log = Err(why.iter().map(|w| w.to_string()).collect());
        self
    }

    /// An executable at `path` that prints `output` whatever its arguments.
    pub fn program(mut self, path: &str, output: &str) -> Self {
        self.executables.insert(PathBuf::from(path));
        self.outputs.insert(PathBuf::from(path), output.to_string());
        self
    }
}

impl HostEnv for FakeEnv {
    fn read_file(&self, path: &Path) -> Option<String> {
        self.files.get(path).cloned()
    }

    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }

    fn is_executable(&self, path: &Path) -> bool {
        self.executables.contains(path)
    }

    fn list_dir(&self, dir: &Path) -> Vec<PathBuf> {
        self.files
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect()
    }

    fn run(&self, program: &Path, _args: &[&str]) -> Result<String, String> {
        self.outputs
            .get(program)
            .cloned()
            .ok_or_else(|| format!("{} could not run", program.display()))
    }

    fn free_bytes(&self, path: &Path) -> Result<u64, String> {
        self.free
            .get(path)
            .copied()
            .ok_or_else(|| format!("no filesystem at {}", path.display()))
    }

    fn os(&self) -> String {
        self.os.clone()
    }

    fn kernel_log(&self) -> Result<LiveLog, Vec<String>> {
        self.kernel_log.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lookup_takes_the_first_executable() {
        let env = FakeEnv::default()
            .var("PATH", "/opt/a::/usr/bin:/bin")
            .program("/usr/bin/nvcc", "")
            .program("/bin/nvcc", "");
        assert_eq!(
            find_on_path(&env, "nvcc"),
            Some(PathBuf::from("/usr/bin/nvcc"))
        );
        assert_eq!(find_on_path(&env, "nvidia-ctk"), None);
        assert_eq!(find_on_path(&FakeEnv::default(), "nvcc"), None);
    }

    #[test]
    fn the_real_machine_answers() {
        let env = SystemEnv;
        assert!(env.free_bytes(Path::new("/")).is_ok_and(|b| b > 0));
        assert!(env.free_bytes(Path::new("/nonexistent/dir")).is_err());
        let sh = find_on_path(&env, "sh").expect("sh on PATH");
        let out = env.run(&sh, &["-c", "echo hi"]).expect("sh runs");
        assert_eq!(out.trim(), "hi");
        assert!(env.run(&sh, &["-c", "exit 3"]).is_err());
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").expect("write");
        std::fs::set_permissions(
            &plain,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644),
        )
        .expect("chmod");
        assert!(!env.is_executable(&plain));
        assert!(
            !env.is_executable(dir.path()),
            "a directory is not a program"
        );
    }
}
