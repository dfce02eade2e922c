//! `gpudeck stop` on a full disk: the ranks are stopped and the command says so (exit 0), with
//! why the end is not recorded yet and who records it; once there is space again the
//! supervisor records it. The disk is a 1 MiB tmpfs mounted for the test, so it needs root.

use crate::support;

use std::process::Command;

use support::runs::{group_alive, output, record, start, wait_state};
use support::{stderr, Dirs};

/// A tmpfs mounted at a path, unmounted when it drops (lazily: a process may still hold it).
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_stop_on_a_full_disk_stops_the_run_and_says_when_its_end_is_recorded() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let test = "a_stop_on_a_full_disk_stops_the_run_and_says_when_its_end_is_recorded";
    let part = crate::support::real::Part::Root;
    if !crate::support::real::have(part, test, root, "mounting a small tmpfs needs root") {
        return;
    }
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let data = dirs.root.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs"])
        .arg(&data)
        .status()
        .unwrap();
    let why = "a tmpfs could not be mounted here";
    if !crate::support::real::have(part, test, mounted.success(), why) {
        return;
    }
    let _mount = Mounted(data.clone());

    let (id, guard) = start(&dirs, &["--gpus", "none", "--", "sh", "-c", "sleep 600"]);
    wait_state(&dirs, &id, "running");
    let pgid = guard.0.expect("a process group");
    // Fill the disk.
    let filler = data.join("filler");
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k"])
        .arg(format!("of={}", filler.display()))
        .output()
        .unwrap();
    assert!(
        std::fs::write(data.join("probe"), vec![0u8; 8192]).is_err(),
        "the disk is full"
    );

    let stopped = output(&dirs, &["stop", &id, "--grace", "1"]);
    let said = stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(0), "{said}");
    let words = said.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains(&format!("stopped {id}")), "{said}");
    assert!(
        words.contains("its end could not be recorded yet"),
        "{said}"
    );
    assert!(words.contains("No space left on device"), "{said}");
    assert!(
        words.contains("its supervisor records it as soon as there is space again"),
        "{said}"
    );
    assert!(!group_alive(pgid), "the ranks are gone");
    assert_eq!(record(&dirs, &id)["state"], "running", "not recorded yet");

    // Space again: the supervisor records the end.
    std::fs::remove_file(&filler).unwrap();
    let rec = wait_state(&dirs, &id, "stopped");
    assert!(rec["ended_ms"].as_u64().is_some(), "{rec:#}");
}
