//! The run's lock: a container run's supervisor holds it for its whole life, and a reader that
//! settles a run whose supervisor is gone takes it first, so the two never both record an end or
//! append caught-up output. An flock: the kernel drops it with the process, SIGKILL included.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The lock file in the run directory.
pub const LOCK_FILE: &str = "supervisor.lock";

/// Takes the run's lock without waiting: `None` when another process holds it.
#[allow(unsafe_code)]
pub(in crate::runs) fn try_lock(dir: &Path) -> std::io::Result<Option<File>> {
    let file = crate::private_files::open(
        crate::private_files::options()
            .read(true)
            .create(true)
            .truncate(false),
        &dir.join(LOCK_FILE),
    )?;
    // SAFETY: flock on a descriptor this function owns; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(Some(file));
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_free_again_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let held = try_lock(dir.path()).unwrap().expect("free at first");
        assert!(try_lock(dir.path()).unwrap().is_none(), "held by the first");
        drop(held);
        assert!(try_lock(dir.path()).unwrap().is_some(), "free once dropped");
    }
}
