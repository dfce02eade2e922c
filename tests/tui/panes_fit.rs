//! Short and narrow terminals say what they hide, and identifiers users copy are drawn whole:
//! the GPUs list's `1-6 of 8 ↓` and its scrolling, the UUID in the GPU detail, the Topology
//! links pane's count of peers, the Doctor detail's fix first and its scrolling, at 80x24,
//! 80x12 and 40x10.

use crate::support;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::state::AppState;
use gpudeck::app::App;
use gpudeck::config::{Config, Theme};
use gpudeck::doctor::{Check, DoctorReport, Family, Status, SCHEMA};
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use support::demo::demo_state;
use support::screen::{render, text};

const EIGHT: &str = "gpus=8,seed=42,frozen=200";

/// `a-b of n` (or `a of n`) in `line`, as 1-based first and last and the total.
fn marker(line: &str) -> Option<(usize, usize, usize)> {
    let at = line.find(" of ")?;
    let range = line[..at].rsplit(' ').next()?;
    let total: usize = line[at + 4..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    let (a, b) = match range.split_once('-') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let a = range.parse().ok()?;
            (a, a)
        }
    };
    Some((a, b, total))
}

/// The GPUs tab's list as drawn: its title line and the indices of the GPU rows in it, the
/// selected one marked.
struct ListShown {
    title: String,
    rows: Vec<usize>,
    selected: Option<usize>,
}

fn gpu_list(screen: &str) -> ListShown {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.starts_with("┌ GPUs"))
        .unwrap_or_else(|| panic!("no GPU list:\n{screen}"));
    let mut rows = Vec::new();
    let mut selected = None;
    // The header line, then one row per GPU until the bottom border.
    for line in lines[top + 2..].iter().take_while(|l| !l.starts_with('└')) {
        let inside = line.trim_start_matches('│');
        let marked = inside.starts_with('▶');
        let Some(index) = inside
            .trim_start_matches('▶')
            .split_whitespace()
            .next()
            .and_then(|t| t.parse::<usize>().ok())
        else {
            continue;
        };
        rows.push(index);
        if marked {
            selected = Some(index);
        }
    }
    ListShown {
        title: lines[top].to_string(),
        rows,
        selected,
    }
}

/// The list shows a run of GPUs that contains the selected one, and says so truly when it is
/// not all of them.
fn assert_list_tells_the_truth(state: &AppState, w: u16, h: u16, min_rows: usize) {
    let screen = text(&render(state, w, h));
    let shown = gpu_list(&screen);
    let n = state.gpu_count();
    assert!(
        shown.rows.len() >= min_rows.min(n),
        "at {w}x{h} the list shows {} GPUs:\n{screen}",
        shown.rows.len()
    );
    assert_eq!(
        shown.selected,
        Some(state.selected_gpu),
        "the selected GPU is on screen at {w}x{h}:\n{screen}"
    );
    let first = shown.rows[0];
    let expected: Vec<usize> = (first..first + shown.rows.len()).collect();
    assert_eq!(shown.rows, expected, "consecutive GPUs:\n{screen}");
    match marker(&shown.title) {
        None => assert_eq!(shown.rows.len(), n, "every GPU or a marker:\n{screen}"),
        Some((a, b, total)) => {
            assert_eq!(total, n, "the total is true:\n{screen}");
            assert_eq!(
                (a - 1, b - 1),
                (first, first + shown.rows.len() - 1),
                "{screen}"
            );
            assert_eq!(
                shown.title.contains('↓'),
                b < n,
                "↓ iff more below:\n{screen}"
            );
            assert_eq!(
                shown.title.contains('↑'),
                a > 1,
                "↑ iff more above:\n{screen}"
            );
        }
    }
}

