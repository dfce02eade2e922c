//! The Compat tab on simulated GPUs and injected engine updates: verdicts, the reasons pane, the pull question.

use crate::support;

use gpudeck::app::action::{Action, Command, DockerCommand, Tab};
use gpudeck::app::compat::CompatView;
use gpudeck::app::state::{AppState, Overlay};
use gpudeck::compat::{CompatData, Level};
use gpudeck::config::{Config, Theme};
use gpudeck::docker::update::DockerUpdate;
use gpudeck::docker::{EngineInfo, ImageFacts, ImageInfo};
use gpudeck::pull::Catalog;
use gpudeck::ui;
use gpudeck::ui::style::Styles;
use ratatui::layout::Rect;
use support::demo::feed;
use support::screen::{find, render, text};

fn engine_info(runtimes: &[&str]) -> EngineInfo {
    EngineInfo {
        server_version: "20.10.24".into(),
        api_version: "1.41".into(),
        os: "Debian GNU/Linux 12".into(),
        docker_root_dir: "/var/lib/docker".into(),
        runtimes: runtimes.iter().map(|r| r.to_string()).collect(),
        default_runtime: "runc".into(),
        cdi_spec_dirs: vec![],
        nvidia_cdi: false,
        nvidia_hook: false,
        cgroup_version: "1".into(),
    }
}

/// Two A100s on a CUDA 12.2 driver, an engine with the given runtimes, one local TF 2.17 image.
fn state(spec: &str, runtimes: &[&str], read_only: bool) -> AppState {
    let mut s = AppState::new(&Config::default(), "testhost".into(), read_only);
    s.docker.catalog = Catalog::load(None).0.entries().to_vec();
    s.compat = CompatView::new(CompatData::builtin());
    feed(&mut s, spec, 1);
    s.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(engine_info(runtimes)),
    });
    s.apply_docker(DockerUpdate::Images(vec![ImageInfo {
        id: "sha256:abcdef0123456789".into(),
        tags: vec!["tensorflow/tensorflow:2.17.0-gpu".into()],
        digests: vec![],
        size_bytes: 3_500_000_000,
        created: 1_700_000_000,
        facts: ImageFacts {
            cuda: Some("12.3.2".into()),
            cudnn: Some("8.9.7".into()),
            tensorflow: Some("2.17.0".into()),
            ..ImageFacts::default()
        },
    }]));
    s.update(Action::SelectTab(Tab::Compat));
    s
}

const A100_122: &str = "profile=a100-pcie,gpus=2,driver=535.183.01,cuda=12020,frozen=60";

#[test]
fn the_local_image_comes_first_and_the_host_is_summarised() {
    let s = state(A100_122, &["runc"], false);
    let board = s
        .compat
        .board
        .as_ref()
        .expect("a board once driver and engine are known");
    assert_eq!(
        board.images[0].image.reference,
        "tensorflow/tensorflow:2.17.0-gpu"
    );
    // CUDA 12.3 on a 12.2 driver: minor-version compatibility, and TF 2.17 has sm_80 code.
    assert_eq!(board.images[0].verdict.image_level, Level::Compat);
    let buf = render(&s, 120, 40);
    insta::assert_snapshot!("compat_tab_a100_on_cuda_12_2", text(&buf));
    let (x, y) = find(&buf, "Docker has no NVIDIA runtime");
    let theme = Theme::builtin("dark").expect("theme");
    let styles = Styles::new(&theme);
    let red = styles.error().fg.expect("a colour");
    assert_eq!(
        buf[(x, y)].fg,
        red,
        "a missing runtime is shown as a failure"
    );
    // Without a runtime no image gets a GPU: every row says so, as `gpudeck compat` does.
    assert_eq!(board.images[0].verdict.level, Level::WontRun);
    let (x, y) = find(&buf, "✗ will not run    tensorflow/tensorflow:2.17.0-gpu");
    assert_eq!(buf[(x, y)].fg, red);
    assert!(!text(&buf).contains("✓ runs "), "{}", text(&buf));
    assert!(
        text(&buf).contains("Best TensorFlow ✗ tensorflow/tensorflow:2.15.0-gpu"),
        "{}",
        text(&buf)
    );
    // With the NVIDIA runtime the rows are the image's own verdicts.
    let s = state(A100_122, &["nvidia", "runc"], false);
    let buf = render(&s, 120, 40);
    let (x, y) = find(&buf, "✓ runs ");
    assert_eq!(buf[(x, y)].fg, styles.ok().fg.expect("a colour"));
    let (x, y) = find(&buf, "~ runs via compat");
    assert_eq!(buf[(x, y)].fg, styles.warn().fg.expect("a colour"));
    assert!(text(&buf).contains("Best TensorFlow ✓ tensorflow/tensorflow:2.15.0-gpu"));
}

