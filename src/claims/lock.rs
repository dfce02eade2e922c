//! The claims lock: an flock on `claims/lock`, so the kernel drops it with its process (SIGKILL
//! included) and a crashed gpudeck never leaves GPUs locked.

use std::fs::{DirBuilder, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use super::error::ClaimError;

const LOCK_FILE: &str = "lock";
/// How long a start waits for another one to finish choosing its GPUs (a few milliseconds
/// normally; a stopped process holding the lock is the one case that reaches this).
const LOCK_WAIT: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_millis(5);

/// Holds the lock until dropped.
pub(super) struct Locked(File);

/// Takes the lock, creating the private directory if needed; waits up to [`LOCK_WAIT`].
#[allow(unsafe_code)]
pub(super) fn lock(dir: &Path) -> Result<Locked, ClaimError> {
    let path = dir.join(LOCK_FILE);
    let failed = |why: String| ClaimError {
        path: path.clone(),
        doing: "locked",
        why,
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| failed(e.to_string()))?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| failed(e.to_string()))?;
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(Locked(file));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(failed(err.to_string()));
        }
        if Instant::now() >= deadline {
            return Err(failed(format!(
                "another gpudeck has held the lock for {}s (is one stopped with Ctrl-Z? \
                 `fuser {}` names it)",
                LOCK_WAIT.as_secs(),
                path.display()
            )));
        }
        std::thread::sleep(RETRY);
    }
}

impl Drop for Locked {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: unlocks the descriptor this value owns; closing it would too.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}
