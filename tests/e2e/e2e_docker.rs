//! End to end on the real Docker Engine: gpudeck in tmux follows a container's life from
//! the engine's events, shows its logs, stops it on request, and pulls an image from a local registry.

use crate::support;

use std::process::Command;
use std::time::Duration;

use support::docker::{busybox_image, docker, engine_or_skip, unique};
use support::engine_proxy::Proxy;
use support::registry::{image_id, remove_image, Registry, TestImage};
use support::tmux::Session;
use support::Dirs;

/// gpudeck on two simulated GPUs and the real engine, in a 120x32 tmux session.
fn tui(tag: &str, args: &str) -> Session {
    Session::start_with(
        &format!("docker-{tag}"),
        120,
        32,
        "GPUDECK_SIM=gpus=2",
        &format!("--demo {args}"),
        Dirs::new(),
    )
}

fn quit(tui: &Session) {
    tui.keys(&["q"]);
    assert_eq!(tui.wait_exit(), "0");
}

/// Removes the test's container even when the test fails.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", &self.0]).output();
    }
}

#[test]
fn a_container_appears_shows_its_logs_and_is_stopped_from_the_tui() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_container_appears_shows_its_logs_and_is_stopped_from_the_tui") {
        return;
    }
    let image = busybox_image("gpudeck-test/busybox:e2e", &["CUDA_VERSION=12.4.1"]);
    let tui = tui("life", "");
    tui.wait_for_secs("first frame", 15, |t| t.contains("DEMO"));
    tui.keys(&["4"]);
    tui.wait_for_secs("the containers tab", 15, |t| t.contains("Containers ·"));
    let name = unique("e2e");
    let _guard = Container(name.clone());
    docker(&[
        "run",
        "-d",
        "--name",
        &name,
        "-e",
        "NVIDIA_VISIBLE_DEVICES=1",
        &image,
        "sh",
        "-c",
        "echo hello-from-stdout; echo oops-on-stderr >&2; exec sleep 600",
    ]);
    // No refresh key: the row must come from the engine's event stream.
    tui.wait_for_secs("the new container", 15, |t| {
        t.lines()
            .any(|l| l.contains(&name) && l.contains("running") && l.contains("env:1"))
    });
    // Select it: it is the only running container the test knows; move until it is marked.
    let mut selected = false;
    for _ in 0..50 {
        let screen = tui.tmux(&["capture-pane", "-p", "-t", &tui.name]);
        if selected_row_is(&tui, &name) {
            selected = true;
            break;
        }
        assert!(screen.contains(&name));
        tui.keys(&["j"]);
    }
    assert!(selected, "{name} could not be selected");
    tui.keys(&["Enter"]);
    let logs = tui.wait_for_secs("its logs", 15, |t| {
        t.contains("hello-from-stdout") && t.contains("oops-on-stderr")
    });
    assert!(
        logs.contains("E oops-on-stderr"),
        "stderr is marked:\n{logs}"
    );
    tui.keys(&["Escape"]);
    tui.keys(&["t"]);
    tui.wait_for_secs("the confirmation", 10, |t| {
        t.contains(&format!("Stop container {name}?"))
    });
    tui.keys(&["y"]);
    tui.wait_for_secs("the exited state", 30, |t| {
        t.lines().any(|l| l.contains(&name) && l.contains("exited"))
    });
    quit(&tui);
}

/// Whether the highlighted row (reverse/selected colours are invisible in plain capture, so use
/// the inspect view's title) is `name`.
fn selected_row_is(tui: &Session, name: &str) -> bool {
    tui.keys(&["i"]);
    let screen = tui.wait_for_secs("the inspect view", 10, |t| {
        t.contains("Inspect (Esc to close)") && t.contains("Name")
    });
    tui.keys(&["Escape"]);
    tui.wait_for_secs("the list again", 10, |t| {
        !t.contains("Inspect (Esc to close)")
    });
    screen
        .lines()
        .any(|l| l.contains("Name") && l.contains(name))
}

#[test]
fn an_image_is_pulled_from_a_local_registry_through_the_picker() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("an_image_is_pulled_from_a_local_registry_through_the_picker") {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build(
        "e2e-pull",
        &["CUDA_VERSION=12.4.1", "TF_VERSION=2.17.0"],
        &[4],
    );
    let reference =
        registry.push_and_forget(&image, &format!("tensorflow/tensorflow:{}", unique("tag")));
    let tui = tui("pull", "");
    tui.wait_for_secs("first frame", 15, |t| t.contains("DEMO"));
    tui.keys(&["5"]);
    tui.wait_for_secs("the images tab", 15, |t| t.contains("Images ·"));
    tui.keys(&["p"]);
    tui.wait_for_secs("the picker", 10, |t| t.contains("Pull an image"));
    tui.keys(&["-l", &reference]);
    tui.keys(&["Enter"]);
    let done = tui.wait_for_secs("the finished pull", 60, |t| {
        t.contains("done in") || t.contains("failed")
    });
    assert!(done.contains("done in"), "{done}");
    assert!(image_id(&reference).is_some(), "the image is now local");
    tui.wait_for_secs("the pulled image in the list", 15, |t| {
        t.contains("12.4.1") && t.contains("TensorFlow 2.17.0")
    });
    quit(&tui);
    remove_image(&reference);
}

