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

/// The variable every process of a run carries (its ranks get it from gpudeck, and whatever
/// they start inherits it, as torchrun's workers do).
pub(crate) const RUN_ID_VAR: &str = "GPUDECK_RUN_ID";

/// Every live process of a run: those in its process group, and those that left it (torchrun
/// starts its workers in sessions of their own, a program may `setsid` a helper) but carry
/// `GPUDECK_RUN_ID=<run_id>`; never gpudeck's own process nor those in `except` (the supervisor).
/// Scans /proc (the environments of other users' processes cannot be read, and are not the
/// run's), so call it at a modest rate.
pub(crate) fn run_processes(run_id: &str, pgid: Option<u32>, except: &[u32]) -> Vec<u32> {
    let me = std::process::id();
    let tag = format!("{RUN_ID_VAR}={run_id}");
    let mut pids: Vec<u32> = crate::host::pids()
        .filter(|pid| *pid != me && !except.contains(pid))
        .filter(|pid| {
            let Some(stat) = ProcStat::read(*pid) else {
                return false;
            };
            stat.is_alive()
                && (pgid.is_some_and(|g| g > 1 && stat.pgid == g) || carries(*pid, &tag))
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Whether the process's environment (as it was started) holds exactly `entry`.
fn carries(pid: u32, entry: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|e| e == entry.as_bytes()))
}

/// Sends `signal` to each process; how many got it.
#[allow(unsafe_code)]
pub(crate) fn signal_each(pids: &[u32], signal: i32) -> usize {
    pids.iter()
        .filter_map(|pid| i32::try_from(*pid).ok())
        .filter(|pid| *pid > 1)
        // SAFETY: kill(2) has no memory preconditions; a pid above 1 names one process.
        .filter(|pid| unsafe { libc::kill(*pid, signal) } == 0)
        .count()
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

    #[test]
    fn a_runs_processes_are_found_by_group_and_by_its_variable_after_setsid() {
        let id = format!("test-run-{}", std::process::id());
        // A process in its own session carrying the run's variable, as torchrun's workers are,
        // and one that carries another run's.
        let mut ours = std::process::Command::new("setsid")
            .args(["sleep", "30"])
            .env(RUN_ID_VAR, &id)
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("setsid")
            .args(["sleep", "30"])
            .env(RUN_ID_VAR, format!("{id}-other"))
            .spawn()
            .unwrap();
        let found = crate::runs::clock::wait_for(std::time::Duration::from_secs(5), || {
            run_processes(&id, None, &[]).contains(&ours.id())
        });
        assert!(found, "{:?}", run_processes(&id, None, &[]));
        assert!(!run_processes(&id, None, &[]).contains(&other.id()));
        assert!(run_processes(&id, None, &[ours.id()]).is_empty());
        assert_eq!(signal_each(&[ours.id()], libc::SIGKILL), 1);
        ours.wait().unwrap();
        assert!(run_processes(&id, None, &[]).is_empty());
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
