//! `gpudeck shell` end to end on the real engine: exit codes, removal and keeping, --list and
//! --attach, piped input, file ownership, the refusals, and an interactive session in tmux.

use crate::support;

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Output, Stdio};

use support::docker::{docker, engine_or_skip, unique};
use support::docker_cleanup::Cleanup;
use support::tmux::Session;
use support::{stderr, stdout, Dirs};

/// `gpudeck --demo shell ARGS` on two simulated GPUs, stdin from /dev/null, in `workdir`.
fn shell(dirs: &Dirs, workdir: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = dirs.gpudeck("gpus=2,seed=7");
    cmd.arg("--demo")
        .arg("shell")
        .args(args)
        .current_dir(workdir)
        .stdin(Stdio::null());
    cmd.output().expect("gpudeck runs")
}

fn exists(name: &str) -> bool {
    let out = Command::new("docker")
        .args(["container", "inspect", name])
        .output()
        .expect("docker runs");
    out.status.success()
}

#[test]
fn a_command_runs_with_its_exit_code_and_the_container_is_removed() {
    if !engine_or_skip("a_command_runs_with_its_exit_code_and_the_container_is_removed") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-run");
    cleanup.container(&name);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let out = shell(
        &dirs,
        work.path(),
        &[
            &image,
            "--gpus",
            "none",
            "--name",
            &name,
            "--",
            "sh",
            "-c",
            "echo hi; exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "stderr:\n{}", stderr(&out));
    assert_eq!(stdout(&out), "hi\n");
    let said = stderr(&out);
    assert!(
        said.contains(&format!("{name}: {image} with no GPUs,")) && said.contains("-> /workspace"),
        "{said}"
    );
    assert!(!exists(&name), "the container is removed after the session");
}

#[test]
fn a_kept_shell_is_listed_and_re_entered() {
    if !engine_or_skip("a_kept_shell_is_listed_and_re_entered") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-kept");
    cleanup.container(&name);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let script = "echo run >> /workspace/runs; exit 4";
    let args = [&image, "--keep", "--name", &name, "--", "sh", "-c", script];
    let out = shell(&dirs, work.path(), &args);
    assert_eq!(out.status.code(), Some(4), "stderr:\n{}", stderr(&out));
    assert!(exists(&name), "--keep leaves the container");
    assert_eq!(
        docker(&[
            "inspect",
            "--format",
            "{{index .Config.Labels \"gpudeck.shell\"}}",
            &name
        ]),
        "1"
    );

    let list = shell(&dirs, work.path(), &["--list"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let row = stdout(&list)
        .lines()
        .find(|l| l.starts_with(&name))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{name} not listed:\n{}", stdout(&list)));
    assert!(
        row.contains(&image) && row.contains("exited") && row.contains("none"),
        "{row}"
    );

    let again = shell(&dirs, work.path(), &["--attach", &name]);
    assert_eq!(again.status.code(), Some(4), "stderr:\n{}", stderr(&again));
    assert!(
        stderr(&again).contains(&format!("re-entering {name}")),
        "{}",
        stderr(&again)
    );
    let runs = std::fs::read_to_string(work.path().join("runs")).unwrap();
    assert_eq!(runs, "run\nrun\n", "the same container ran twice");
    assert!(exists(&name), "a re-entered kept shell stays kept");

    let missing = shell(&dirs, work.path(), &["--attach", "no-such-shell-here"]);
    assert_eq!(missing.status.code(), Some(125));
    assert!(stderr(&missing).contains("no kept shell is called no-such-shell-here"));
}

#[test]
fn piped_input_reaches_the_command_with_its_end() {
    if !engine_or_skip("piped_input_reaches_the_command_with_its_end") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-pipe");
    cleanup.container(&name);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let mut child = dirs
        .gpudeck("gpus=2")
        .args(["--demo", "shell", &image, "--name", &name, "--", "cat"])
        .current_dir(work.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(b"through the pipe\n").unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr(&out));
    assert_eq!(stdout(&out), "through the pipe\n");
}

#[test]
fn files_written_in_the_workspace_belong_to_the_user() {
    if !engine_or_skip("files_written_in_the_workspace_belong_to_the_user") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let out = shell(
        &dirs,
        work.path(),
        &[
            &image,
            "--",
            "sh",
            "-c",
            "echo data > /workspace/made; id -u",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr(&out));
    let made = std::fs::metadata(work.path().join("made")).unwrap();
    // SAFETY: getuid and getgid cannot fail.
    let me = unsafe { (libc::getuid(), libc::getgid()) };
    assert_eq!((made.uid(), made.gid()), me);
    assert_eq!(stdout(&out).trim(), me.0.to_string());
}

#[test]
fn gpus_on_this_engine_are_refused_with_the_toolkit_fix() {
    if !engine_or_skip("gpus_on_this_engine_are_refused_with_the_toolkit_fix") {
        return;
    }
    if !support::docker::no_nvidia_runtime_or_skip(
        "gpus_on_this_engine_are_refused_with_the_toolkit_fix",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let out = shell(&dirs, work.path(), &[&image, "--gpus", "1", "--", "true"]);
    assert_eq!(out.status.code(), Some(125));
    // Wrapped to the terminal: read as one line of words.
    let said = stderr(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        said.contains("gpudeck: NVIDIA Container Toolkit is not configured for Docker: install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`"),
        "{said}"
    );
    assert!(said.contains("sudo systemctl restart docker"), "{said}");
}

#[test]
fn a_gpu_that_does_not_exist_is_named_with_the_ones_that_do() {
    if !engine_or_skip("a_gpu_that_does_not_exist_is_named_with_the_ones_that_do") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let out = shell(&dirs, work.path(), &[&image, "--gpus", "1,5", "--", "true"]);
    assert_eq!(out.status.code(), Some(125));
    let said = stderr(&out);
    assert!(
        said.replace('\n', " ")
            .contains("there is no GPU 5: this machine has GPUs 0-1 (2 × NVIDIA H100 80GB HBM3)"),
        "{said}"
    );
    assert!(said.lines().all(|l| l.chars().count() <= 80), "{said}");
    let bad = shell(&dirs, work.path(), &[&image, "--gpus", "two"]);
    assert_eq!(bad.status.code(), Some(125));
    assert!(
        stderr(&bad).contains("`two` is not a GPU selection"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn an_image_that_is_not_here_says_how_to_pull_it() {
    if !engine_or_skip("an_image_that_is_not_here_says_how_to_pull_it") {
        return;
    }
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let image = format!("{}:absent", unique("missing"));
    let out = shell(&dirs, work.path(), &[&image]);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains(&format!("gpudeck pull {image}")),
        "{}",
        stderr(&out)
    );
    let socket = shell(&dirs, work.path(), &[&image, "--workdir", "/var/run"]);
    assert_eq!(socket.status.code(), Some(125));
    assert!(
        stderr(&socket).contains("refusing to mount"),
        "{}",
        stderr(&socket)
    );
}

#[test]
fn a_workspace_holding_a_socket_is_refused_and_no_container_is_made() {
    if !engine_or_skip("a_workspace_holding_a_socket_is_refused_and_no_container_is_made") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-socket");
    cleanup.container(&name);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    // A socket that could forward to the engine, named like anything but docker.sock, deep down.
    let deep = work.path().join("data/cache/tmp");
    std::fs::create_dir_all(&deep).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(deep.join("engine.sock")).unwrap();
    let workdir = work.path().display().to_string();
    let args = [
        image.as_str(),
        "--gpus",
        "none",
        "--keep",
        "--force",
        "--name",
        &name,
        "--workdir",
        &workdir,
        "--",
        "true",
    ];
    let out = shell(&dirs, work.path(), &args);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(125), "{said}");
    assert!(
        said.contains("holds the Unix socket") && said.contains("data/cache/tmp/engine.sock"),
        "{said}"
    );
    assert!(!exists(&name), "no container was created");
}

#[test]
fn an_interactive_shell_in_tmux() {
    if !engine_or_skip("an_interactive_shell_in_tmux") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-tmux");
    cleanup.container(&name);
    let work = tempfile::tempdir().unwrap();
    let args = format!(
        "--demo shell {image} --name {name} --workdir {}",
        work.path().display()
    );
    let session = Session::start_with("shell", 100, 30, "GPUDECK_SIM=gpus=2", &args, Dirs::new());
    session.wait_for("the shell's prompt", |s| s.contains("/workspace"));
    session.tmux(&["send-keys", "-t", &session.name, "-l", "echo $((6*7))"]);
    session.tmux(&["send-keys", "-t", &session.name, "Enter"]);
    session.wait_for("the answer", |s| s.lines().any(|l| l.trim() == "42"));
    session.tmux(&["send-keys", "-t", &session.name, "-l", "exit"]);
    session.tmux(&["send-keys", "-t", &session.name, "Enter"]);
    assert_eq!(session.wait_exit(), "0");
    assert!(!exists(&name), "the container is removed after the session");
}

#[test]
fn docker_commands_end_quietly_when_their_reader_goes_away() {
    if !engine_or_skip("docker_commands_end_quietly_when_their_reader_goes_away") {
        return;
    }
    let dirs = Dirs::new();
    let commands: &[&[&str]] = &[
        &["shell", "--list"],
        &["containers"],
        &["containers", "--json"],
        &["images"],
        &["images", "--json"],
        // Nothing listens there: the failure is the one event printed.
        &["pull", "--json", "127.0.0.1:9/gpudeck-test/nothing:1"],
    ];
    for args in commands {
        let mut cmd = dirs.gpudeck("gpus=2");
        cmd.arg("--demo").args(*args);
        let out = support::pipes::with_reader_gone(cmd);
        support::pipes::assert_quiet_end(&args.join(" "), &out);
    }
}

#[test]
fn a_shell_whose_output_nobody_reads_ends_quietly_and_is_removed() {
    if !engine_or_skip("a_shell_whose_output_nobody_reads_ends_quietly_and_is_removed") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-head");
    cleanup.container(&name);
    let (dirs, work) = (Dirs::new(), tempfile::tempdir().unwrap());
    let mut cmd = dirs.gpudeck("gpus=2");
    cmd.arg("--demo")
        .args(["shell", &image, "--gpus", "none", "--name", &name])
        .args(["--", "sh", "-c", "while true; do echo line; done"])
        .current_dir(work.path());
    let out = support::pipes::with_reader_gone(cmd);
    support::pipes::assert_quiet_end("shell ... | head", &out);
    assert!(!exists(&name), "the container is removed after the session");
}

/// The container's `State.Status`, or None once it is gone.
fn container_state(name: &str) -> Option<String> {
    let out = Command::new("docker")
        .args([
            "container",
            "inspect",
            "--format",
            "{{.State.Status}}",
            name,
        ])
        .output()
        .expect("docker runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Waits up to `secs` for `check` to hold for the container's state; the seconds it took.
fn wait_container(name: &str, what: &str, secs: u64, check: impl Fn(Option<&str>) -> bool) -> f64 {
    let started = std::time::Instant::now();
    loop {
        let state = container_state(name);
        if check(state.as_deref()) {
            return started.elapsed().as_secs_f64();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(secs),
            "{name} is not {what} after {secs} s: {state:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `gpudeck --demo shell ARGS` in a tmux pane (the test profile's binary), at its prompt, with
/// its container running.
fn shell_in_tmux(tag: &str, name: &str, args: &str) -> Session {
    let session = Session::start_with(
        tag,
        100,
        30,
        "GPUDECK_SIM=gpus=2",
        &format!("--demo shell {args}"),
        Dirs::new(),
    );
    session.wait_for("the shell's prompt", |s| s.contains("/workspace"));
    wait_container(name, "running", 60, |s| s == Some("running"));
    session
}

/// Kills the pane, as a closed terminal window or a dropped SSH connection does: its processes
/// get SIGHUP and the terminal is gone.
fn kill_pane(session: &Session) {
    session.tmux(&["kill-pane", "-t", &session.name]);
}

#[test]
fn a_shell_whose_terminal_goes_away_is_removed() {
    if !engine_or_skip("a_shell_whose_terminal_goes_away_is_removed") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-hup");
    cleanup.container(&name);
    let work = tempfile::tempdir().unwrap();
    let args = format!(
        "{image} --gpus none --name {name} --workdir {}",
        work.path().display()
    );
    let session = shell_in_tmux("hup", &name, &args);
    kill_pane(&session);
    let took = wait_container(&name, "removed", 60, |s| s.is_none());
    eprintln!("the container was gone {took:.2} s after the pane was killed");
}

#[test]
fn a_kept_shell_whose_terminal_goes_away_is_stopped_and_kept() {
    if !engine_or_skip("a_kept_shell_whose_terminal_goes_away_is_stopped_and_kept") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-hup-kept");
    cleanup.container(&name);
    let work = tempfile::tempdir().unwrap();
    let args = format!(
        "{image} --gpus none --keep --name {name} --workdir {}",
        work.path().display()
    );
    let session = shell_in_tmux("hup-kept", &name, &args);
    kill_pane(&session);
    let took = wait_container(&name, "stopped and kept", 60, |s| s == Some("exited"));
    eprintln!("the kept container stopped {took:.2} s after the pane was killed");

    // Re-entered, it is the same once more: the hang-up ends the attach and the shell stays.
    let again = shell_in_tmux("hup-attach", &name, &format!("--attach {name}"));
    assert!(again.screen().contains("re-entering"), "{}", again.screen());
    kill_pane(&again);
    let took = wait_container(&name, "stopped and kept", 60, |s| s == Some("exited"));
    eprintln!("the re-entered container stopped {took:.2} s after the pane was killed");
}

#[test]
fn sigterm_to_gpudeck_removes_its_shell_and_says_so() {
    if !engine_or_skip("sigterm_to_gpudeck_removes_its_shell_and_says_so") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("shell-term");
    cleanup.container(&name);
    let work = tempfile::tempdir().unwrap();
    let args = format!(
        "{image} --gpus none --name {name} --workdir {}",
        work.path().display()
    );
    let session = shell_in_tmux("term", &name, &args);
    let pid = session.gpudeck_pid();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    wait_container(&name, "removed", 60, |s| s.is_none());
    assert_eq!(session.wait_exit(), "143");
    let screen = session.screen();
    assert!(
        screen.contains("gpudeck: gpudeck was told to stop (SIGTERM):")
            && screen.contains(&format!("the shell {name} was removed.")),
        "{screen}"
    );
}