#[test]
fn the_reasons_pane_follows_the_selection_and_names_an_image_that_runs() {
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    let row = s
        .compat
        .board
        .as_ref()
        .unwrap()
        .images
        .iter()
        .position(|a| a.image.reference == "nvcr.io/nvidia/pytorch:25.12-py3")
        .unwrap();
    s.update(Action::Top);
    for _ in 0..row {
        s.update(Action::Down);
    }
    let screen = text(&render(&s, 120, 40));
    assert!(
        screen.contains("requires CUDA 13.1 (NVIDIA_REQUIRE_CUDA)"),
        "{screen}"
    );
    assert!(
        screen.contains("fix: install NVIDIA driver 590.44.01 or newer (CUDA 13.1)"),
        "{screen}"
    );
    assert!(screen.contains("runs here"), "{screen}");
    assert!(screen.contains("Docker has the NVIDIA runtime"), "{screen}");
}

#[test]
fn pulling_from_the_compat_tab_asks_with_the_verdict_first() {
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    // The local image is already there.
    s.update(Action::Top);
    assert!(s.update(Action::PullSelected).is_empty());
    assert!(s.status.as_ref().unwrap().text.contains("already pulled"));
    // A catalog image that will not run: the question carries the reason and the alternative.
    let row = s
        .compat
        .board
        .as_ref()
        .unwrap()
        .images
        .iter()
        .position(|a| a.image.reference == "tensorflow/tensorflow:2.20.0-gpu")
        .unwrap();
    s.update(Action::SelectRow(row));
    assert!(s.update(Action::PullSelected).is_empty());
    let Overlay::Confirm(c) = &s.overlay else {
        panic!("a question: {:?}", s.overlay)
    };
    assert_eq!(c.question, "Pull tensorflow/tensorflow:2.20.0-gpu?");
    // The A100 has sm_80 code in TF 2.20; its CUDA 12.5 runs on 12.2 by minor-version compatibility.
    assert_eq!(c.details[0], "Verdict here: runs via compat");
    assert!(
        c.details
            .iter()
            .any(|d| d.contains("minor-version compatibility")),
        "{:?}",
        c.details
    );
    assert!(
        c.details
            .iter()
            .any(|d| d == "tensorflow/tensorflow:2.15.0-gpu runs here"),
        "{:?}",
        c.details
    );
    let commands = s.update(Action::Confirm);
    assert_eq!(
        commands,
        vec![Command::Docker(DockerCommand::Pull(
            "tensorflow/tensorflow:2.20.0-gpu".into()
        ))]
    );
    // Read-only mode refuses.
    let mut ro = state(A100_122, &["nvidia"], true);
    ro.update(Action::SelectRow(row));
    assert!(ro.update(Action::PullSelected).is_empty());
    assert_eq!(ro.overlay, Overlay::None);
}

