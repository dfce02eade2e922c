//! The real /proc and kill(2) paths of `ProcFs`, plus a fake /proc tree for container cases.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support;
use gpudeck::host::{
    ContainerRef, ContainerRuntime, FakeProcessTable, HostError, KillSignal, ProcFs,
    ProcessDetails, ProcessIdentity, ProcessTable, ProcessTarget,
};
use gpudeck::runs::RunOwner;

const ID: &str = "9d8c7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa998877665544";

fn current_user() -> String {
    let output = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[test]
fn describes_this_test_process() {
    let details = ProcFs::new().describe(std::process::id()).unwrap();
    assert_eq!(details.pid, std::process::id());
    assert_eq!(details.user.as_deref(), Some(current_user().as_str()));
    let exe = std::env::current_exe().unwrap();
    let binary = exe.file_name().unwrap().to_str().unwrap();
    let command = details.command.unwrap();
    assert!(command.contains(binary), "{command:?} lacks {binary}");
    if !Path::new("/.dockerenv").exists() {
        assert_eq!(details.container, None);
    }
}

#[test]
fn kernel_threads_show_their_name_in_brackets() {
    // kthreadd is PID 2 on a host; in a PID namespace it is absent, and that is fine too.
    let Some(details) = ProcFs::new().describe(2) else {
        return;
    };
    if fs::read("/proc/2/cmdline").unwrap_or_default().is_empty() {
        assert_eq!(details.command.as_deref(), Some("[kthreadd]"));
    }
}

#[test]
fn a_child_is_signalled_only_under_the_start_time_it_was_seen_with() {
    let mut child = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let procfs = ProcFs::new();
    let identity = procfs
        .describe(pid)
        .unwrap()
        .identity
        .expect("stat is readable");
    // SAFETY: getuid cannot fail.
    assert_eq!(identity.uid, Some(unsafe { libc::getuid() }));
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let started = identity.started_unix_ms.expect("boot time is readable");
    assert!(started.abs_diff(now_ms) < 5_000, "{started} vs {now_ms}");
    assert_eq!(procfs.start_ticks(pid), Some(identity.start_ticks));

    // Seen with another start time: the PID names another process now; it is left alone.
    let stale = ProcessTarget {
        pid,
        start_ticks: Some(identity.start_ticks + 1),
    };
    let refused = procfs.signal_exact(stale, KillSignal::Kill).unwrap_err();
    assert!(matches!(refused, HostError::Replaced { .. }), "{refused}");
    assert!(child.try_wait().unwrap().is_none(), "still running");
    let unknown = ProcessTarget {
        pid,
        start_ticks: None,
    };
    let refused = procfs.signal_exact(unknown, KillSignal::Kill).unwrap_err();
    assert!(
        matches!(refused, HostError::Unidentified { .. }),
        "{refused}"
    );
    assert!(child.try_wait().unwrap().is_none(), "still running");

    let exact = ProcessTarget {
        pid,
        start_ticks: Some(identity.start_ticks),
    };
    procfs.signal_exact(exact, KillSignal::Term).unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGTERM));
    assert!(matches!(
        procfs.signal_exact(exact, KillSignal::Kill),
        Err(HostError::Exited { .. })
    ));
}

/// Waits (up to 5 s) until `pid` has exec'd `command` and returns its identity.
fn identity_after_exec(pid: u32, command: &str) -> ProcessIdentity {
    let procfs = ProcFs::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let d = procfs.describe(pid).expect("the child runs");
        if d.command.as_deref() == Some(command) {
            return d.identity.expect("stat is readable");
        }
        assert!(std::time::Instant::now() < deadline, "{d:?}");
        std::thread::yield_now();
    }
}

#[test]
fn another_users_job_from_before_the_run_is_not_the_runs_leftover() {
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    let can = me == 0 && Command::new("setpriv").arg("--version").output().is_ok();
    let why = "starting a process as another user needs root and setpriv";
    let test = "another_users_job_from_before_the_run_is_not_the_runs_leftover";
    if !support::real::have(support::real::Part::Root, test, can, why) {
        return;
    }
    // "alice": nobody's job, already on the GPU before the run.
    let alice = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sleep",
            "30",
        ])
        .spawn()
        .unwrap();
    let mut alice = Reaped(alice);
    let theirs = identity_after_exec(alice.0.id(), "sleep 30");
    assert_eq!(theirs.uid, Some(65534));
    let started = theirs.started_unix_ms.expect("boot time is readable");
    // The run was created after alice's job started, by this user. Alice's job was spawned
    // from here, so it is even in the process group and session taken as the run's: being
    // another user's still keeps it out.
    let run = RunOwner {
        uid: Some(me),
        process_group: Some(theirs.pgid),
        session: Some(theirs.session),
        created_ms: started + 5_000,
        ended_ms: None,
    };
    assert!(!run.owns(Some(&theirs)), "{theirs:?}");
    // Even had she started during the run: not this user's.
    let during = RunOwner {
        created_ms: started.saturating_sub(5_000),
        ..run
    };
    assert!(!during.owns(Some(&theirs)), "{theirs:?}");
    // The run's own process started during it is.
    let mine = Reaped(Command::new("sleep").arg("31").spawn().unwrap());
    let own = identity_after_exec(mine.0.id(), "sleep 31");
    assert!(during.owns(Some(&own)), "{own:?}");
    alice.0.kill().unwrap();
}

