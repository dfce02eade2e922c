//! Panels rendered into a buffer: text snapshots (insta) plus the styles that carry meaning.

use crate::support;

use gpudeck::app::action::{Action, Tab};
use gpudeck::app::keymap::bindings;
use gpudeck::app::state::AppState;
use gpudeck::config::{Config, Theme};
use gpudeck::gpu::collector::GpuUpdate;
use gpudeck::gpu::GpuError;
use gpudeck::ui;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use support::demo::demo_state;

fn theme() -> Theme {
    Theme::builtin("dark").expect("dark theme")
}

fn draw(state: &AppState, w: u16, h: u16) -> Buffer {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    ui::render(area, &mut buf, state, &theme(), &bindings());
    buf
}

fn text(buf: &Buffer) -> String {
    let area = buf.area;
    (0..area.height)
        .map(|y| {
            let line: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Finds the first cell whose row contains `needle`, returning (x, y) of its first character.
fn find(buf: &Buffer, needle: &str) -> Option<(u16, u16)> {
    let t = text(buf);
    t.lines().enumerate().find_map(|(y, line)| {
        line.find(needle)
            .map(|byte| (line[..byte].chars().count() as u16, y as u16))
    })
}

#[test]
fn gpus_tab_at_80x24_with_eight_gpus() {
    let state = demo_state("gpus=8,seed=42,frozen=200", 30);
    let buf = draw(&state, 80, 24);
    insta::assert_snapshot!(text(&buf));
    let (x, y) = find(&buf, "▶ 0").expect("selected GPU row");
    assert_eq!(
        buf[(x, y)].bg,
        theme().selected_bg,
        "the selected GPU is highlighted"
    );
    let (x, y) = find(&buf, "DEMO").expect("demo flag");
    assert_eq!(
        buf[(x, y)].fg,
        theme().warn,
        "the demo is flagged in the warning colour"
    );
}

#[test]
fn gpus_tab_with_few_gpus_shows_history_rows() {
    let mut state = demo_state("gpus=2,seed=42,frozen=200,profile=rtx4090", 30);
    state.update(Action::TogglePower);
    let buf = draw(&state, 120, 36);
    insta::assert_snapshot!(text(&buf));
    assert!(
        find(&buf, " power ").is_some(),
        "the power graph is shown on request"
    );
}

#[test]
fn processes_tab_marks_the_selection() {
    let mut state = demo_state("gpus=4,seed=42,frozen=200", 1);
    state.update(Action::SelectTab(Tab::Processes));
    state.update(Action::Down);
    let buf = draw(&state, 100, 20);
    insta::assert_snapshot!(text(&buf));
    let pid = state.processes.selected_pid.expect("selected").to_string();
    let (x, y) = find(&buf, &pid).expect("selected pid on screen");
    assert_eq!(buf[(x, y)].bg, theme().selected_bg);
}

#[test]
fn topology_matrix_matches_nvidia_smi_codes() {
    let mut state = demo_state("gpus=8,seed=42,frozen=200", 1);
    state.update(Action::SelectTab(Tab::Topology));
    let buf = draw(&state, 100, 30);
    insta::assert_snapshot!(text(&buf));
    assert!(text(&buf).contains("NV"), "NVLink counts shown");
}

/// `gpudeck gpus --json` on the simulation `sim`, through NVML on the simulator library or the
/// in-process demo source.
fn gpus_json(sim: &str, nvml: bool) -> serde_json::Value {
    let dirs = support::Dirs::new();
    let mut cmd = dirs.gpudeck(sim);
    cmd.args(["gpus", "--json"]);
    if nvml {
        cmd.arg("--nvml-lib").arg(support::sim_library());
    } else {
        cmd.arg("--demo");
    }
    let out = cmd.output().expect("gpudeck runs");
    serde_json::from_str(&support::stdout(&out))
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", support::stderr(&out)))
}

/// What `topo -m` shows for GPUs `a` and `b` according to the JSON: `NV#` or the PCIe code.
fn json_cell(doc: &serde_json::Value, a: u64, b: u64) -> String {
    if a == b {
        return "X".into();
    }
    let entry = doc["topology"]
        .as_array()
        .expect("topology")
        .iter()
        .find(|t| {
            let pair = (t["gpu_a"].as_u64(), t["gpu_b"].as_u64());
            pair == (Some(a), Some(b)) || pair == (Some(b), Some(a))
        })
        .unwrap_or_else(|| panic!("no pair {a}-{b} in {doc}"));
    match entry["nvlinks"].as_u64() {
        Some(n) if n > 0 => format!("NV{n}"),
        _ => entry["path_code"].as_str().expect("code").to_string(),
    }
}

/// The cells of the matrix row of GPU `a` in `screen` (text that starts with `GPU<a>`).
fn matrix_row(screen: &str, a: usize) -> Vec<String> {
    let label = format!("GPU{a} ");
    let line = screen
        .lines()
        .map(|l| l.trim_start_matches('│'))
        .find(|l| l.starts_with(&label) && !l.contains("reaches"))
        .unwrap_or_else(|| panic!("no matrix row for GPU{a}:\n{screen}"));
    line.trim_end_matches('│')
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

#[test]
fn topology_matrix_links_pane_and_text_agree_with_gpus_json() {
    for sim in [
        // An HGX H100 board: every link goes through NVSwitches.
        "gpus=8,seed=42,frozen=200",
        // PCIe cards with NVLink bridges of different widths per pair.
        "gpus=4,profile=h100-pcie,bridge=0-1:8;1-2:4;2-3:2;0-3:1,frozen=200",
        // A lost GPU reads no links on either path.
        "gpus=4,seed=42,frozen=200,lost=2",
    ] {
        let doc = gpus_json(sim, false);
        assert_eq!(
            doc["topology"],
            gpus_json(sim, true)["topology"],
            "{sim}: demo vs NVML"
        );
        let n = doc["gpu_count"].as_u64().expect("count") as usize;
        let dirs = support::Dirs::new();
        let cli = support::stdout(
            &dirs
                .gpudeck(sim)
                .args(["gpus", "--demo"])
                .output()
                .expect("runs"),
        );
        let cli = &cli[cli.find("Topology:").expect("topology section")..];
        let mut state = demo_state(sim, 1);
        state.update(Action::SelectTab(Tab::Topology));
        for a in 0..n {
            let screen = text(&draw(&state, 120, 40));
            let expected: Vec<String> = (0..n)
                .map(|b| json_cell(&doc, a as u64, b as u64))
                .collect();
            assert_eq!(
                matrix_row(&screen, a),
                expected,
                "{sim}: Topology tab row {a}\n{screen}"
            );
            assert_eq!(
                matrix_row(cli, a),
                expected,
                "{sim}: gpus text row {a}\n{cli}"
            );
            for (b, cell) in expected.iter().enumerate().filter(|(b, _)| *b != a) {
                let line = screen
                    .lines()
                    .find(|l| l.starts_with(&format!("│  GPU{b} ")))
                    .unwrap_or_else(|| panic!("links pane lacks GPU{b}:\n{screen}"));
                let want = match cell.strip_prefix("NV") {
                    Some("1") => "1 NVLink;".to_string(),
                    Some(k) => format!("{k} NVLinks"),
                    None => "PCIe only".to_string(),
                };
                assert!(
                    line.contains(&want),
                    "{sim}: GPU{a}->GPU{b} wants {want:?}: {line}"
                );
            }
            state.update(Action::Down);
        }
    }
}

#[test]
fn nvswitch_links_are_named_in_the_links_pane() {
    let mut state = demo_state("gpus=8,seed=42,frozen=200", 1);
    state.update(Action::SelectTab(Tab::Topology));
    let buf = draw(&state, 120, 40);
    let (x, y) = find(&buf, "18 NVLinks through NVSwitch").expect("switch links explained");
    assert_eq!(buf[(x, y)].fg, theme().ok, "NVLink pairs in the ok colour");
}

#[test]
fn a_lost_gpus_detail_says_why_and_what_to_do() {
    let mut state = demo_state("gpus=2,seed=42,frozen=200,profile=rtx4090,lost=1", 3);
    state.update(Action::Down);
    let buf = draw(&state, 120, 36);
    let t = text(&buf);
    assert!(
        !t.contains("n/a/"),
        "no empty readings for a lost GPU:\n{t}"
    );
    assert!(t.contains("GPU 1 has fallen off the bus"), "{t}");
    assert!(t.contains("sudo nvidia-smi -r -i 1"), "{t}");
    assert!(t.contains("Xid 79"), "{t}");
    let (x, y) = find(&buf, "LOST: GPU 1").expect("the lost line");
    assert_eq!(buf[(x, y)].fg, theme().error);
}

#[test]
fn no_driver_says_why_and_what_to_do() {
    let mut state = AppState::new(&Config::default(), "testhost".into(), false);
    state.apply_gpu(GpuUpdate::Failed(GpuError::VersionMismatch));
    let buf = draw(&state, 80, 24);
    insta::assert_snapshot!(text(&buf));
    let (x, y) = find(&buf, "Driver/library version mismatch").expect("title");
    assert_eq!(buf[(x, y)].fg, theme().error);
    assert!(text(&buf).contains("--demo"));
}

#[test]
fn help_overlay_is_generated_from_the_keymap() {
    let mut state = demo_state("gpus=2,frozen=5", 1);
    for tab in Tab::ALL {
        state.update(Action::SelectTab(tab));
        state.update(Action::ToggleHelp);
        let buf = draw(&state, 80, 40);
        let t = text(&buf);
        // The help's own text, its wrapped descriptions read as one line of words.
        let (left, top) = find(&buf, "┌ Keys").expect("the help box");
        let right = (left + 1..buf.area.width)
            .find(|&x| buf[(x, top)].symbol() == "┐")
            .expect("the help box's corner");
        let bottom = (top + 1..buf.area.height)
            .find(|&y| buf[(left, y)].symbol() == "└")
            .expect("the help box's bottom");
        let inside: Vec<String> = (top + 1..bottom)
            .map(|y| (left + 1..right).map(|x| buf[(x, y)].symbol()).collect())
            .collect();
        let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let help = words(&inside.join(" "));
        let contexts = gpudeck::app::keymap::help_contexts(&state);
        for b in bindings().iter().filter(|b| contexts.contains(&b.context)) {
            assert!(
                help.contains(&words(b.description)),
                "help on {tab:?} lacks {:?}:\n{t}",
                b.description
            );
        }
        state.update(Action::Cancel);
    }
}

#[test]
fn monochrome_theme_still_marks_the_selection() {
    let state = demo_state("gpus=8,seed=42,frozen=200", 1);
    let area = Rect::new(0, 0, 80, 24);
    let mut buf = Buffer::empty(area);
    ui::render(area, &mut buf, &state, &Theme::monochrome(), &bindings());
    let (x, y) = find(&buf, "▶ 0").expect("selected row");
    assert!(buf[(x, y)].modifier.contains(Modifier::REVERSED));
}

#[test]
fn tiny_terminals_do_not_panic() {
    let mut state = demo_state("gpus=8,frozen=5", 3);
    for tab in Tab::ALL {
        state.update(Action::SelectTab(tab));
        for (w, h) in [(1, 1), (10, 3), (20, 5), (40, 10), (80, 24)] {
            draw(&state, w, h);
        }
    }
}

#[test]
fn clicks_select_tabs_and_rows() {
    let mut state = demo_state("gpus=8,frozen=5", 1);
    let area = Rect::new(0, 0, 80, 24);
    let buf = draw(&state, 80, 24);
    let (x, y) = find(&buf, "3 Topo").expect("tab title (short at 80 columns)");
    assert_eq!(
        ui::click(area, &state, x, y),
        Some(Action::SelectTab(Tab::Topology))
    );
    let (_, y) = find(&buf, "  3  ").expect("row of GPU 3");
    assert_eq!(ui::click(area, &state, 10, y), Some(Action::SelectRow(3)));
    state.update(Action::SelectRow(3));
    assert_eq!(state.selected_gpu, 3);
}

#[test]
fn trouble_is_flagged_on_the_gpu_rows_even_at_80_columns() {
    let state = demo_state(
        "gpus=8,seed=42,frozen=200,lost=6,downgrade=1,throttle=2:thermal,ecc=3:5:1",
        2,
    );
    let buf = draw(&state, 80, 24);
    let t = text(&buf);
    let row = |gpu: &str| {
        t.lines()
            .find(|l| l.contains(&format!("  {gpu}  H100")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("1").contains("PCIe↓"), "{t}");
    assert!(row("2").contains("THROTTLE"), "{t}");
    assert!(row("3").contains("ECC"), "{t}");
    assert!(row("6").contains("LOST"), "{t}");
    let (x, y) = find(&buf, "THROTTLE").expect("flag");
    assert_eq!(buf[(x, y)].fg, theme().warn);
    let (x, y) = find(&buf, "LOST").expect("flag");
    assert_eq!(buf[(x, y)].fg, theme().error);
}

#[test]
fn xids_seen_this_session_flag_their_gpu_rows_at_80_columns() {
    use gpudeck::gpu::xid_watch::{XidEvent, XidUpdate};
    let mut state = demo_state("gpus=8,seed=42,frozen=200,lost=6,throttle=2:thermal", 2);
    for (gpu, bus, xid) in [(2, "00000000:3A:00.0", 13), (6, "00000000:BA:00.0", 79)] {
        state.apply_gpu(GpuUpdate::Xid(XidUpdate::Event(XidEvent {
            gpu,
            pci_bus_id: bus.into(),
            uuid: format!("GPU-{gpu}"),
            xid,
            at_unix_ms: 1_764_000_000_000,
        })));
    }
    let buf = draw(&state, 80, 24);
    let t = text(&buf);
    let row = |gpu: &str| {
        t.lines()
            .find(|l| l.contains(&format!("  {gpu}  H100")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row("2").contains("XID 13"), "{t}");
    assert!(
        row("6").contains("LOST") && row("6").contains("XID 79"),
        "{t}"
    );
    assert!(!row("0").contains("XID"), "{t}");
    let (x, y) = find(&buf, "XID 13").expect("flag");
    assert_eq!(buf[(x, y)].fg, theme().error);
    assert!(
        t.contains("GPU 6 (00000000:BA:00.0) reported Xid 79"),
        "{t}"
    );
    // The selected GPU's detail lists its Xids with their time, class and what to do; the lost
    // GPU's too.
    state.update(Action::SelectRow(2));
    let t = text(&draw(&state, 80, 24));
    assert!(t.contains("Xids     1 this session (UTC):"), "{t}");
    assert!(t.contains("  13 16:00:00 app: restart the app"), "{t}");
    state.update(Action::SelectRow(6));
    let t = text(&draw(&state, 80, 24));
    assert!(t.contains("Xids     1 this session (UTC):"), "{t}");
    assert!(t.contains("  79 16:00:00 bus/power: reboot"), "{t}");
    // No event API: said in the messages view only, never as a footer error.
    state.apply_gpu(GpuUpdate::Xid(XidUpdate::Unavailable(
        "no events here".into(),
    )));
    assert!(!text(&draw(&state, 80, 24)).contains("no events here"));
}