#[test]
fn verdicts_follow_the_engine_and_the_image_list() {
    let mut s = state(A100_122, &["runc"], false);
    let runtime = |s: &AppState| s.compat.board.as_ref().unwrap().host.runtime;
    assert_eq!(runtime(&s), gpudeck::compat::GpuRuntime::Missing);
    s.apply_docker(DockerUpdate::Unavailable {
        host: "unix:///var/run/docker.sock".into(),
        title: "Docker is not running".into(),
        message: "connection refused".into(),
        fix: "start it".into(),
    });
    assert_eq!(runtime(&s), gpudeck::compat::GpuRuntime::Unknown);
    let board = s.compat.board.as_ref().unwrap();
    assert!(
        board
            .images
            .iter()
            .all(|a| a.image.source == gpudeck::compat::ImageSource::Catalog),
        "the local images went with the engine"
    );
    // A click on a row selects it.
    let buf = render(&s, 120, 40);
    let (_, y) = find(&buf, "tensorflow/tensorflow:2.19.0-gpu ");
    let row = ui::click(Rect::new(0, 0, 120, 40), &s, 30, y);
    let Some(Action::SelectRow(r)) = row else {
        panic!("{row:?}")
    };
    s.update(Action::SelectRow(r));
    assert_eq!(
        s.compat.selected_assessment().unwrap().image.reference,
        "tensorflow/tensorflow:2.19.0-gpu"
    );
}

#[test]
fn the_pull_picker_shows_each_catalog_image_verdict() {
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenPullPicker);
    for c in "tensorflow 2.1".chars() {
        s.update(Action::FilterInput(c));
    }
    let buf = render(&s, 120, 40);
    let screen = text(&buf);
    let line = |needle: &str| {
        screen
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} not in the picker:\n{screen}"))
            .to_string()
    };
    assert!(line("tensorflow/tensorflow:2.15.0-gpu ").contains("✓ runs"));
    assert!(line("tensorflow/tensorflow:2.19.0-gpu ").contains("~ runs via compat"));
    // Not the selected (first, 2.19) row, whose colours are the selection's.
    let (x, y) = find(&buf, "~ runs via compat tensorflow/tensorflow:2.18.0-gpu ");
    let theme = Theme::builtin("dark").expect("theme");
    assert_eq!(
        buf[(x, y)].fg,
        Styles::new(&theme).warn().fg.expect("a colour")
    );
}

#[test]
fn the_pull_picker_lists_triton_images_and_marks_one_too_new_for_the_driver() {
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenPullPicker);
    for c in "tritonserver".chars() {
        s.update(Action::FilterInput(c));
    }
    let buf = render(&s, 120, 40);
    let screen = text(&buf);
    for release in ["25.10", "25.08", "25.03", "24.04", "24.01"] {
        let reference = format!("nvcr.io/nvidia/tritonserver:{release}-py3");
        assert!(screen.contains(&reference), "{reference} not in:\n{screen}");
    }
    let line = screen
        .lines()
        .find(|l| l.contains("nvcr.io/nvidia/tritonserver:25.08-py3"))
        .unwrap_or_else(|| panic!("not in the picker:\n{screen}"));
    assert!(line.contains("✗ will not run"), "{screen}");
}

#[test]
fn the_pull_picker_lists_nemo_images_with_the_verdict_of_their_cuda() {
    // A CUDA 12.9 driver: NeMo Framework 25.09 (CUDA 12.9.1) runs, the CUDA 13 releases do not.
    let mut s = state(
        "gpus=1,driver=575.57.08,cuda=12090,frozen=60",
        &["nvidia", "runc"],
        false,
    );
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenPullPicker);
    for c in "nvidia/nemo".chars() {
        s.update(Action::FilterInput(c));
    }
    let buf = render(&s, 120, 40);
    let screen = text(&buf);
    let line = |release: &str| {
        let reference = format!("nvcr.io/nvidia/nemo:{release}");
        screen
            .lines()
            .find(|l| l.contains(&reference))
            .unwrap_or_else(|| panic!("{reference} not in the picker:\n{screen}"))
            .to_string()
    };
    assert!(line("25.09").contains("✓ runs"), "{screen}");
    for release in ["25.11", "26.02", "26.04", "26.06"] {
        assert!(line(release).contains("✗ will not run"), "{screen}");
    }
}

