//! The shell dialog and re-entering kept shells, on simulated GPUs and injected engine updates.

use crate::support;

use std::collections::BTreeMap;

use gpudeck::app::action::{Action, Tab};
use gpudeck::app::shell_dialog::{ShellLaunch, SHELL_LABEL};
use gpudeck::app::state::{AppState, Overlay};
use gpudeck::docker::update::DockerUpdate;
use gpudeck::docker::{ContainerInfo, ContainerState, ImageFacts, ImageInfo};
use support::demo::{engine_info, feed};
use support::screen::{render, text};

fn container(name: &str, labels: &[(&str, &str)]) -> ContainerInfo {
    ContainerInfo {
        id: format!("{name:a>64}"),
        name: name.into(),
        image: "tensorflow/tensorflow:2.17.0-gpu".into(),
        image_id: "sha256:1".into(),
        command: "/bin/bash".into(),
        state: ContainerState::Exited,
        status: "Exited (0)".into(),
        created: 1_700_000_000,
        started_at: None,
        exit_code: Some(0),
        gpus: vec![],
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// The default demo: GPUs 0-5 busy (training, a fine-tune, an inference server), 6 and 7 idle.
fn state(read_only: bool) -> AppState {
    let mut s = AppState::new(
        &gpudeck::config::Config::default(),
        "testhost".into(),
        read_only,
    );
    feed(&mut s, "gpus=8,seed=42,frozen=200", 1);
    s.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(engine_info(&["nvidia", "runc"])),
    });
    s.apply_docker(DockerUpdate::Images(vec![ImageInfo {
        id: "sha256:abc".into(),
        tags: vec!["tensorflow/tensorflow:2.17.0-gpu".into()],
        digests: vec![],
        size_bytes: 1,
        created: 1_700_000_000,
        facts: ImageFacts::default(),
    }]));
    s.apply_docker(DockerUpdate::Containers(vec![
        container("plain", &[]),
        container("gpudeck-shell-1", &[(SHELL_LABEL, "1")]),
    ]));
    s
}

#[test]
fn the_dialog_suggests_a_free_gpu_and_flags_busy_ones() {
    let mut s = state(false);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenShell);
    let Overlay::Shell(d) = &s.overlay else {
        panic!("{:?}", s.overlay)
    };
    assert_eq!(d.image, "tensorflow/tensorflow:2.17.0-gpu");
    let chosen: Vec<u32> = d
        .gpus
        .iter()
        .filter(|g| g.chosen)
        .map(|g| g.index)
        .collect();
    assert_eq!(chosen, vec![6], "the first idle GPU");
    assert!(
        d.gpus[0].busy.as_deref().unwrap().contains("process"),
        "{:?}",
        d.gpus[0]
    );
    assert!(d.gpus[7].busy.is_none());
    let screen = text(&render(&s, 120, 40));
    assert!(screen.contains("[x] GPU 6"), "{screen}");
    assert!(screen.contains("busy: "), "{screen}");
    // Choose GPU 7 too, no network, keep it; Enter hands it to the run loop.
    for _ in 0..7 {
        s.update(Action::Down);
    }
    s.update(Action::FilterInput(' '));
    s.update(Action::FilterInput('n'));
    s.update(Action::FilterInput('k'));
    assert!(s.update(Action::Confirm).is_empty());
    assert_eq!(s.overlay, Overlay::None);
    let Some(ShellLaunch::New {
        image,
        gpus,
        network_none,
        keep,
        ..
    }) = s.pending_shell.take()
    else {
        panic!("a shell to start")
    };
    assert_eq!(image, "tensorflow/tensorflow:2.17.0-gpu");
    assert_eq!(gpus, vec![6, 7]);
    assert!(network_none && keep);
}

