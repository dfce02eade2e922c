//! The list tables (Runs, Containers, Images, Compat, pulls) at 80 and 200 columns: the flexible
//! column takes the spare width, long cells end with `…`, ids are no wider than they are; the `/`
//! filter on every list; the GPU bars growing with the terminal.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::compat::CompatView;
use gpudeck::app::pulls::PullView;
use gpudeck::app::state::AppState;
use gpudeck::app::App;
use gpudeck::compat::CompatData;
use gpudeck::config::{Config, Theme};
use gpudeck::docker::update::DockerUpdate;
use gpudeck::docker::{ContainerInfo, ContainerState, EngineInfo, ImageFacts, ImageInfo};
use gpudeck::pull::{Catalog, PullProgress};
use gpudeck::runs::watch::{RunRow, RunsUpdate};
use gpudeck::runs::RunOwner;
use gpudeck::runs::{Launcher, RunState};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::Terminal;
use support::demo::{demo_state, feed};
use support::screen::{find, render, text};

const NOW: i64 = 1_800_000_000;
const LONG_COMMAND: &str =
    "python train.py --model resnet152 --epochs 90 --batch-size 256 --data /datasets/imagenet";
const LONG_IMAGE: &str =
    "nvcr.io/nvidia/pytorch:24.05-py3-with-a-rather-long-custom-tag-for-testing";

/// The screen line that holds `needle`.
fn line_of(buf: &Buffer, needle: &str) -> String {
    let (_, y) = find(buf, needle);
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

/// Columns between the start of header `a` and the start of header `b` on the same line,
/// less the one space between columns: the width of column `a`.
fn column_width(buf: &Buffer, a: &str, b: &str) -> usize {
    let (xa, ya) = find(buf, a);
    let line = line_of(buf, a);
    let xb = line
        .chars()
        .collect::<Vec<_>>()
        .windows(b.chars().count())
        .enumerate()
        .skip(xa as usize + a.chars().count())
        .find(|(_, w)| w.iter().collect::<String>() == b)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("{b} after {a} on line {ya}:\n{}", text(buf)));
    xb - xa as usize - 1
}

fn run(id: &str, state: RunState, command: &str) -> RunRow {
    RunRow {
        id: id.into(),
        name: "train".into(),
        state,
        launcher: Launcher::PerGpu,
        image: None,
        gpus: vec![0, 1],
        ranks: 2,
        command: command.into(),
        created_ms: (NOW as u64 - 600) * 1000,
        started_ms: Some((NOW as u64 - 600) * 1000),
        ended_ms: None,
        exit_code: None,
        first_failed_rank: None,
        error: None,
        dir: PathBuf::from("/nonexistent"),
        summary: None,
        job: None,
        engine_away: None,
        xids: Vec::new(),
        owner: RunOwner::default(),
    }
}

/// The Runs tab with three runs listed (newest first once listed).
fn runs_state() -> AppState {
    let mut s = demo_state("gpus=2,seed=7,frozen=100", 1);
    s.now = NOW;
    s.update(Action::SelectTab(Tab::Runs));
    s.apply_runs(RunsUpdate::Listed {
        runs: vec![
            run(
                "20270115-070000-bert-00aa",
                RunState::Failed,
                "python finetune.py",
            ),
            run(
                "20270115-080000-resnet-00bb",
                RunState::Running,
                LONG_COMMAND,
            ),
            run(
                "20270115-090000-gpt-00cc",
                RunState::Succeeded,
                "python gen.py",
            ),
        ],
        warnings: vec![],
    });
    s
}

#[test]
fn the_runs_table_gives_the_command_the_spare_width_and_the_id_only_its_length() {
    let s = runs_state();
    let narrow = render(&s, 80, 30);
    let wide = render(&s, 200, 30);
    // The longest short id is "resnet-00bb": 11 columns at both widths, not 140.
    assert_eq!(
        column_width(&narrow, "RUN", "STATE"),
        11,
        "{}",
        text(&narrow)
    );
    assert_eq!(column_width(&wide, "RUN", "STATE"), 11, "{}", text(&wide));
    let cut = line_of(&narrow, "resnet-00bb");
    assert!(cut.contains("python") && cut.contains('…'), "{cut}");
    assert!(!cut.contains("imagenet"), "{cut}");
    let whole = line_of(&wide, "resnet-00bb");
    assert!(
        whole.contains(LONG_COMMAND) && !whole.contains('…'),
        "{whole}"
    );
    let (x80, _) = find(&narrow, "COMMAND");
    let (x200, _) = find(&wide, "COMMAND");
    assert!(
        200 - x200 > 80 - x80 + 100,
        "the command column grows with the terminal"
    );
}

