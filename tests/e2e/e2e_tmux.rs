//! End to end: gpudeck in tmux on simulated GPUs, driven with keys like a user would.

use crate::support;

use std::process::Command;

use support::tmux::Session;
use support::Dirs;

fn tool_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_user_browses_the_tabs_and_quits() {
    let _gate = crate::support::gate::gate(module_path!());
    if !tool_available() {
        panic!("tmux is required for the end-to-end tests (.ci/run installs it)");
    }
    let s = Session::start("browse", 80, 24, "--demo");
    let screen = s.wait_for("the GPU list", |t| t.contains("H100") && t.contains("DEMO"));
    assert!(screen.contains("8 GPUs"), "{screen}");
    assert_eq!(
        s.display("#{alternate_on}"),
        "1",
        "the TUI uses the alternate screen"
    );
    s.keys(&["j", "j"]);
    s.wait_for("GPU 2 selected", |t| t.contains("▶ 2"));
    s.keys(&["2"]);
    s.wait_for("the processes tab", |t| t.contains("sorted by GPU MEM"));
    s.keys(&["s"]);
    s.wait_for("sorted by GPU%, largest first", |t| {
        t.contains("sorted by GPU% ↓")
    });
    s.keys(&["s", "s"]);
    s.wait_for("sorted by PID, smallest first", |t| {
        t.contains("sorted by PID ↑")
    });
    s.keys(&["3"]);
    s.wait_for("the topology matrix", |t| {
        t.contains("GPU topology") && t.contains("NV")
    });
    s.keys(&["?"]);
    s.wait_for("help", |t| t.contains("Everywhere") && t.contains("quit"));
    s.keys(&["Escape"]);
    s.wait_for("help closed", |t| !t.contains("Everywhere"));
    s.tmux(&["resize-window", "-t", &s.name, "-x", "120", "-y", "40"]);
    s.wait_for("a redraw at the new size", |t| {
        t.lines().any(|l| l.chars().count() > 90)
    });
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
    assert_eq!(
        s.display("#{alternate_on}"),
        "0",
        "the terminal left the alternate screen"
    );
    assert_eq!(
        s.display("#{cursor_flag}"),
        "1",
        "the cursor is visible again"
    );
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    let _gate = crate::support::gate::gate(module_path!());
    for signal in ["TERM", "HUP"] {
        let s = Session::start(&format!("sig{signal}"), 80, 24, "--demo");
        s.wait_for("first frame", |t| t.contains("H100"));
        let pid = s.gpudeck_pid();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .expect("kill");
        assert!(status.success());
        assert_eq!(s.wait_exit(), "0", "SIG{signal} is a clean exit");
        assert_eq!(
            s.display("#{alternate_on}"),
            "0",
            "SIG{signal} left the alternate screen"
        );
        assert_eq!(s.display("#{cursor_flag}"), "1");
    }
}

#[test]
fn no_driver_shows_the_reason_and_the_demo_hint() {
    let _gate = crate::support::gate::gate(module_path!());
    let s = Session::start(
        "nodriver",
        80,
        24,
        "--nvml-lib /nonexistent/libnvidia-ml.so.1",
    );
    let screen = s.wait_for("the explanation", |t| t.contains("No NVIDIA driver found"));
    assert!(screen.contains("--demo"), "{screen}");
    s.keys(&["2"]);
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}

#[test]
fn no_color_means_no_colour_but_the_selection_still_shows() {
    let _gate = crate::support::gate::gate(module_path!());
    let s = Session::start_with("nocolor", 80, 24, "NO_COLOR=1", "--demo", Dirs::new());
    s.wait_for("first frame", |t| t.contains("H100"));
    let styled = s.tmux(&["capture-pane", "-p", "-e", "-t", &s.name]);
    for colour in [
        "\x1b[38;", "\x1b[48;", "[38;2", "[38;5", "[31m", "[32m", "[33m", "[36m",
    ] {
        assert!(
            !styled.contains(colour),
            "colour {colour:?} drawn under NO_COLOR:\n{styled:?}"
        );
    }
    assert!(
        styled.contains("\x1b[7m") || styled.contains(";7m"),
        "reverse video marks the selection"
    );
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}