#[test]
fn a_short_gpu_list_says_which_gpus_it_shows_and_scrolls_with_the_selection() {
    let mut state = demo_state(EIGHT, 3);
    // 80x24 shows all eight and the detail; 80x12 at least three, no detail of under 4 rows;
    // 40x10 still three.
    let screen = text(&render(&state, 80, 24));
    assert_eq!(gpu_list(&screen).rows.len(), 8, "{screen}");
    assert!(marker(&gpu_list(&screen).title).is_none(), "{screen}");
    assert!(
        screen.contains("UUID") || screen.contains("GPU-"),
        "{screen}"
    );
    let short = text(&render(&state, 80, 12));
    assert!(
        gpu_list(&short).title.contains("1-6 of 8 ↓"),
        "the list takes the rows of a detail too small to show:\n{short}"
    );
    let mut markers = Vec::new();
    for _ in 0..8 {
        for (w, h) in [(80, 24), (80, 12), (40, 10)] {
            assert_list_tells_the_truth(&state, w, h, 3);
        }
        markers.push(gpu_list(&text(&render(&state, 40, 10))).title);
        state.update(Action::Down);
    }
    assert!(
        markers.last().is_some_and(|m| m.contains("of 8 ↑")),
        "at the last GPU the marker points up only: {markers:?}"
    );
    markers.dedup();
    assert!(
        markers.len() >= 3,
        "scrolling moves the marker: {markers:?}"
    );
    // A click on a scrolled list picks the GPU drawn on that row.
    let screen = text(&render(&state, 80, 12));
    let y = screen
        .lines()
        .position(|l| l.starts_with("│  4  "))
        .unwrap_or_else(|| panic!("GPU 4 listed:\n{screen}"));
    assert_eq!(
        gpudeck::ui::click(Rect::new(0, 0, 80, 12), &state, 10, y as u16),
        Some(Action::SelectRow(4))
    );
    // Back up: the list follows the selection to the top.
    state.update(Action::Top);
    assert_list_tells_the_truth(&state, 40, 10, 3);
    assert!(gpu_list(&text(&render(&state, 40, 10)))
        .title
        .contains(" 1-"));
}

/// Every line of the GPU detail that holds part of the UUID: the UUID beside its label, alone,
/// or split over lines with nothing else on them.
fn assert_uuid_whole(state: &AppState, w: u16, h: u16) {
    let uuid = state.data().expect("data").inventory.gpus[state.selected_gpu]
        .uuid
        .clone();
    let screen = text(&render(state, w, h));
    if screen.contains(&uuid) {
        return;
    }
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(&uuid[..12]))
        .unwrap_or_else(|| panic!("no UUID at {w}x{h}:\n{screen}"));
    let mut joined = String::new();
    for line in &lines[start..] {
        let inside = line.trim_matches('│').trim();
        let piece = inside.strip_prefix("UUID").map_or(inside, str::trim_start);
        if joined.len() >= uuid.len() || !uuid[joined.len()..].starts_with(piece) {
            break;
        }
        joined.push_str(piece);
    }
    assert_eq!(
        joined, uuid,
        "the UUID is whole over its lines at {w}x{h}:\n{screen}"
    );
}

#[test]
fn the_uuid_in_the_gpu_detail_is_whole_at_every_width_and_c_copies_it() {
    let mut state = demo_state(EIGHT, 3);
    state.update(Action::Down);
    let uuid = state.data().expect("data").inventory.gpus[1].uuid.clone();
    assert_eq!(uuid.len(), 40, "a real-length UUID: {uuid}");
    // At 80x24 it stands alone on its line: label and UUID need 49 of the pane's 44 columns.
    let screen = text(&render(&state, 80, 24));
    assert!(screen.contains(&format!("│{uuid}")), "{screen}");
    for (w, h) in [(80, 24), (120, 40), (200, 50), (60, 30), (44, 30), (40, 30)] {
        assert_uuid_whole(&state, w, h);
    }
    // At 40 columns the pane is 38 wide inside: two lines, the first full.
    let narrow = text(&render(&state, 40, 30));
    assert!(
        narrow.contains(&format!("│{}│", &uuid[..38]))
            && narrow.contains(&format!("│{}", &uuid[38..])),
        "{narrow}"
    );
    assert_eq!(
        state.update(Action::CopyGpuUuid),
        vec![Command::Copy {
            what: "the UUID of GPU 1".into(),
            text: uuid,
        }]
    );
}