#[test]
fn all_toggles_every_gpu_and_escape_starts_nothing() {
    let mut s = state(false);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenShell);
    s.update(Action::FilterInput('a'));
    let Overlay::Shell(d) = &s.overlay else {
        panic!()
    };
    assert!(d.gpus.iter().all(|g| g.chosen));
    s.update(Action::FilterInput('a'));
    let Overlay::Shell(d) = &s.overlay else {
        panic!()
    };
    assert!(d.gpus.iter().all(|g| !g.chosen));
    s.update(Action::Cancel);
    assert_eq!(s.overlay, Overlay::None);
    assert!(s.pending_shell.is_none());
}

#[test]
fn read_only_and_a_missing_engine_refuse() {
    let mut s = state(true);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenShell);
    assert_eq!(s.overlay, Overlay::None);
    assert!(s.status.as_ref().unwrap().text.contains("read-only"));
    let mut s = state(false);
    s.apply_docker(DockerUpdate::Unavailable {
        host: "unix:///var/run/docker.sock".into(),
        title: "down".into(),
        message: "down".into(),
        fix: "start it".into(),
    });
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenShell);
    assert_eq!(s.overlay, Overlay::None);
}

#[test]
fn only_kept_gpudeck_shells_are_reentered() {
    let mut s = state(false);
    s.update(Action::SelectTab(Tab::Containers));
    let row = |s: &AppState, name: &str| {
        s.docker
            .containers
            .iter()
            .position(|c| c.name == name)
            .unwrap()
    };
    let plain = row(&s, "plain");
    s.update(Action::SelectRow(plain));
    s.update(Action::ReenterShell);
    assert!(s.pending_shell.is_none());
    assert!(s
        .status
        .as_ref()
        .unwrap()
        .text
        .contains("is not a gpudeck shell"));
    let shell = row(&s, "gpudeck-shell-1");
    s.update(Action::SelectRow(shell));
    s.update(Action::ReenterShell);
    assert!(matches!(
        s.pending_shell,
        Some(ShellLaunch::Reenter { ref name, .. }) if name == "gpudeck-shell-1"
    ));
}

/// A GPU a live run claims counts as busy in the shell dialog and the new-run form, even before
/// its processes show: the suggestion moves to the next free GPU and the owner is named.
#[test]
fn a_claimed_gpu_is_busy_in_the_dialog_and_the_run_form() {
    use gpudeck::app::state::GpuStatus;
    use gpudeck::claims::{Claim, Owner};
    use gpudeck::runs::watch::RunsUpdate;
    let mut s = state(false);
    let GpuStatus::Ready(data) = &s.gpu else {
        panic!("GPUs read");
    };
    let uuid = data.inventory.gpus[6].uuid.clone();
    s.apply_runs(RunsUpdate::Claimed(vec![Claim {
        owner: Owner::Run {
            id: "20261125-100000-bert-00aa".into(),
            dir: "/runs/bert".into(),
        },
        gpus: vec![uuid],
        holder: None,
        created_ms: 0,
    }]));
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenShell);
    let Overlay::Shell(d) = &s.overlay else {
        panic!("{:?}", s.overlay)
    };
    let chosen: Vec<u32> = d
        .gpus
        .iter()
        .filter(|g| g.chosen)
        .map(|g| g.index)
        .collect();
    assert_eq!(chosen, [7], "the first GPU nobody uses or claims");
    assert_eq!(
        d.gpus[6].busy.as_deref(),
        Some("claimed by run 20261125-100000-bert-00aa")
    );
    s.update(Action::Cancel);
    s.update(Action::SelectTab(Tab::Runs));
    s.update(Action::NewRun);
    let Overlay::RunForm(form) = &s.overlay else {
        panic!("{:?}", s.overlay)
    };
    let chosen: Vec<u32> = form
        .gpus
        .iter()
        .filter(|g| g.chosen)
        .map(|g| g.index)
        .collect();
    assert_eq!(chosen, [7]);
}

