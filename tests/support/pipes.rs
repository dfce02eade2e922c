//! Running gpudeck with its stdout on a pipe whose reader is already gone, as after
//! `gpudeck ... | head -1` has read its line.

// libc: the test's own uid, gid and session, pipes, and signals to processes it started.
#![allow(unsafe_code)]

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Long enough for a loaded machine; a command that ends quietly ends well before.
const DEADLINE: Duration = Duration::from_secs(20);

/// The write end of a pipe whose read end is already closed.
pub fn reader_gone() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two fresh descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "a pipe");
    // SAFETY: both descriptors are fresh and owned here alone.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    Stdio::from(writer)
}

/// Runs `cmd` with stdout on a pipe whose read end is closed, stdin from /dev/null; fails the
/// test when it has not ended within 20 s.
pub fn with_reader_gone(mut cmd: Command) -> Output {
    cmd.stdout(reader_gone())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        // So a panic would show as one, whatever the test's own environment says.
        .env("RUST_BACKTRACE", "0");
    let mut child = cmd.spawn().expect("gpudeck starts");
    // The Command still holds the write end: dropped, so only the child has it.
    drop(cmd);
    let started = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let out = child.wait_with_output().expect("gpudeck ends");
            panic!(
                "still running {DEADLINE:?} after its reader went away; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("gpudeck ends")
}

/// Asserts the command ended quietly: exit code 0 and nothing about panics or broken pipes.
pub fn assert_quiet_end(what: &str, out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe") && !err.contains("os error 32"),
        "{what}: stderr tells of the closed pipe:\n{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{what}: stderr:\n{err}");
}