#[test]
fn c_on_the_gpus_tab_copies_the_selected_uuid_through_the_keymap() {
    let mut app = App::new(
        &Config::default(),
        Theme::builtin("dark").expect("theme"),
        "testhost".into(),
        false,
    );
    support::demo::feed(&mut app.state, EIGHT, 3);
    let area = Rect::new(0, 0, 80, 12);
    let key = |c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    let mut term = Terminal::new(TestBackend::new(80, 12)).expect("terminal");
    for _ in 0..7 {
        app.handle_event(&key('j'), area);
    }
    app.draw(&mut term).expect("draw");
    let buf = term.backend().buffer();
    let screen: String = (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n");
    let shown = gpu_list(&screen);
    assert_eq!(shown.selected, Some(7), "{screen}");
    assert!(shown.title.contains("3-8 of 8 ↑"), "{screen}");
    let uuid = app.state.data().expect("data").inventory.gpus[7]
        .uuid
        .clone();
    assert_eq!(
        app.handle_event(&key('c'), area).commands,
        [Command::Copy {
            what: "the UUID of GPU 7".into(),
            text: uuid,
        }]
    );
}

/// The peers named in the links pane (rows `  GPUn  …` under the matrix) and its title.
fn links(screen: &str) -> (String, Vec<usize>) {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains("Links from the selected GPU"))
        .unwrap_or_else(|| panic!("no links pane:\n{screen}"));
    let peers = lines[top + 1..]
        .iter()
        .filter_map(|l| l.strip_prefix("│  GPU"))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    (lines[top].to_string(), peers)
}

#[test]
fn the_topology_links_pane_counts_the_peers_it_hides_and_scrolls_them() {
    let mut state = demo_state(EIGHT, 1);
    state.update(Action::SelectTab(Tab::Topology));
    let screen = text(&render(&state, 80, 24));
    let (title, peers) = links(&screen);
    assert_eq!(
        peers,
        [1, 2, 3, 4, 5, 6, 7],
        "every peer at 80x24:\n{screen}"
    );
    assert!(marker(&title).is_none(), "{screen}");
    // 80x20: room for three peers; the title says so, J brings the others, K goes back.
    let screen = text(&render(&state, 80, 20));
    let (title, peers) = links(&screen);
    assert_eq!(peers, [1, 2, 3], "{screen}");
    assert!(title.contains("peers 1-3 of 7 ↓ J/K"), "{screen}");
    state.update(Action::DetailDown);
    let (title, peers) = links(&text(&render(&state, 80, 20)));
    assert_eq!(
        (peers.as_slice(), marker(&title)),
        ([2, 3, 4].as_slice(), Some((2, 4, 7)))
    );
    for _ in 0..20 {
        state.update(Action::DetailDown);
    }
    let (title, peers) = links(&text(&render(&state, 80, 20)));
    assert_eq!(peers, [5, 6, 7], "the last peers, no further");
    assert!(title.contains("5-7 of 7 ↑"), "{title}");
    // Another GPU's links start from its first peer.
    state.update(Action::Down);
    assert_eq!(state.links_scroll, 0);
    let (title, peers) = links(&text(&render(&state, 80, 20)));
    assert_eq!(peers, [0, 2, 3], "{title}");
}