#[test]
fn slash_filters_the_runs_keeps_a_shown_selection_and_esc_clears() {
    let mut s = runs_state();
    assert_eq!(s.runs.selected.as_deref(), Some("20270115-090000-gpt-00cc"));
    s.update(Action::StartFilter);
    for c in "RESNET".chars() {
        s.update(Action::FilterInput(c));
    }
    // The selected run is hidden: the first shown one is selected and followed.
    assert_eq!(
        s.runs.selected.as_deref(),
        Some("20270115-080000-resnet-00bb")
    );
    let screen = text(&render(&s, 100, 30));
    assert!(screen.contains("filter: RESNET▏ · 1 of 3"), "{screen}");
    assert!(
        !screen.contains("gpt-00cc") && !screen.contains("bert-00aa"),
        "{screen}"
    );
    s.update(Action::FilterDone);
    s.update(Action::Down);
    assert_eq!(
        s.runs.selected.as_deref(),
        Some("20270115-080000-resnet-00bb")
    );
    // A word from the command matches too; a click on the first row selects the first shown.
    s.update(Action::StartFilter);
    for _ in 0..6 {
        s.update(Action::FilterBackspace);
    }
    for c in "python".chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    let buf = render(&s, 100, 30);
    assert!(text(&buf).contains("filter: python · 3 of 3"));
    s.update(Action::StartFilter);
    for c in " f".chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    let buf = render(&s, 100, 30);
    assert!(
        text(&buf).contains("filter: python f · 1 of 3"),
        "{}",
        text(&buf)
    );
    let (_, y) = find(&buf, "bert-00aa");
    let area = Rect::new(0, 0, 100, 30);
    assert_eq!(
        gpudeck::ui::click(area, &s, 5, y),
        Some(Action::SelectRow(0))
    );
    let commands = s.update(Action::SelectRow(0));
    assert!(commands.iter().all(|c| matches!(c, Command::Runs(_))));
    assert_eq!(
        s.runs.selected.as_deref(),
        Some("20270115-070000-bert-00aa")
    );
    s.update(Action::FilterClear);
    assert!(s.runs.filter.is_empty());
    assert_eq!(s.runs.shown().len(), 3);
    assert_eq!(
        s.runs.selected.as_deref(),
        Some("20270115-070000-bert-00aa")
    );
    let screen = text(&render(&s, 100, 30));
    assert!(!screen.contains("filter:"), "{screen}");
}

