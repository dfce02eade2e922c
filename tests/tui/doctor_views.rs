//! The Doctor tab: a diagnosis starts when the tab opens, `r` runs it again, results keep the selection, and failures are drawn as failures.

use crate::support;

use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::keymap::bindings;
use gpudeck::app::state::AppState;
use gpudeck::config::{Config, Theme};
use gpudeck::doctor::{Check, DoctorReport, Family, Status, SCHEMA};
use gpudeck::ui;
use gpudeck::ui::style::Styles;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use support::demo::demo_state;
use support::screen::{find, render, text};

const SPEC: &str = "gpus=2,frozen=60";

fn report(checks: Vec<Check>) -> DoctorReport {
    DoctorReport {
        schema: SCHEMA,
        host: "testhost".into(),
        source: None,
        driver_version: Some("580.65.06".into()),
        cuda_driver_version: None,
        kernel_module_version: Some("580.65.06".into()),
        gpu_count: 2,
        checks,
    }
}

fn checks() -> Vec<Check> {
    vec![
        Check::new(
            "nvidia.nvml",
            Family::Nvidia,
            "NVML",
            Status::Pass,
            "NVML 12.580 loaded",
        ),
        Check::new(
            "gpus.pcie_link",
            Family::Gpus,
            "PCIe links",
            Status::Warn,
            "GPU 1 runs at x8 of x16",
        )
        .with_fix("reseat the card"),
        Check::new(
            "docker.gpu_runtime",
            Family::Docker,
            "GPU runtime or CDI",
            Status::Fail,
            "Docker has neither the nvidia runtime nor CDI specs",
        )
        .with_fix("sudo nvidia-ctk runtime configure --runtime=docker"),
    ]
}

#[test]
fn opening_the_tab_diagnoses_once_and_r_diagnoses_again() {
    let mut s = demo_state(SPEC, 1);
    assert_eq!(
        s.update(Action::SelectTab(Tab::Doctor)),
        vec![Command::RunDoctor]
    );
    assert!(s.doctor.running);
    assert!(text(&render(&s, 120, 30)).contains("diagnosing the driver, the GPUs, Docker and CUDA"));
    // While one runs, neither leaving and coming back nor `r` starts another.
    s.update(Action::SelectTab(Tab::Gpus));
    assert!(s.update(Action::SelectTab(Tab::Doctor)).is_empty());
    assert!(s.update(Action::RunDoctor).is_empty());
    s.apply_doctor(report(checks()));
    assert!(!s.doctor.running);
    assert!(s
        .status
        .as_ref()
        .unwrap()
        .text
        .contains("1 passed, 1 warning, 1 failed"));
    // The tab's title counts in the same words as `gpudeck doctor`'s summary line.
    let screen = text(&render(&s, 120, 30));
    assert!(
        screen.contains("1 passed · 1 warning · 1 failed"),
        "{screen}"
    );
    // A report is there: coming back shows it, `r` asks for a new one.
    s.update(Action::SelectTab(Tab::Gpus));
    assert!(s.update(Action::SelectTab(Tab::Doctor)).is_empty());
    assert_eq!(s.update(Action::RunDoctor), vec![Command::RunDoctor]);
}

#[test]
fn no_diagnosis_before_the_gpus_are_read() {
    let mut s = AppState::new(&Config::default(), "testhost".into(), false);
    assert!(s.update(Action::SelectTab(Tab::Doctor)).is_empty());
    assert!(!s.doctor.running);
    assert!(s
        .status
        .as_ref()
        .unwrap()
        .text
        .contains("waits for the first GPU reading"));
    assert!(s.gpu_report().is_none());
}

#[test]
fn the_gpu_part_comes_from_what_the_collector_read() {
    let s = demo_state(SPEC, 1);
    let r = s.gpu_report().expect("a report from the demo data");
    assert_eq!(r.gpu_count, 2);
    assert_eq!(r.gpus[0].info.name, "NVIDIA H100 80GB HBM3");
    assert!(r.gpus[0].sample.util_gpu_pct.is_some());
}

#[test]
fn checks_are_listed_and_the_selected_one_shown_in_full() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::SelectTab(Tab::Doctor));
    s.apply_doctor(report(checks()));
    s.update(Action::Bottom);
    let buf = render(&s, 120, 30);
    let screen = text(&buf);
    assert!(
        screen.contains("Doctor · 1 passed · 1 warning · 1 failed"),
        "{screen}"
    );
    assert!(
        screen.contains("GPU runtime or CDI · docker.gpu_runtime"),
        "{screen}"
    );
    assert!(
        screen.contains("fix: sudo nvidia-ctk runtime configure --runtime=docker"),
        "{screen}"
    );
    let theme = Theme::builtin("dark").expect("theme");
    let styles = Styles::new(&theme);
    let (x, y) = find(&buf, "WARN");
    assert_eq!(buf[(x, y)].fg, styles.warn().fg.expect("colour"));
    let (x, y) = find(&buf, "PASS");
    assert_eq!(buf[(x, y)].fg, styles.ok().fg.expect("colour"));
    // A new report keeps the selection on the same check, wherever it moved.
    let mut reordered = checks();
    reordered.reverse();
    s.apply_doctor(report(reordered));
    assert_eq!(s.doctor.selected_check().unwrap().id, "docker.gpu_runtime");
    assert_eq!(s.doctor.selected, 0);
    // A click selects a row.
    let (_, y) = find(&render(&s, 120, 30), "PCIe links");
    let clicked = ui::click(Rect::new(0, 0, 120, 30), &s, 20, y);
    assert_eq!(clicked, Some(Action::SelectRow(1)));
}

#[test]
fn nine_tabs_fit_an_80_column_terminal_and_answer_clicks() {
    let s = demo_state(SPEC, 1);
    let area = Rect::new(0, 0, 80, 24);
    let mut buf = Buffer::empty(area);
    let theme = Theme::builtin("dark").expect("theme");
    ui::render(area, &mut buf, &s, &theme, &bindings());
    let screen = text(&buf);
    let tabs = screen.lines().nth(1).unwrap();
    assert!(
        tabs.contains("6 Compat│") && tabs.contains("7 Doctor│") && tabs.ends_with("9 Svc│"),
        "{tabs}"
    );
    let (x, y) = find(&buf, "7 Doctor");
    assert_eq!(
        ui::click(area, &s, x + 2, y),
        Some(Action::SelectTab(Tab::Doctor))
    );
    let (x, y) = find(&buf, "8 Runs");
    assert_eq!(
        ui::click(area, &s, x + 2, y),
        Some(Action::SelectTab(Tab::Runs))
    );
    let (x, y) = find(&buf, "9 Svc");
    assert_eq!(
        ui::click(area, &s, x + 2, y),
        Some(Action::SelectTab(Tab::Services))
    );
}