/// The demo with verdicts on, an engine with `runtimes`, and a local TF 2.17 image that suits
/// the demo's driver and GPUs.
fn judged_state(runtimes: &[&str]) -> AppState {
    use gpudeck::app::compat::CompatView;
    use gpudeck::compat::CompatData;
    let mut s = state(false);
    s.compat = CompatView::new(CompatData::builtin());
    let mut info = engine_info(&["nvidia", "runc"]);
    info.runtimes = runtimes.iter().map(|r| r.to_string()).collect();
    s.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(info),
    });
    // An image that suits this driver and these GPUs: only the engine stands in the way.
    s.apply_docker(DockerUpdate::Images(vec![ImageInfo {
        id: "sha256:abc".into(),
        tags: vec!["tensorflow/tensorflow:2.17.0-gpu".into()],
        digests: vec![],
        size_bytes: 1,
        created: 1_700_000_000,
        facts: ImageFacts {
            cuda: Some("12.3.2".into()),
            tensorflow: Some("2.17.0".into()),
            ..ImageFacts::default()
        },
    }]));
    s
}

fn red() -> ratatui::style::Color {
    let theme = gpudeck::config::Theme::builtin("dark").expect("theme");
    gpudeck::ui::style::Styles::new(&theme)
        .error()
        .fg
        .expect("a colour")
}

#[test]
fn without_the_nvidia_runtime_the_dialog_says_the_image_gets_no_gpu_and_the_fix() {
    let mut s = judged_state(&["io.containerd.runc.v2", "runc"]);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenShell);
    assert!(matches!(s.overlay, Overlay::Shell(_)), "{:?}", s.overlay);
    let buf = render(&s, 120, 40);
    let screen = text(&buf);
    let (x, y) = support::screen::find(&buf, "✗ will not run");
    assert_eq!(buf[(x, y)].fg, red(), "{screen}");
    assert!(!screen.contains("✓ runs"), "{screen}");
    assert!(
        screen.contains(
            "Docker has no NVIDIA runtime and no NVIDIA CDI spec: no container can be given a GPU"
        ),
        "{screen}"
    );
    // The whole fix is on screen (wrapped at the dialog's edge), down to its last words.
    assert!(
        screen.contains(
            "fix: install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure"
        ),
        "{screen}"
    );
    assert!(
        screen.contains("--runtime=docker`, then `sudo systemctl restart docker`"),
        "{screen}"
    );
}

#[test]
fn the_run_form_shows_the_same_verdict_for_a_container_with_gpus() {
    let open_form = |s: &mut AppState| {
        s.update(Action::SelectTab(Tab::Runs));
        s.update(Action::NewRun);
        for _ in 0..3 {
            s.update(Action::NextTab);
        }
        for c in "tensorflow/tensorflow:2.17.0-gpu".chars() {
            s.update(Action::FilterInput(c));
        }
        let Overlay::RunForm(form) = &s.overlay else {
            panic!("{:?}", s.overlay)
        };
        assert_eq!(form.image, "tensorflow/tensorflow:2.17.0-gpu");
        assert!(form.gpus.iter().any(|g| g.chosen), "a GPU is suggested");
    };
    let mut s = judged_state(&["io.containerd.runc.v2", "runc"]);
    open_form(&mut s);
    let buf = render(&s, 120, 40);
    let screen = text(&buf);
    let (x, y) = support::screen::find(&buf, "Here      ✗ will not run");
    assert_eq!(buf[(x + 10, y)].fg, red(), "{screen}");
    assert!(
        screen.contains("no container can be given a GPU"),
        "{screen}"
    );
    assert!(
        screen.contains("fix: install nvidia-container-toolkit"),
        "{screen}"
    );
    // With the runtime the same image runs, and the form says so.
    let mut s = judged_state(&["nvidia", "runc"]);
    open_form(&mut s);
    let screen = text(&render(&s, 120, 40));
    assert!(screen.contains("Here      ✓ runs"), "{screen}");
    assert!(
        !screen.contains("fix: install nvidia-container-toolkit"),
        "{screen}"
    );
}