#[test]
fn a_bad_config_file_is_named_on_screen_and_the_defaults_run() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    std::fs::create_dir_all(dirs.config()).expect("mkdir");
    std::fs::write(
        dirs.config().join("config.toml"),
        "[general]\nrefresh = 5\n",
    )
    .expect("write");
    let s = Session::start_with("badconfig", 120, 30, "", "--demo", dirs);
    // The warning is on the first frame; the dashboard on the defaults follows with the GPU data.
    s.wait_for("the warning and the dashboard", |t| {
        t.contains("config.toml:2:1") && t.contains("H100")
    });
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}

#[test]
fn killing_a_process_from_the_processes_tab_asks_then_signals_it() {
    let _gate = crate::support::gate::gate(module_path!());
    /// Kills the test's victim process even when the test fails half-way.
    struct Victim(std::process::Child);
    impl Drop for Victim {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut victim = Victim(
        Command::new("sleep")
            .arg("600")
            .spawn()
            .expect("sleep starts"),
    );
    let pid = victim.0.id();
    let env = format!("GPUDECK_SIM=gpus=2,seed=1,pids=1:{pid}");
    let s = Session::start_with("kill", 100, 30, &env, "--demo", Dirs::new());
    s.wait_for("first frame", |t| t.contains("H100"));
    s.keys(&["2", "/"]);
    s.keys(&[&pid.to_string(), "Enter"]);
    s.wait_for("the filtered list", |t| {
        t.contains(&format!("filter \"{pid}\"")) && t.contains("sleep 600")
    });
    s.keys(&["x"]);
    s.wait_for("the confirmation", |t| {
        t.contains(&format!("Send SIGTERM to process {pid}?"))
    });
    s.keys(&["y"]);
    s.wait_for("the result", |t| {
        t.contains(&format!("sent SIGTERM to process {pid}"))
    });
    let status = victim.0.wait().expect("sleep is reaped");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}

#[test]
fn read_only_mode_refuses_to_kill() {
    let _gate = crate::support::gate::gate(module_path!());
    let s = Session::start("readonly", 100, 30, "--demo --read-only");
    s.wait_for("first frame", |t| t.contains("read-only"));
    s.keys(&["2", "j", "x"]);
    s.wait_for("the refusal", |t| {
        t.contains("killing processes is disabled")
    });
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}

#[test]
fn a_user_checks_compatibility_and_runs_the_doctor() {
    let _gate = crate::support::gate::gate(module_path!());
    if !tool_available() {
        panic!("tmux is required for the end-to-end tests (.ci/run installs it)");
    }
    let s = Session::start_with(
        "compat-doctor",
        120,
        40,
        "GPUDECK_SIM=profile=a100-pcie,gpus=2,driver=535.183.01,cuda=12020",
        "--demo",
        Dirs::new(),
    );
    s.wait_for("the GPU list", |t| t.contains("A100"));
    s.keys(&["6"]);
    let screen = s.wait_for("the compatibility board", |t| {
        t.contains("Will it run here?") && t.contains("Best TensorFlow")
    });
    assert!(
        screen.contains("tensorflow/tensorflow:2.15.0-gpu"),
        "the best TensorFlow image for a CUDA 12.2 driver: {screen}"
    );
    s.keys(&["7"]);
    let screen = s.wait_for_secs("the diagnosis", 30, |t| {
        t.contains("Doctor · ") && t.contains("passed") && t.contains("Framework images")
    });
    assert!(screen.contains("WARN"), "{screen}");
    // Down to the compatibility check: its fix names the driver to install.
    s.keys(&["G"]);
    s.wait_for("the framework check in full", |t| {
        t.contains("compat.frameworks") && t.contains("555.42.02")
    });
    s.keys(&["r"]);
    s.wait_for_secs("a second diagnosis", 30, |t| t.contains("doctor: "));
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}