/// Kills and reaps the child when the test ends, pass or fail.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn terminates_a_child_and_then_finds_it_gone() {
    let mut child = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let procfs = ProcFs::new();

    // Between fork and exec the child still carries the test's name; wait for the exec.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let details = loop {
        let d = procfs.describe(pid).unwrap();
        if d.command.as_deref() == Some("sleep 30") || std::time::Instant::now() > deadline {
            break d;
        }
        std::thread::yield_now();
    };
    assert_eq!(details.command.as_deref(), Some("sleep 30"));
    assert_eq!(details.user.as_deref(), Some(current_user().as_str()));

    procfs.signal(pid, KillSignal::Term).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM));

    assert_eq!(procfs.describe(pid), None);
    let error = procfs.signal(pid, KillSignal::Kill).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("process {pid} has already exited")
    );
}

#[test]
fn kill_signal_ends_a_child() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    ProcFs::new().signal(child.id(), KillSignal::Kill).unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
}

#[test]
fn nonexistent_pid_has_already_exited() {
    // Above the kernel's largest pid_max (2^22), so it can never be a live process.
    let pid = 4_200_000;
    let procfs = ProcFs::new();
    assert_eq!(procfs.describe(pid), None);
    let error = procfs.signal(pid, KillSignal::Term).unwrap_err();
    assert!(matches!(error, HostError::Exited { pid: 4_200_000 }));
    assert_eq!(error.to_string(), "process 4200000 has already exited");
}

/// Runs inside a child of `signalling_another_users_process_is_refused` as an unprivileged user;
/// in an ordinary test run the variable is unset and it does nothing.
#[test]
fn signal_helper_for_permission_test() {
    let Ok(pid) = std::env::var("GPUDECK_TEST_SIGNAL_PID") else {
        return;
    };
    let result = ProcFs::new().signal(pid.parse().unwrap(), KillSignal::Term);
    println!(
        "RESULT: {result:?} / {}",
        result.as_ref().map_err(ToString::to_string).unwrap_err()
    );
}

#[test]
fn signalling_another_users_process_is_refused() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let why = "running a helper as another user needs root";
    let test = "signalling_another_users_process_is_refused";
    if !support::real::have(support::real::Part::Root, test, root, why) {
        return;
    }
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &support::test_name(module_path!(), "signal_helper_for_permission_test"),
            "--nocapture",
        ])
        .env("GPUDECK_TEST_SIGNAL_PID", victim.id().to_string())
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    victim.kill().unwrap();
    victim.wait().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let expected = format!(
        "not allowed to signal process {} (owned by root): run gpudeck as that user or with sudo",
        victim.id()
    );
    assert!(stdout.contains("NotPermitted"), "{stdout}");
    assert!(stdout.contains(&expected), "{stdout}");
}

#[test]
fn permission_error_tells_what_to_do() {
    let error = HostError::NotPermitted {
        pid: 812,
        owner: "alice".to_owned(),
    };
    assert_eq!(
        error.to_string(),
        "not allowed to signal process 812 (owned by alice): run gpudeck as that user or with sudo"
    );
}

fn write_process(root: &Path, pid: u32, uid: u32, cmdline: &[u8], cgroup: &str) {
    let dir = root.join(pid.to_string());
    fs::create_dir_all(&dir).unwrap();
    let status =
        format!("Name:\tpython3\nState:\tS (sleeping)\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n");
    fs::write(dir.join("status"), status).unwrap();
    fs::write(dir.join("cmdline"), cmdline).unwrap();
    fs::write(dir.join("comm"), "python3\n").unwrap();
    fs::write(dir.join("cgroup"), cgroup).unwrap();
}