#[test]
fn a_filter_that_hides_every_run_selects_none_and_says_so() {
    let mut s = runs_state();
    s.update(Action::StartFilter);
    for c in "nomatch".chars() {
        s.update(Action::FilterInput(c));
    }
    assert_eq!(s.runs.selected, None);
    let screen = text(&render(&s, 100, 30));
    assert!(screen.contains("filter: nomatch▏ · 0 of 3"), "{screen}");
    assert!(
        screen.contains("No row contains \"nomatch\". Esc clears the filter, / edits it."),
        "{screen}"
    );
    s.update(Action::Down);
    assert_eq!(s.runs.selected, None);
    s.update(Action::FilterClear);
    assert_eq!(s.runs.selected.as_deref(), Some("20270115-090000-gpt-00cc"));
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn screen(term: &Terminal<TestBackend>) -> String {
    let buf = term.backend().buffer();
    text(buf)
}

#[test]
fn typing_slash_then_text_on_the_runs_tab_filters_the_list_in_the_whole_app() {
    let mut app = App::new(
        &Config::default(),
        Theme::builtin("dark").expect("theme"),
        "testhost".into(),
        false,
    );
    feed(&mut app.state, "gpus=2,seed=7,frozen=100", 1);
    app.state.now = NOW;
    let area = Rect::new(0, 0, 100, 30);
    app.state.update(Action::SelectTab(Tab::Runs));
    app.state.apply_runs(RunsUpdate::Listed {
        runs: runs_state().runs.runs.into_iter().rev().collect(),
        warnings: vec![],
    });
    let mut term = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
    for c in "/bert q".chars() {
        app.handle_event(&key(KeyCode::Char(c)), area);
    }
    assert!(!app.state.quit, "q is text while filtering");
    app.draw(&mut term).expect("draw");
    let typed = screen(&term);
    assert!(typed.contains("filter: bert q▏ · 0 of 3"), "{typed}");
    assert!(
        typed.contains("Enter done  Esc clear"),
        "the footer says how to end: {typed}"
    );
    app.handle_event(&key(KeyCode::Backspace), area);
    app.handle_event(&key(KeyCode::Backspace), area);
    app.handle_event(&key(KeyCode::Enter), area);
    app.draw(&mut term).expect("draw");
    let kept = screen(&term);
    assert!(kept.contains("filter: bert · 1 of 3"), "{kept}");
    assert!(
        kept.contains("bert-00aa") && !kept.contains("resnet-00bb"),
        "{kept}"
    );
    assert_eq!(
        app.state.runs.selected.as_deref(),
        Some("20270115-070000-bert-00aa")
    );
    // Out of the prompt, keys are the tab's again; Esc clears the filter.
    app.handle_event(&key(KeyCode::Esc), area);
    app.draw(&mut term).expect("draw");
    let cleared = screen(&term);
    assert!(
        !cleared.contains("filter:") && cleared.contains("resnet-00bb"),
        "{cleared}"
    );
}

fn container(name: &str, image: &str) -> ContainerInfo {
    ContainerInfo {
        id: format!("{name:0>64}").replace(|c: char| !c.is_ascii_hexdigit(), "a"),
        name: name.into(),
        image: image.into(),
        image_id: "sha256:1".into(),
        command: "python train.py".into(),
        state: ContainerState::Running,
        status: "Up 2 hours".into(),
        created: NOW - 7300,
        started_at: Some(NOW - 7200),
        exit_code: None,
        gpus: vec![],
        labels: BTreeMap::new(),
    }
}

fn image(tag: &str, id: &str, pytorch: Option<&str>) -> ImageInfo {
    ImageInfo {
        id: format!("sha256:{id}"),
        tags: vec![tag.into()],
        digests: vec![],
        size_bytes: 3_500_000_000,
        created: NOW - 86_400,
        facts: ImageFacts {
            cuda: Some("12.4.1".into()),
            cudnn: Some("9.1.0".into()),
            pytorch: pytorch.map(String::from),
            ..ImageFacts::default()
        },
    }
}

fn docker_state() -> AppState {
    let mut s = AppState::new(&Config::default(), "testhost".into(), false);
    s.now = NOW;
    s.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(EngineInfo {
            server_version: "20.10.24".into(),
            api_version: "1.41".into(),
            os: "Debian".into(),
            docker_root_dir: "/var/lib/docker".into(),
            runtimes: vec!["runc".into(), "nvidia".into()],
            default_runtime: "runc".into(),
            cdi_spec_dirs: vec![],
            nvidia_cdi: false,
            nvidia_hook: false,
            cgroup_version: "1".into(),
        }),
    });
    s.apply_docker(DockerUpdate::Containers(vec![
        container("trainer", LONG_IMAGE),
        container("notebook", "jupyter/base-notebook:latest"),
        container("db", "postgres:16"),
    ]));
    s.apply_docker(DockerUpdate::Images(vec![
        image(LONG_IMAGE, "abcdef0123456789", Some("2.4.0")),
        image("postgres:16", "0123456789abcdef", None),
    ]));
    s
}

#[test]
fn the_containers_table_gives_the_image_the_spare_width_and_the_name_its_length() {
    let mut s = docker_state();
    s.update(Action::SelectTab(Tab::Containers));
    let narrow = render(&s, 80, 24);
    let wide = render(&s, 200, 24);
    assert_eq!(column_width(&narrow, "NAME", "IMAGE"), "notebook".len());
    assert_eq!(column_width(&wide, "NAME", "IMAGE"), "notebook".len());
    let cut = line_of(&narrow, "trainer");
    assert!(cut.contains("nvcr.io/") && cut.contains('…'), "{cut}");
    let whole = line_of(&wide, "trainer");
    assert!(
        whole.contains(LONG_IMAGE) && !whole.contains('…'),
        "{whole}"
    );
    assert!(column_width(&wide, "IMAGE", "STATE") > column_width(&narrow, "IMAGE", "STATE") + 100);
    // Every column's title sits over its cells: the running state under STATE.
    let (x, y) = find(&wide, "STATE");
    let row = (y + 1..wide.area.height)
        .find(|&r| line_of_row(&wide, r).contains("trainer"))
        .expect("trainer row");
    assert_eq!(
        line_of_row(&wide, row)[x as usize..]
            .trim_start()
            .split(' ')
            .next(),
        Some("running")
    );
}

