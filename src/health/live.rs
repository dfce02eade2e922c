//! This machine's kernel log since boot: `/dev/kmsg` read without blocking, or
//! `journalctl -k -b` where that is not permitted, and why neither was when both fail.

use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;

/// The kernel's record device.
pub const KMSG: &str = "/dev/kmsg";

/// The journal's kernel messages of this boot, with absolute times.
pub const JOURNALCTL_ARGS: [&str; 5] = ["-k", "-b", "--no-pager", "-o", "short-iso"];

/// More than any kernel ring buffer holds; a guard against a device that never ends.
const MAX_BYTES: usize = 64 << 20;

/// The kernel log as text, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveLog {
    /// `/dev/kmsg` or `journalctl -k -b`.
    pub source: String,
    pub text: String,
}

/// The log from `/dev/kmsg`, else the journal; Err lists why each could not be read.
pub fn read() -> Result<LiveLog, Vec<String>> {
    let mut why = Vec::new();
    match read_kmsg(Path::new(KMSG)) {
        Ok(text) => {
            return Ok(LiveLog {
                source: KMSG.to_string(),
                text,
            })
        }
        Err(e) => why.push(e),
    }
    match read_journal(Path::new("journalctl")) {
        Ok(text) => Ok(LiveLog {
            source: "journalctl -k -b".to_string(),
            text,
        }),
        Err(e) => {
            why.push(e);
            Err(why)
        }
    }
}

/// Every record `path` (a `/dev/kmsg`) holds, read without blocking until it has no more.
pub fn read_kmsg(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            ErrorKind::PermissionDenied => format!(
                "{shown}: permission denied (the kernel restricts it to privileged users: \
                 kernel.dmesg_restrict)"
            ),
            _ => format!("{shown}: {e}"),
        })?;
    let mut text = String::new();
    // One record per read; a record is at most a few KiB.
    let mut buf = vec![0u8; 16 << 10];
    while text.len() < MAX_BYTES {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            // EPIPE: the record was overwritten while we read; the next one follows.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("{shown}: {e}")),
        }
    }
    Ok(text)
}

/// The journal's kernel messages of this boot, through `program` (`journalctl`).
pub fn read_journal(program: &Path) -> Result<String, String> {
    let out = Command::new(program)
        .args(JOURNALCTL_ARGS)
        .output()
        .map_err(|e| format!("journalctl: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    journal_result(out.status.success(), stdout, &stderr)
}

/// What journalctl's output means: it exits 0 with only a hint when it hides the system's
/// messages from a user outside its groups.
fn journal_result(success: bool, stdout: String, stderr: &str) -> Result<String, String> {
    let hidden = |t: &str| {
        t.contains("insufficient permissions") || t.contains("not seeing messages from other users")
    };
    if hidden(stderr) || hidden(&stdout) {
        return Err("journalctl: the journal's system messages are hidden from this user".into());
    }
    if !success {
        let first = stderr.lines().next().unwrap_or("failed").trim();
        return Err(format!("journalctl: {first}"));
    }
    // A booted kernel always logs something: a journal with no kernel message since boot does
    // not keep the kernel log (no journal files, or volatile storage off), and saying "no Xid
    // in it" would be a pass nobody earned.
    let kept = stdout
        .lines()
        .any(|l| !l.trim().is_empty() && !l.starts_with("-- "));
    if !kept {
        let why = stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no kernel message since boot");
        return Err(format!(
            "journalctl: the journal keeps no kernel log here ({why})"
        ));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_whole_and_a_missing_device_says_which() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kmsg");
        std::fs::write(&path, "4,1,2,-;NVRM: Xid (PCI:0000:3a:00): 79, x\n").unwrap();
        assert!(read_kmsg(&path)
            .unwrap()
            .contains("Xid (PCI:0000:3a:00): 79"));
        let missing = read_kmsg(&dir.path().join("none")).unwrap_err();
        assert!(missing.contains("none: No such file"), "{missing}");
    }

    #[test]
    fn this_machines_kmsg_ends_without_blocking_when_it_can_be_opened() {
        // Whichever it is here, the answer comes back (no hang at the end of the records).
        match read_kmsg(Path::new(KMSG)) {
            Ok(text) => assert!(text.is_empty() || text.contains(';'), "{text:.200}"),
            Err(why) => assert!(why.starts_with(KMSG), "{why}"),
        }
    }

    #[test]
    fn a_hidden_journal_is_denied_and_a_missing_program_says_so() {
        let hint = "Hint: You are currently not seeing messages from other users and the system.";
        assert!(journal_result(true, "-- No entries --\n".into(), hint).is_err());
        assert_eq!(
            journal_result(true, "a\n".into(), ""),
            Ok("a\n".to_string())
        );
        // No journal at all (containers, storage off): exit 0 with nothing, which is not "no Xid".
        let empty = journal_result(
            true,
            "-- No entries --\n".into(),
            "No journal files were found.\n",
        )
        .unwrap_err();
        assert_eq!(
            empty,
            "journalctl: the journal keeps no kernel log here (No journal files were found.)"
        );
        assert!(journal_result(true, "-- No entries --\n".into(), "").is_err());
        let failed = journal_result(false, String::new(), "Failed to open journal\n").unwrap_err();
        assert_eq!(failed, "journalctl: Failed to open journal");
        let none = read_journal(Path::new("/nonexistent/journalctl")).unwrap_err();
        assert!(none.starts_with("journalctl: "), "{none}");
    }
}