#[test]
fn the_tui_reconnects_when_the_engine_comes_back() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("the_tui_reconnects_when_the_engine_comes_back") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("docker.sock");
    let tui = tui(
        "reconnect",
        &format!("--docker-host unix://{}", sock.display()),
    );
    tui.wait_for_secs("first frame", 15, |t| t.contains("DEMO"));
    tui.keys(&["4"]);
    tui.wait_for_secs("the explanation", 15, |t| {
        t.contains("reconnects by itself") && t.contains("no socket")
    });
    let proxy = Proxy::start(&sock);
    tui.wait_for_secs("the reconnection", 30, |t| t.contains("Containers ·"));
    proxy.cut();
    tui.wait_for_secs("the engine gone again", 30, |t| {
        t.contains("reconnects by itself")
    });
    let proxy = Proxy::start(&sock);
    tui.wait_for_secs("the second reconnection", 30, |t| {
        t.contains("Containers ·")
    });
    quit(&tui);
    proxy.cut();
}

/// Opens the shell dialog on the Images tab's row holding `tag`, moving down until it is there.
fn open_shell_dialog_on(tui: &Session, tag: &str) -> String {
    for _ in 0..50 {
        tui.keys(&["s"]);
        let screen = tui.wait_for_secs("the shell dialog", 10, |t| t.contains("Shell · Space GPU"));
        if screen.contains(&format!("Image  {tag}")) {
            return screen;
        }
        tui.keys(&["Escape"]);
        tui.wait_for_secs("the dialog closed", 10, |t| {
            !t.contains("Shell · Space GPU")
        });
        tui.keys(&["j"]);
    }
    panic!("{tag} was not found in the Images tab");
}

#[test]
fn a_shell_from_the_images_tab_suspends_the_tui_and_comes_back() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_shell_from_the_images_tab_suspends_the_tui_and_comes_back") {
        return;
    }
    let tag = format!("{}:shell", unique("gpudeck-test/e2e-shell"));
    busybox_image(&tag, &["CUDA_VERSION=12.4.1"]);
    let _image = ImageGuard(tag.clone());
    let tui = tui("shell", "");
    tui.keys(&["5"]);
    tui.wait_for_secs("our image listed", 20, |t| t.contains(&tag));
    // Both simulated GPUs run a training job: none is chosen for us. Start without GPUs.
    let dialog = open_shell_dialog_on(&tui, &tag);
    assert!(dialog.contains("busy: "), "{dialog}");
    assert!(!dialog.contains("[x]"), "{dialog}");
    tui.keys(&["Enter"]);
    // busybox's ash prompt: `/workspace #` as root (the tests run as root), `$` otherwise.
    tui.wait_for_secs("the shell's prompt", 30, |t| {
        t.contains("opening a shell in")
            && t.lines()
                .any(|l| l.starts_with("/workspace ") && (l.contains('#') || l.contains('$')))
    });
    tui.keys(&["echo $((6*7))", "Enter"]);
    tui.wait_for_secs("the command's output", 10, |t| {
        t.lines().any(|l| l.trim() == "42")
    });
    tui.keys(&["exit", "Enter"]);
    tui.wait_for_secs("the dashboard again", 20, |t| {
        t.contains("shell in") && t.contains("ended with exit code 0") && t.contains("5 Images")
    });
    // With GPUs on this engine (no NVIDIA runtime) the refusal is explained, then Enter returns.
    open_shell_dialog_on(&tui, &tag);
    tui.keys(&["a", "Enter"]);
    tui.wait_for_secs("the explained refusal", 30, |t| {
        t.contains("NVIDIA Container Toolkit is not configured for Docker")
            && t.contains("Press Enter to return to gpudeck")
    });
    tui.keys(&["Enter"]);
    tui.wait_for_secs("the dashboard with the reason", 20, |t| {
        t.contains("did not start") && t.contains("5 Images")
    });
    quit(&tui);
}

/// Removes the test's image even when the test fails.
struct ImageGuard(String);

impl Drop for ImageGuard {
    fn drop(&mut self) {
        // A shell left behind by a failed run of the test goes first, or the image stays.
        let ids = Command::new("docker")
            .args(["ps", "-aq", "--filter", &format!("ancestor={}", self.0)])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for id in ids.split_whitespace() {
            let _ = Command::new("docker").args(["rm", "-f", id]).output();
        }
        let _ = Command::new("docker").args(["rmi", "-f", &self.0]).output();
    }
}

/// The ids of the containers made from `image`, running or not.
fn containers_of(image: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("ancestor={image}")])
        .output()
        .expect("docker runs");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_dashboard_shell_whose_pane_is_killed_takes_its_container_with_it() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_dashboard_shell_whose_pane_is_killed_takes_its_container_with_it") {
        return;
    }
    let tag = format!("{}:hup", unique("gpudeck-test/e2e-shell"));
    busybox_image(&tag, &["CUDA_VERSION=12.4.1"]);
    let _image = ImageGuard(tag.clone());
    let tui = Session::start_with(
        "docker-shell-hup",
        120,
        32,
        "GPUDECK_SIM=gpus=2",
        "--demo",
        Dirs::new(),
    );
    tui.keys(&["5"]);
    tui.wait_for_secs("our image listed", 20, |t| t.contains(&tag));
    open_shell_dialog_on(&tui, &tag);
    tui.keys(&["Enter"]);
    tui.wait_for_secs("the shell's prompt", 30, |t| {
        t.lines()
            .any(|l| l.starts_with("/workspace ") && (l.contains('#') || l.contains('$')))
    });
    assert_eq!(containers_of(&tag).len(), 1, "one shell container");
    tui.tmux(&["kill-pane", "-t", &tui.name]);
    // The hang-up reaches gpudeck at once and the removal is one engine call: a deadline far
    // past either, so only a container that stays behind fails.
    let started = std::time::Instant::now();
    while !containers_of(&tag).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the shell's container is still there 60 s after its pane was killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "the shell's container was gone {:.2} s after its pane was killed",
        started.elapsed().as_secs_f64()
    );
}