fn line_of_row(buf: &Buffer, y: u16) -> String {
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

#[test]
fn slash_filters_the_containers_and_esc_clears_when_no_inspect_view_is_open() {
    let mut s = docker_state();
    s.update(Action::SelectTab(Tab::Containers));
    // Running containers by name: db, notebook, trainer.
    assert_eq!(
        s.docker.selected_container_info().map(|c| c.name.as_str()),
        Some("db")
    );
    s.update(Action::StartFilter);
    for c in "NVCR".chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    assert_eq!(
        s.docker.selected_container_info().map(|c| c.name.as_str()),
        Some("trainer")
    );
    assert_eq!(s.docker.shown_containers().len(), 1);
    s.update(Action::Up);
    assert_eq!(
        s.docker.selected_container_info().map(|c| c.name.as_str()),
        Some("trainer")
    );
    let screen = text(&render(&s, 100, 24));
    assert!(screen.contains("filter: NVCR · 1 of 3"), "{screen}");
    assert!(!screen.contains("notebook"), "{screen}");
    // Esc (close view) with no inspect view open clears the filter.
    let esc = gpudeck::app::keymap::action_for(
        &s,
        &gpudeck::app::keymap::bindings(),
        KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
    )
    .expect("Esc is bound");
    s.update(esc);
    assert!(s.docker.container_filter.is_empty());
    assert_eq!(s.docker.shown_containers().len(), 3);
    assert_eq!(
        s.docker.selected_container_info().map(|c| c.name.as_str()),
        Some("trainer")
    );
}

#[test]
fn the_images_table_gives_the_reference_the_spare_width_and_filters() {
    let mut s = docker_state();
    s.update(Action::SelectTab(Tab::Images));
    let narrow = render(&s, 80, 24);
    let wide = render(&s, 200, 24);
    assert_eq!(column_width(&narrow, "ID", "SIZE"), 12, "{}", text(&narrow));
    assert_eq!(column_width(&wide, "ID", "SIZE"), 12);
    // Cut in the middle: the registry and the end of the tag, which tells images apart.
    let cut = line_of(&narrow, "abcdef012345");
    assert!(cut.contains("nvcr.io…-testing "), "{cut}");
    let whole = line_of(&wide, "abcdef012345");
    assert!(
        whole.contains(LONG_IMAGE) && whole.contains("PyTorch 2.4.0"),
        "{whole}"
    );
    assert!(column_width(&wide, "IMAGE", "ID") > column_width(&narrow, "IMAGE", "ID") + 100);

    s.update(Action::StartFilter);
    for c in "postgres".chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    assert_eq!(
        s.docker.selected_image_info().map(|i| i.tags[0].as_str()),
        Some("postgres:16")
    );
    let buf = render(&s, 100, 24);
    assert!(
        text(&buf).contains("filter: postgres · 1 of 2"),
        "{}",
        text(&buf)
    );
    let (_, y) = find(&buf, "postgres:16");
    let area = Rect::new(0, 0, 100, 24);
    assert_eq!(
        gpudeck::ui::click(area, &s, 5, y),
        Some(Action::SelectRow(0))
    );
    assert_eq!(
        gpudeck::ui::click(area, &s, 5, y + 1),
        None,
        "no second row shown"
    );
    s.update(Action::FilterClear);
    assert_eq!(s.docker.shown_images().len(), 2);
}

fn compat_state() -> AppState {
    let mut s = docker_state();
    s.docker.catalog = Catalog::load(None).0.entries().to_vec();
    s.compat = CompatView::new(CompatData::builtin());
    feed(
        &mut s,
        "profile=a100-pcie,gpus=2,driver=535.183.01,cuda=12020,frozen=60",
        1,
    );
    s.update(Action::SelectTab(Tab::Compat));
    s
}

#[test]
fn the_compat_table_gives_the_reference_the_spare_width_and_filters() {
    let mut s = compat_state();
    let narrow = render(&s, 80, 40);
    let wide = render(&s, 200, 40);
    let narrow_text = text(&narrow);
    assert!(
        narrow_text
            .lines()
            .any(|l| l.contains("nvcr.io/nvidia/pytorch:")
                && l.contains('…')
                && l.contains("tag-for-testing ")),
        "{narrow_text}"
    );
    let wide_text = text(&wide);
    let whole: Vec<&str> = wide_text
        .lines()
        .filter(|l| l.contains(LONG_IMAGE))
        .collect();
    assert!(
        !whole.is_empty() && whole.iter().all(|l| !l.contains('…')),
        "{wide_text}"
    );
    assert!(column_width(&wide, "IMAGE", "FROM") > column_width(&narrow, "IMAGE", "FROM") + 80);

    let total = s.compat.len();
    s.update(Action::StartFilter);
    for c in "postgres".chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    assert_eq!(s.compat.shown().len(), 1);
    let selected = s
        .compat
        .selected_assessment()
        .expect("the shown row is selected");
    assert_eq!(selected.image.reference, "postgres:16");
    s.update(Action::Down);
    assert_eq!(
        s.compat
            .selected_assessment()
            .map(|a| a.image.reference.as_str()),
        Some("postgres:16")
    );
    let screen = text(&render(&s, 100, 40));
    assert!(
        screen.contains(&format!("filter: postgres · 1 of {total}")),
        "{screen}"
    );
    // At 80 columns the border cuts the verdict counts, not the filter.
    let screen = text(&render(&s, 80, 40));
    assert!(
        screen.contains(&format!(
            "Will it run here? · filter: postgres · 1 of {total}"
        )),
        "{screen}"
    );
    assert!(
        screen.contains("│V IMAGE"),
        "the one-column verdict keeps its letter: {screen}"
    );
    s.update(Action::FilterClear);
    assert_eq!(s.compat.shown().len(), total);
}

#[test]
fn the_pulls_panel_gives_the_reference_and_the_bar_the_spare_width() {
    let mut s = docker_state();
    s.update(Action::SelectTab(Tab::Images));
    s.docker.pulls.push(PullView {
        id: 1,
        reference: LONG_IMAGE.into(),
        progress: Some(PullProgress {
            layers: vec![],
            bytes_done: 1 << 30,
            bytes_total: 4 << 30,
            rate_bytes_per_sec: 50.0 * 1024.0 * 1024.0,
            eta: Some(Duration::from_secs(60)),
            status_line: String::new(),
        }),
        outcome: None,
    });
    let narrow = render(&s, 80, 24);
    let wide = render(&s, 200, 24);
    let (_, y) = find(&narrow, "Pulls");
    let cut = line_of_row(&narrow, y + 1);
    // Cut in the middle: the registry and the end of the tag stay.
    assert!(
        cut.contains("nvcr.io/")
            && cut.contains("…")
            && cut.contains("-testing ")
            && cut.contains("GiB"),
        "{cut}"
    );
    let (_, y) = find(&wide, "Pulls");
    let whole = line_of_row(&wide, y + 1);
    assert!(whole.contains(LONG_IMAGE), "{whole}");
    let cells = |l: &str| l.chars().filter(|c| *c == '█' || *c == '·').count();
    assert!(
        cells(&whole) > cells(&cut) + 10,
        "the bar grows: {cut}\n{whole}"
    );
}

#[test]
fn a_failed_pulls_fix_is_cut_with_an_ellipsis_and_whole_when_it_fits() {
    let mut s = docker_state();
    s.update(Action::SelectTab(Tab::Images));
    let fix = "Check the host name and port of 127.0.0.1:1, your network and proxy (the \
               Engine's HTTPS_PROXY, not your shell's), and that the registry is running.";
    s.docker.pulls.push(PullView {
        id: 1,
        reference: "127.0.0.1:1/x:1".into(),
        progress: None,
        outcome: Some(gpudeck::app::pulls::PullOutcome::Failed {
            title: "Registry unreachable".into(),
            message: "the registry 127.0.0.1:1 cannot be reached".into(),
            fix: fix.into(),
            retry: false,
        }),
    });
    let narrow = render(&s, 80, 24);
    let (_, y) = find(&narrow, "Pulls");
    let cut = line_of_row(&narrow, y + 1);
    assert!(
        cut.contains("Registry unreachable: Check the host") && cut.contains("…│"),
        "{cut}"
    );
    let wide = render(&s, 200, 24);
    let (_, y) = find(&wide, "Pulls");
    let whole = line_of_row(&wide, y + 1);
    assert!(whole.contains(fix) && !whole.contains('…'), "{whole}");
}

#[test]
fn the_gpu_bars_grow_with_the_terminal() {
    let s = demo_state("gpus=2,seed=7,frozen=100", 3);
    let narrow = render(&s, 80, 24);
    let wide = render(&s, 200, 24);
    let bar_cells = |buf: &Buffer| {
        let line = line_of(buf, " 0  ");
        line.chars().filter(|c| "█▏▎▍▌▋▊▉·".contains(*c)).count()
    };
    assert_eq!(bar_cells(&narrow), 12, "two 6-cell bars at 80 columns");
    assert!(bar_cells(&wide) >= 60, "{}", text(&wide));
    // The titles stay over their columns.
    let (ux, _) = find(&wide, "UTIL");
    let (mx, _) = find(&wide, "MEMORY");
    let row = line_of(&wide, " 0  ");
    let pct = row.char_indices().position(|(_, c)| c == '%').expect("a %");
    assert!(pct > ux as usize && pct < mx as usize, "{row}");
}
