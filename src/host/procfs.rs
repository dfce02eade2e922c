//! The real process table: reads `/proc/PID/{status,cmdline,comm,cgroup}` and signals with kill(2).

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::OnceLock;

use super::cgroup::container_from_cgroup;
use super::error::HostError;
use super::process::{ProcessDetails, ProcessIdentity, ProcessTable, ProcessTarget, ProcessUsage};
use super::signal::KillSignal;
use super::stat::ProcStat;
use super::users::UserNames;

/// Enough of a command line for any table cell or detail view; some launchers pass megabytes of
/// arguments, and reading them all every refresh would cost more than the rest of a tick.
const MAX_COMMAND_BYTES: u64 = 4096;

/// Reads processes from a procfs mount; `with_root` points it at a fake tree for tests.
#[derive(Debug)]
pub struct ProcFs {
    root: PathBuf,
    users: UserNames,
    /// Boot time in Unix seconds (`btime` in `/proc/stat`), read once.
    boot: OnceLock<Option<u64>>,
}

impl ProcFs {
    pub fn new() -> Self {
        Self::with_root("/proc")
    }

    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            users: UserNames::default(),
            boot: OnceLock::new(),
        }
    }

    fn stat(&self, pid: u32) -> Option<ProcStat> {
        let text = fs::read_to_string(self.pid_dir(pid).join("stat")).ok()?;
        ProcStat::parse(&text)
    }

    /// Start time, owner, group and session; `None` when stat cannot be read.
    fn identity(&self, pid: u32, status: Option<&str>) -> Option<ProcessIdentity> {
        let stat = self.stat(pid)?;
        let boot = *self.boot.get_or_init(|| boot_time(&self.root));
        Some(ProcessIdentity {
            start_ticks: stat.start_ticks,
            started_unix_ms: boot.and_then(|b| unix_ms(b, stat.start_ticks)),
            uid: status.and_then(real_uid),
            pgid: stat.pgid,
            session: stat.session,
        })
    }

    fn pid_dir(&self, pid: u32) -> PathBuf {
        self.root.join(pid.to_string())
    }

    /// The name of the process's real user, if the process is still there.
    fn owner(&self, pid: u32) -> Option<String> {
        let status = fs::read_to_string(self.pid_dir(pid).join("status")).ok()?;
        real_uid(&status).map(|uid| self.users.name(uid))
    }
}

impl Default for ProcFs {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessTable for ProcFs {
    fn describe(&self, pid: u32) -> Option<ProcessDetails> {
        let dir = self.pid_dir(pid);
        let status = readable(fs::read_to_string(dir.join("status")))?;
        let user = status
            .as_deref()
            .and_then(real_uid)
            .map(|uid| self.users.name(uid));
        let command = read_command(&dir)?;
        let container = readable(fs::read_to_string(dir.join("cgroup")))?
            .as_deref()
            .and_then(container_from_cgroup);
        let identity = self.identity(pid, status.as_deref());
        Some(ProcessDetails {
            pid,
            user,
            command,
            container,
            identity,
        })
    }

    fn start_ticks(&self, pid: u32) -> Option<u64> {
        self.stat(pid).map(|s| s.start_ticks)
    }

    fn usage(&self, pid: u32) -> Option<ProcessUsage> {
        let stat = self.stat(pid)?;
        let hz = clock_ticks_per_second()?;
        // statm's second field is the resident set in pages.
        let rss_pages = fs::read_to_string(self.pid_dir(pid).join("statm"))
            .ok()
            .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok());
        Some(ProcessUsage {
            cpu_seconds: stat.cpu_ticks as f64 / hz as f64,
            rss_bytes: rss_pages.zip(page_size()).map(|(pages, size)| pages * size),
        })
    }

    /// The pidfd is taken first and the start time checked after: from then on the pidfd names
    /// that one process, so its PID going to another between the check and the signal cannot
    /// redirect it. Kernels without pidfds (before 5.3) fall back to check-then-kill.
    fn signal_exact(&self, target: ProcessTarget, signal: KillSignal) -> Result<(), HostError> {
        let pid = target.pid;
        let wanted = target.start_ticks.ok_or(HostError::Unidentified { pid })?;
        let raw_pid = libc::pid_t::try_from(pid)
            .ok()
            .filter(|&p| p > 0)
            .ok_or(HostError::InvalidPid { pid })?;
        let pidfd = match pidfd_open(raw_pid) {
            Ok(fd) => Some(fd),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                return Err(HostError::Exited { pid })
            }
            Err(_) => None,
        };
        match self.start_ticks(pid) {
            None => return Err(HostError::Exited { pid }),
            Some(now) if now != wanted => return Err(HostError::Replaced { pid }),
            Some(_) => {}
        }
        let Some(pidfd) = pidfd else {
            return self.signal(pid, signal);
        };
        match pidfd_send_signal(&pidfd, signal) {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Err(HostError::Exited { pid }),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(HostError::NotPermitted {
                pid,
                owner: self.owner(pid).unwrap_or_else(|| "another user".to_owned()),
            }),
            Err(source) => Err(HostError::Signal {
                pid,
                signal,
                source,
            }),
        }
    }

    #[allow(unsafe_code)]
    fn signal(&self, pid: u32, signal: KillSignal) -> Result<(), HostError> {
        // kill(2) reads 0 and negative numbers as process groups: never let a PID become one.
        let raw_pid = libc::pid_t::try_from(pid)
            .ok()
            .filter(|&p| p > 0)
            .ok_or(HostError::InvalidPid { pid })?;
        // SAFETY: kill has no memory-safety preconditions.
        if unsafe { libc::kill(raw_pid, signal.as_raw()) } == 0 {
            return Ok(());
        }
        let source = io::Error::last_os_error();
        Err(match source.raw_os_error() {
            Some(libc::ESRCH) => HostError::Exited { pid },
            Some(libc::EPERM) => HostError::NotPermitted {
                pid,
                owner: self.owner(pid).unwrap_or_else(|| "another user".to_owned()),
            },
            _ => HostError::Signal {
                pid,
                signal,
                source,
            },
        })
    }
}