/// The Topology matrix never cuts a cell: at every width from 40 to 200 columns (and at 24 and
/// 12 rows) each header is a whole `GPUn`, each row as many whole cells as there are headers,
/// and where GPUs are left out the title says which (`cols 3-7 of 8`), the selected GPU's
/// among them (at 40 columns it was cut at `GP` with no mark).
#[test]
fn the_topology_matrix_says_which_gpus_it_shows_and_cuts_no_cell() {
    let codes = ["X", "PIX", "PXB", "PHB", "NODE", "SYS", "?"];
    let mut state = demo_state(EIGHT, 1);
    state.update(Action::SelectTab(Tab::Topology));
    for selected in [0usize, 4, 7] {
        while state.selected_gpu < selected {
            state.update(Action::Down);
        }
        for (width, height) in (40..=200)
            .map(|w| (w, 24))
            .chain((40..=90).map(|w| (w, 12)))
        {
            let screen = text(&render(&state, width, height));
            let at = |what: &str| format!("GPU{selected} at {width}x{height}: {what}\n{screen}");
            let lines: Vec<&str> = screen.lines().collect();
            let top = lines
                .iter()
                .position(|l| l.starts_with('┌'))
                .unwrap_or_else(|| panic!("{}", at("no matrix")));
            let title = lines[top];
            let inside = |l: &str| l.trim_start_matches('│').trim_end_matches('│').to_string();
            let header = inside(lines[top + 1]);
            let cols: Vec<usize> = header
                .split_whitespace()
                .map(|w| w.trim_matches(['‹', '›']))
                .filter(|w| !w.is_empty())
                .map(|w| {
                    let n = w.strip_prefix("GPU").unwrap_or_else(|| panic!("{}", at(w)));
                    n.parse().unwrap_or_else(|_| panic!("{}", at(w)))
                })
                .collect();
            let rows: Vec<usize> = lines[top + 2..]
                .iter()
                .take_while(|l| !l.starts_with('└'))
                .map(|l| {
                    let cells: Vec<String> =
                        inside(l).split_whitespace().map(str::to_string).collect();
                    assert_eq!(cells.len(), cols.len() + 1, "{}", at(l));
                    for cell in &cells[1..] {
                        let whole = codes.contains(&cell.as_str())
                            || cell
                                .strip_prefix("NV")
                                .is_some_and(|n| n.parse::<u32>().is_ok());
                        assert!(whole, "{}", at(cell));
                    }
                    let n = cells[0]
                        .strip_prefix("GPU")
                        .unwrap_or_else(|| panic!("{}", at(l)));
                    n.parse().unwrap_or_else(|_| panic!("{}", at(l)))
                })
                .collect();
            for (what, shown) in [("cols", &cols), ("rows", &rows)] {
                assert!(shown.contains(&selected), "{}", at(what));
                assert!(shown.windows(2).all(|w| w[1] == w[0] + 1), "{}", at(what));
                let said = format!(
                    "{what} {}-{} of 8",
                    shown[0] + 1,
                    shown[shown.len() - 1] + 1
                );
                if shown.len() < 8 {
                    assert!(title.contains(&said), "{}", at(&said));
                } else {
                    assert!(!title.contains(what), "{}", at(what));
                }
            }
            assert_eq!(header.starts_with('‹'), cols[0] > 0, "{}", at("‹"));
            assert_eq!(
                header.trim_end().ends_with('›'),
                cols[cols.len() - 1] < 7,
                "{}",
                at("›")
            );
            assert!(
                width < 56 || cols.len() == 8,
                "{}",
                at("every column from 56")
            );
        }
    }
}

fn doctor_report() -> DoctorReport {
    // As many checks as a real diagnosis, so that the list fills the tab and the detail gets
    // its least rows.
    let mut checks: Vec<Check> = (0..16)
        .map(|_| {
            Check::new(
                "nvidia.nvml",
                Family::Nvidia,
                "NVML",
                Status::Pass,
                "NVML 12.580 loaded",
            )
        })
        .collect();
    checks.extend([Check::new(
        "docker.reachable",
        Family::Docker,
        "Docker Engine",
        Status::Fail,
        "Docker is not reachable at unix:///run/user/1000/docker.sock (DOCKER_HOST): \
             connection refused. The default socket /var/run/docker.sock exists and answers; \
             the containers, images, shells and container runs all need the engine, so every \
             one of those views is empty until this is fixed.",
    )
    .with_fix(
        "DOCKER_HOST points at unix:///run/user/1000/docker.sock, where nothing answers: \
             unset it (`unset DOCKER_HOST`) to use /var/run/docker.sock, or correct it",
    )]);
    DoctorReport {
        schema: SCHEMA,
        host: "testhost".into(),
        source: None,
        driver_version: Some("580.65.06".into()),
        cuda_driver_version: None,
        kernel_module_version: Some("580.65.06".into()),
        gpu_count: 8,
        checks,
    }
}