#[test]
fn fake_proc_tree_with_a_docker_process() {
    let root = tempfile::tempdir().unwrap();
    let cgroup = format!("0::/system.slice/docker-{ID}.scope\n");
    write_process(
        root.path(),
        4242,
        0,
        b"python3\0train.py\0--epochs\x0010\0",
        &cgroup,
    );

    let details = ProcFs::with_root(root.path()).describe(4242).unwrap();
    assert_eq!(
        details,
        ProcessDetails {
            pid: 4242,
            user: Some("root".to_owned()),
            command: Some("python3 train.py --epochs 10".to_owned()),
            container: Some(ContainerRef {
                runtime: ContainerRuntime::Docker,
                id: ID.to_owned(),
            }),
            identity: None,
        }
    );
    assert_eq!(details.container.unwrap().short_id(), "9d8c7b6a5f4e");
}

#[test]
fn fake_proc_tree_edge_cases() {
    let root = tempfile::tempdir().unwrap();
    let v1_cgroup = format!("12:memory:/docker/{ID}\n11:pids:/docker/{ID}\n0::/\n");
    write_process(root.path(), 10, 3_999_999_999, b"", &v1_cgroup);
    let long_arg = vec![b'x'; 10_000];
    write_process(
        root.path(),
        11,
        0,
        &long_arg,
        "0::/user.slice/session-1.scope\n",
    );
    let procfs = ProcFs::with_root(root.path());

    let zombie = procfs.describe(10).unwrap();
    assert_eq!(zombie.user.as_deref(), Some("3999999999"));
    assert_eq!(zombie.command.as_deref(), Some("[python3]"));
    assert_eq!(zombie.container.unwrap().runtime, ContainerRuntime::Docker);

    let long = procfs.describe(11).unwrap();
    let command = long.command.unwrap();
    assert_eq!(command.chars().count(), 4097);
    assert!(command.ends_with('…'));
    assert_eq!(long.container, None);

    assert_eq!(procfs.describe(12), None);
}

#[test]
fn unreadable_files_leave_their_columns_empty() {
    let root = tempfile::tempdir().unwrap();
    write_process(root.path(), 20, 0, b"a\0", "0::/\n");
    // A directory where a file should be makes the read fail with something other than NotFound.
    let cgroup = root.path().join("20/cgroup");
    fs::remove_file(&cgroup).unwrap();
    fs::create_dir(&cgroup).unwrap();
    let details = ProcFs::with_root(root.path()).describe(20).unwrap();
    assert_eq!(details.command.as_deref(), Some("a"));
    assert_eq!(details.container, None);
}

#[test]
fn fake_table_records_signals_and_refusals() {
    let process = |pid| ProcessDetails {
        pid,
        user: Some("bob".to_owned()),
        command: Some("python".to_owned()),
        container: None,
        identity: None,
    };
    let table = FakeProcessTable::new([process(1), process(2)]);
    table.protect(2, "alice");
    table.signal(1, KillSignal::Term).unwrap();
    assert_eq!(table.describe(1), None);
    assert!(matches!(
        table.signal(2, KillSignal::Kill),
        Err(HostError::NotPermitted { pid: 2, .. })
    ));
    assert!(matches!(
        table.signal(1, KillSignal::Kill),
        Err(HostError::Exited { pid: 1 })
    ));
    assert_eq!(table.signals(), [(1, KillSignal::Term)]);
}

#[test]
fn usage_reads_cpu_time_and_resident_memory_from_stat_and_statm() {
    let root = tempfile::tempdir().unwrap();
    write_process(root.path(), 77, 0, b"python3\0train.py\0", "0::/\n");
    let dir = root.path().join("77");
    // utime 250 and stime 50 ticks; 1000 resident pages.
    let stat = "77 (python3) S 1 77 77 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 987654 1000 100";
    fs::write(dir.join("stat"), stat).unwrap();
    fs::write(dir.join("statm"), "5000 1000 300 1 0 800 0\n").unwrap();
    let usage = ProcFs::with_root(root.path()).usage(77).expect("usage");
    // SAFETY: sysconf has no preconditions.
    let (hz, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK) as f64,
            libc::sysconf(libc::_SC_PAGESIZE) as u64,
        )
    };
    assert_eq!(usage.cpu_seconds, 300.0 / hz);
    assert_eq!(usage.rss_bytes, Some(1000 * page));
    assert_eq!(
        ProcFs::with_root(root.path()).usage(78),
        None,
        "no such process"
    );

    let own = ProcFs::new()
        .usage(std::process::id())
        .expect("our own usage");
    assert!(own.rss_bytes.is_some_and(|b| b > 1024 * 1024), "{own:?}");
}