#[test]
fn without_the_nvidia_runtime_the_pull_picker_marks_every_image_and_says_why() {
    let mut s = state(A100_122, &["runc"], false);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenPullPicker);
    for c in "tensorflow 2.15".chars() {
        s.update(Action::FilterInput(c));
    }
    let buf = render(&s, 120, 40);
    let screen = text(&buf);
    let line = screen
        .lines()
        .find(|l| l.contains("tensorflow/tensorflow:2.15.0-gpu "))
        .unwrap_or_else(|| panic!("not in the picker:\n{screen}"));
    assert!(line.contains("✗ will not run"), "{screen}");
    assert!(
        screen.contains("Docker has no NVIDIA runtime and no NVIDIA CDI spec"),
        "{screen}"
    );
    assert!(screen.contains("nvidia-ctk runtime configure"), "{screen}");
    assert!(screen.contains("systemctl restart docker`"), "{screen}");
}

/// Image references are identifiers: at every width the picker shows each one whole, or cut
/// in the middle with its tag kept (`nvcr.io/nvi…:25.08-py3`), never cut from the right into
/// a reference that reads as another (`nvcr.io/nvid`, as it did at 40 columns).
#[test]
fn the_pull_picker_cuts_references_in_the_middle_keeping_the_tag() {
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenPullPicker);
    for c in "nvidia".chars() {
        s.update(Action::FilterInput(c));
    }
    let Overlay::Pull(picker) = &s.overlay else {
        panic!("the picker is open");
    };
    let references: Vec<String> = picker
        .matches(&s.docker.catalog)
        .iter()
        .map(|e| e.reference.clone())
        .collect();
    assert!(references.len() > 10, "{references:?}");
    for width in 40..=130u16 {
        let buf = render(&s, width, 30);
        let w = width.min(100);
        let x0 = (width - w) / 2 + 1;
        let mut shown = 0;
        for y in 0..30 {
            let line: String = (x0..x0 + w - 2).map(|x| buf[(x, y)].symbol()).collect();
            let line = line.trim_matches('│');
            let Some(word) = line.split_whitespace().find(|w| w.contains('/')) else {
                continue;
            };
            let whole = references.iter().any(|r| r == word);
            let cut = word.split_once('…').is_some_and(|(a, b)| {
                references.iter().any(|r| {
                    // The end kept is the tag's (its end at least), never the repository's.
                    let tag = &r[r.rfind(':').expect("a tag") + 1..];
                    r.starts_with(a)
                        && r.ends_with(b)
                        && (b.ends_with(&format!(":{tag}"))
                            || tag.ends_with(b.trim_start_matches(':')))
                })
            });
            assert!(
                whole || cut,
                "at {width}: {word:?} is not a reference, whole or cut in the middle:\n{}",
                text(&buf)
            );
            shown += 1;
        }
        assert!(shown >= 10, "at {width}: {shown} rows:\n{}", text(&buf));
        assert!(
            width < 80 || text(&buf).contains("CUDA"),
            "at {width}: CUDA stays from 80 columns\n{}",
            text(&buf)
        );
    }
    // The longest references in the catalog are whole at 80 columns, with their CUDA.
    let long = "pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime";
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    s.update(Action::SelectTab(Tab::Images));
    s.update(Action::OpenPullPicker);
    for c in "2.11.0-cuda12.8".chars() {
        s.update(Action::FilterInput(c));
    }
    let screen = text(&render(&s, 80, 30));
    let line = screen
        .lines()
        .find(|l| l.contains(long))
        .unwrap_or_else(|| panic!("{long} not whole:\n{screen}"));
    assert!(line.contains("CUDA 12.8"), "{screen}");
}