#[test]
fn the_doctor_detail_shows_a_fail_s_fix_first_and_scrolls_the_rest() {
    let mut state = demo_state(EIGHT, 1);
    state.update(Action::SelectTab(Tab::Doctor));
    state.apply_doctor(doctor_report());
    state.update(Action::Bottom);
    let screen = text(&render(&state, 80, 24));
    let lines: Vec<&str> = screen.lines().collect();
    let pane = lines
        .iter()
        .position(|l| l.contains("Docker Engine · docker.reachable"))
        .unwrap_or_else(|| panic!("no detail pane:\n{screen}"));
    assert!(
        lines[pane + 1].contains("FAIL fix: DOCKER_HOST points at"),
        "the fix is the pane's first line:\n{screen}"
    );
    let inside = |l: &str| l.trim_matches('│').trim_end().to_string();
    let fix: Vec<String> = lines[pane + 1..]
        .iter()
        .map(|l| inside(l))
        .take_while(|l| !l.starts_with("found:"))
        .collect();
    assert!(
        fix.join(" ").ends_with("or correct it"),
        "the whole fix is on screen at 80x24:\n{screen}"
    );
    let end = pane
        + lines[pane..]
            .iter()
            .position(|l| l.starts_with('└'))
            .unwrap_or_default();
    let bottom = lines[end];
    let (a, b, total) = marker(bottom).unwrap_or_else(|| panic!("no marker:\n{screen}"));
    assert_eq!((a, b), (1, 4), "{screen}");
    assert!(total > 4 && bottom.contains("J/K"), "{screen}");
    // J scrolls to the end, no further; K comes back; another check starts at its top.
    for _ in 0..30 {
        state.update(Action::DetailDown);
    }
    let screen = text(&render(&state, 80, 24));
    let bottom = screen.lines().nth(end).unwrap_or_default().to_string();
    assert_eq!(marker(&bottom), Some((total - 3, total, total)), "{screen}");
    assert!(
        screen.contains("every") && screen.contains("fixed."),
        "the end of the finding:\n{screen}"
    );
    state.update(Action::Up);
    assert_eq!(state.doctor.detail_scroll, 0);
}

#[test]
fn j_and_k_on_the_doctor_tab_scroll_at_once_after_the_end_through_the_app() {
    let mut app = App::new(
        &Config::default(),
        Theme::builtin("dark").expect("theme"),
        "testhost".into(),
        false,
    );
    support::demo::feed(&mut app.state, EIGHT, 1);
    let area = Rect::new(0, 0, 80, 24);
    let key = |c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    app.handle_event(&key('7'), area);
    app.state.apply_doctor(doctor_report());
    app.handle_event(&key('G'), area);
    let mut term = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    for _ in 0..30 {
        app.handle_event(&key('J'), area);
    }
    app.draw(&mut term).expect("draw");
    let end = app.state.doctor.detail_scroll;
    assert!(end > 0 && end < 30, "clamped to the last line: {end}");
    app.handle_event(&key('K'), area);
    assert_eq!(app.state.doctor.detail_scroll, end - 1, "K moves at once");
}

#[test]
fn a_run_or_service_id_too_long_for_the_title_is_on_a_line_of_its_own_whole() {
    // The Runs tab: the selected run's id in its pane's title at 80 columns; at 40 the title
    // says `run` and the pane's first line is the id, whole.
    let mut state = crate::runs_views::runs_state();
    state.update(Action::SelectTab(Tab::Runs));
    let id = state.runs.selected_run().expect("a run").id.clone();
    let wide = text(&render(&state, 80, 30));
    assert!(wide.contains(&format!("┌ {id} · ")), "{wide}");
    let narrow = text(&render(&state, 40, 30));
    assert!(narrow.contains("┌ run · "), "{narrow}");
    assert!(narrow.contains(&format!("│id {id}")), "{narrow}");
    // The Services tab the same, under the pane's `id` label.
    let state = crate::services_views::state_with_services(false);
    let id = state.services.rows[0].id.clone();
    let wide = text(&render(&state, 80, 24));
    assert!(wide.contains(&format!("┌ {id} · notebook ")), "{wide}");
    let narrow = text(&render(&state, 40, 30));
    assert!(narrow.contains("┌ notebook "), "{narrow}");
    assert!(narrow.contains(&format!("│id       {id}")), "{narrow}");
}