/// A pidfd for `pid` (Linux 5.3+).
#[allow(unsafe_code)]
fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))?;
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[allow(unsafe_code)]
fn pidfd_send_signal(pidfd: &OwnedFd, signal: KillSignal) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid pidfd, a signal number, no siginfo (null) and no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal.as_raw(),
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `btime` from `<root>/stat`: when the machine booted, in Unix seconds.
fn boot_time(root: &Path) -> Option<u64> {
    let text = fs::read_to_string(root.join("stat")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|t| t.trim().parse().ok())
}

/// Boot time plus clock ticks, in Unix milliseconds.
fn unix_ms(boot_secs: u64, ticks: u64) -> Option<u64> {
    let hz = clock_ticks_per_second()?;
    Some(boot_secs * 1000 + ticks * 1000 / hz)
}

/// The kernel's USER_HZ, the unit of the times in `/proc/PID/stat`.
#[allow(unsafe_code)]
fn clock_ticks_per_second() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|&hz| hz > 0)
}

#[allow(unsafe_code)]
fn page_size() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&size| size > 0)
}

/// `None` when the read shows the process is gone; `Some(None)` when the file exists but could
/// not be read (hidepid, a permission-restricted file), so the other columns still show.
fn readable<T>(result: io::Result<T>) -> Option<Option<T>> {
    match result {
        Ok(value) => Some(Some(value)),
        Err(e) if vanished(&e) => None,
        Err(_) => Some(None),
    }
}

/// A PID directory that disappears between reads gives NotFound on open and ESRCH on read.
fn vanished(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound || error.raw_os_error() == Some(libc::ESRCH)
}

fn real_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        .and_then(|uid| uid.parse().ok())
}

/// The command line, or `[comm]` for kernel threads and zombies, whose cmdline is empty.
fn read_command(dir: &Path) -> Option<Option<String>> {
    let mut raw = Vec::new();
    let read = File::open(dir.join("cmdline"))
        .and_then(|file| file.take(MAX_COMMAND_BYTES + 1).read_to_end(&mut raw));
    readable(read)?;
    let truncated = raw.len() as u64 > MAX_COMMAND_BYTES;
    raw.truncate(MAX_COMMAND_BYTES as usize);
    if let Some(command) = command_from_cmdline(&raw, truncated) {
        return Some(Some(command));
    }
    let comm = readable(fs::read_to_string(dir.join("comm")))?;
    Some(comm.map(|name| format!("[{}]", printable(name.trim_end_matches('\n')))))
}

pub(crate) fn command_from_cmdline(raw: &[u8], truncated: bool) -> Option<String> {
    // Arguments end in NUL; programs that rewrite their title pad the rest with NULs.
    let end = raw.iter().rposition(|&b| b != 0)? + 1;
    let args: Vec<String> = raw[..end]
        .split(|&b| b == 0)
        .map(|arg| printable(&String::from_utf8_lossy(arg)))
        .collect();
    let mut command = args.join(" ");
    if truncated {
        command.push('…');
    }
    Some(command)
}

/// Arguments may hold newlines or escape sequences; shown raw they would break the table's rows
/// or drive the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_args_are_space_joined() {
        let command = command_from_cmdline(b"python\0train.py\0--lr\x000.1\0", false);
        assert_eq!(command.as_deref(), Some("python train.py --lr 0.1"));
    }

    #[test]
    fn rewritten_titles_keep_their_spaces() {
        let command = command_from_cmdline(b"nginx: worker process\0\0\0\0", false);
        assert_eq!(command.as_deref(), Some("nginx: worker process"));
    }

    #[test]
    fn empty_cmdline_is_none() {
        assert_eq!(command_from_cmdline(b"", false), None);
        assert_eq!(command_from_cmdline(b"\0\0", false), None);
    }

    #[test]
    fn control_characters_are_escaped() {
        let command = command_from_cmdline(b"sh\0-c\0echo a\nb\x1b[2J\0", false);
        assert_eq!(command.as_deref(), Some("sh -c echo a\\nb\\u{1b}[2J"));
    }

    #[test]
    fn truncation_is_marked() {
        let command = command_from_cmdline(b"python\0-c\0xxxx", true);
        assert_eq!(command.as_deref(), Some("python -c xxxx…"));
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let command = command_from_cmdline(b"caf\xe9\0", false);
        assert_eq!(command.as_deref(), Some("caf\u{fffd}"));
    }

    #[test]
    fn real_uid_is_the_first_uid_field() {
        let status = "Name:\tsudo\nUmask:\t0022\nUid:\t1000\t0\t0\t0\nGid:\t1000\t0\t0\t0\n";
        assert_eq!(real_uid(status), Some(1000));
        assert_eq!(real_uid("Name:\tx\n"), None);
    }

    #[test]
    fn zero_and_huge_pids_are_never_signalled() {
        let procfs = ProcFs::new();
        for pid in [0, u32::MAX, 1 << 31] {
            let result = procfs.signal(pid, KillSignal::Term);
            assert!(
                matches!(result, Err(HostError::InvalidPid { pid: p }) if p == pid),
                "{result:?}"
            );
        }
    }
}
