//! Processes as the run store sees them: identity by pid plus start time (so a reused pid is not
//! mistaken for ours), process groups, and exit statuses as shells number them.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

pub use crate::host::{ProcStat, ProcessRef};

/// The exit code as a shell reports it: the code, or 128 + the signal that ended the process.
pub fn exit_code_of(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 255,
    }
}

/// Whether any process is still in the group (zombies count until their parent reaps them).
#[allow(unsafe_code)]
pub(crate) fn group_exists(pgid: u32) -> bool {
    let Ok(pgid) = i32::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission; -pgid names a group.
    let rc = unsafe { libc::kill(-pgid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends `signal` to every process in the group; `false` when the group is gone.
#[allow(unsafe_code)]
pub(crate) fn signal_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = i32::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) has no memory preconditions; a pgid above 1 never names init or everyone.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Whether the group still holds processes other than zombies (a group of only zombies has
/// nothing left to stop; their parent reaps them). Scans /proc, so call it at a modest rate.
pub(crate) fn group_has_live_members(pgid: u32) -> bool {
    if !group_exists(pgid) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(ProcStat::read)
        .any(|s| s.pgid == pgid && s.is_alive())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_map_signals_like_a_shell() {
        let code = |script: &str| {
            let status = std::process::Command::new("sh")
                .args(["-c", script])
                .status()
                .unwrap();
            exit_code_of(status)
        };
        assert_eq!(code("exit 0"), 0);
        assert_eq!(code("exit 3"), 3);
        assert_eq!(code("kill -TERM $$"), 143);
        assert_eq!(code("kill -KILL $$"), 137);
    }
}