#[test]
fn n_and_shift_n_jump_between_images_that_will_not_run() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use gpudeck::app::keymap::{action_for, bindings};
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    let keymap = bindings();
    let press = |s: &AppState, c: char, m: KeyModifiers| {
        action_for(s, &keymap, KeyEvent::new(KeyCode::Char(c), m))
    };
    assert_eq!(
        press(&s, 'n', KeyModifiers::NONE),
        Some(Action::NextWontRun)
    );
    assert_eq!(
        press(&s, 'N', KeyModifiers::SHIFT),
        Some(Action::PrevWontRun)
    );
    let levels: Vec<Level> = s
        .compat
        .board
        .as_ref()
        .unwrap()
        .images
        .iter()
        .map(|a| a.verdict.level)
        .collect();
    let wont: Vec<usize> = (0..levels.len())
        .filter(|&i| levels[i] == Level::WontRun)
        .collect();
    assert!(wont.len() >= 2 && wont[0] > 0, "{levels:?}");
    s.update(Action::Top);
    s.update(Action::NextWontRun);
    assert_eq!(s.compat.selected, wont[0]);
    s.update(Action::NextWontRun);
    assert_eq!(s.compat.selected, wont[1]);
    s.update(Action::PrevWontRun);
    assert_eq!(s.compat.selected, wont[0]);
    // Before the first one, N wraps round to the last and says so.
    s.update(Action::PrevWontRun);
    assert_eq!(s.compat.selected, *wont.last().unwrap());
    assert!(
        s.status.as_ref().unwrap().text.contains("back to the last"),
        "{:?}",
        s.status
    );
    s.update(Action::NextWontRun);
    assert_eq!(s.compat.selected, wont[0]);
    // The selected row on screen is the image that will not run, shown red when not selected.
    let buf = render(&s, 120, 40);
    let reference = s
        .compat
        .selected_assessment()
        .unwrap()
        .image
        .reference
        .clone();
    let (x, y) = find(&buf, &format!("✗ will not run    {reference} "));
    let theme = Theme::builtin("dark").expect("theme");
    let styles = Styles::new(&theme);
    assert_eq!(buf[(x, y)].bg, styles.selected().bg.expect("a colour"));
    assert!(
        text(&buf).contains(&format!("✗ will not run    {reference} ")),
        "{}",
        text(&buf)
    );
    // Help lists the key on this tab.
    s.update(Action::ToggleHelp);
    let help = text(&render(&s, 120, 40));
    assert!(
        help.contains("next/previous image that will not run here"),
        "{help}"
    );
}

#[test]
fn n_says_so_when_no_image_will_not_run() {
    let mut s = state(A100_122, &["nvidia", "runc"], false);
    // Only the local image and no catalog: it runs via compat.
    s.docker.catalog.clear();
    s.refresh_compat();
    s.update(Action::NextWontRun);
    assert_eq!(s.compat.selected, 0);
    let status = s.status.as_ref().expect("a status line");
    assert!(
        status.text.contains("no image here is \"will not run\""),
        "{}",
        status.text
    );
}

#[test]
fn at_80x24_the_why_pane_starts_with_what_stops_the_image_and_its_fix() {
    let s = state(A100_122, &["runc"], false);
    let buf = render(&s, 80, 24);
    let screen = text(&buf);
    let why: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.contains("┌ Why "))
        .collect();
    assert!(why.len() > 3, "{screen}");
    assert!(
        why[1].contains("✗ Docker has no NVIDIA runtime and no NVIDIA CDI spec"),
        "{screen}"
    );
    // No fix is cut off at the edge: the summary leaves it to the pane when it does not fit.
    assert!(
        !screen
            .lines()
            .any(|l| l.contains("fix:") && l.contains("nvidia-conta") && !l.contains("toolkit")),
        "{screen}"
    );
    let pane = why.join("\n");
    assert!(
        pane.contains("fix: install nvidia-container-toolkit"),
        "{screen}"
    );
    let (x, y) = find(&buf, "✗ Docker has no NVIDIA runtime");
    let theme = Theme::builtin("dark").expect("theme");
    assert_eq!(
        buf[(x, y)].fg,
        Styles::new(&theme).error().fg.expect("a colour")
    );
}
