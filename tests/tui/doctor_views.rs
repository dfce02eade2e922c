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

#[test]
fn a_finished_doctor_is_a_result_not_an_error_and_counts_as_the_cli_does() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::SelectTab(Tab::Doctor));
    let mut with_skip = checks();
    with_skip.push(Check::new(
        "cuda.nvcc",
        Family::Cuda,
        "nvcc",
        Status::Skip,
        "no host CUDA toolkit",
    ));
    let r = report(with_skip);
    s.apply_doctor(r.clone());
    // The diagnosis found a failure, but finishing it is no error of gpudeck's.
    let message = s.status.as_ref().unwrap();
    assert!(!message.is_error, "{message:?}");
    assert_eq!(
        message.text,
        "doctor: 1 passed, 1 warning, 1 failed, 1 skipped"
    );
    let logged = s.messages.newest_first().next().unwrap();
    assert_eq!(logged.text, message.text);
    assert!(!logged.is_error);
    // The CLI's last line says the same counts.
    let cli = r.render_text(100);
    assert!(
        cli.trim_end()
            .ends_with("1 passed, 1 warning, 1 failed, 1 skipped"),
        "{cli}"
    );
    // The tab's title counts the skipped checks too.
    let screen = text(&render(&s, 120, 30));
    assert!(
        screen.contains("Doctor · 1 passed · 1 warning · 1 failed · 1 skipped"),
        "{screen}"
    );
}

#[test]
fn the_tab_makes_the_same_checks_as_gpudeck_doctor() {
    use gpudeck::app::DoctorJob;
    use gpudeck::gpu::sim::SimSource;
    use gpudeck::gpu::GpuSource;
    use gpudeck_sim_model::SimSpec;

    const DEAD: &str = "unix:///nonexistent.sock";
    let spec = "gpus=2,frozen=60";
    let mut s = demo_state(spec, 1);
    s.docker.catalog = gpudeck::pull::Catalog::load(None).0.entries().to_vec();
    // What the collector reads for the tab's diagnosis: the simulation's health counters.
    let mut source = SimSource::new(SimSpec::parse(spec).unwrap());
    let inventory = source.inventory().unwrap();
    let health = inventory.gpus.iter().map(|g| source.health(g)).collect();
    let state_dir = tempfile::tempdir().unwrap();
    let mut job = DoctorJob {
        gpu: s.gpu_report().unwrap(),
        docker_host: Some(DEAD.into()),
        compat: s.compat.data.clone(),
        catalog: s.docker.catalog.clone(),
        idle: gpudeck::services::idle_check(&s.services.rows, s.idle_alert),
        state_dir: state_dir.path().to_path_buf(),
    };
    job.set_health(health);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tab = job.run(&rt);

    let dirs = support::Dirs::new();
    let out = dirs
        .gpudeck(spec)
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("CUDA_DEVICE_ORDER")
        .env_remove("DOCKER_HOST")
        .args(["--demo", "doctor", "--json", "--docker-host", DEAD])
        .output()
        .unwrap();
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cli_checks: Vec<(String, String)> = cli["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let tab_checks: Vec<(String, String)> = tab
        .checks
        .iter()
        .map(|c| {
            (
                c.id.to_string(),
                serde_json::to_value(c.status)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(tab_checks, cli_checks);
    // The health counters and the framework images are among them (the tab once lacked the
    // first), skipped checks counted alike.
    for id in ["gpus.health_counters", "compat.frameworks"] {
        assert!(tab_checks.iter().any(|(c, _)| c == id), "{id}");
    }
    let summary = tab.summary();
    assert_eq!(cli["summary"]["skipped"], summary.skipped);
    assert_eq!(cli["summary"]["passed"], summary.passed);
    assert!(summary.skipped > 0, "{summary:?}");
}

/// The demo with GPU 0 idle at P8 and Gen1 (power saving), GPU 1 busy at P0 and Gen1, GPU 2
/// idle at x8 of its x16.
fn links_state() -> AppState {
    use gpudeck::gpu::collector::GpuUpdate;
    let mut s = demo_state("gpus=3,frozen=60", 1);
    let mut samples: Vec<_> = s
        .gpu_report()
        .unwrap()
        .gpus
        .into_iter()
        .map(|g| g.sample)
        .collect();
    let set = |x: &mut gpudeck::gpu::GpuSample, gen, width, pstate, util| {
        x.pcie_gen = Some(gen);
        x.pcie_width = Some(width);
        x.pstate = Some(pstate);
        x.util_gpu_pct = Some(util);
        x.throttle_reasons = Some(Vec::new());
        x.ecc_uncorrected = Some(0);
    };
    set(&mut samples[0], 1, 16, 8, 3);
    set(&mut samples[1], 1, 16, 0, 90);
    set(&mut samples[2], 5, 8, 8, 0);
    s.apply_gpu(GpuUpdate::Sampled(samples));
    s
}

#[test]
fn an_idle_gpu_saving_power_is_no_downgrade_in_the_list_the_pane_the_json_or_doctor() {
    let mut s = links_state();
    let screen = text(&render(&s, 120, 30));
    let row = |gpu: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!("  {gpu}  H100")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(!row("0").contains("PCIe↓"), "{screen}");
    assert!(row("1").contains("PCIe↓"), "{screen}");
    assert!(row("2").contains("PCIe↓"), "{screen}");
    // The selected GPU's pane says which kind.
    for (gpu, words) in [
        (0, "Gen1 x16 (max Gen5 x16) (idle)"),
        (1, "Gen1 x16 (max Gen5 x16) SLOW, BUSY"),
        (2, "Gen5 x8 (max Gen5 x16) NARROW LINK"),
    ] {
        s.update(Action::SelectRow(gpu));
        let screen = text(&render(&s, 120, 30));
        assert!(screen.contains(words), "GPU {gpu}: {screen}");
    }
    // `gpudeck gpus --json` from the same samples.
    let report = s.gpu_report().unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let field = |name: &str| -> Vec<serde_json::Value> {
        (0..3).map(|i| json["gpus"][i][name].clone()).collect()
    };
    assert_eq!(
        field("pcie_downgrade"),
        [serde_json::Value::Null, "generation".into(), "width".into()]
    );
    assert_eq!(
        field("pcie_downgraded"),
        [false.into(), true.into(), true.into()] as [serde_json::Value; 3]
    );
    // Doctor on the same report: idle passes, each of the others warns, saying which kind.
    let env = gpudeck::doctor::FakeEnv::default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let judge = |report| {
        let facts = rt.block_on(gpudeck::doctor::gather(
            report,
            Some("unix:///nonexistent.sock"),
            &env,
        ));
        let r = gpudeck::doctor::run_checks(&facts);
        r.checks
            .into_iter()
            .find(|c| c.id == "gpus.pcie_link")
            .unwrap()
    };
    let only = |i: usize| {
        let mut r = report.clone();
        r.gpus = vec![r.gpus[i].clone()];
        r.gpu_count = 1;
        r
    };
    let idle = judge(only(0));
    assert_eq!(idle.status, Status::Pass, "{idle:?}");
    assert!(
        idle.detail.contains("idle GPU 0 at a lower generation"),
        "{idle:?}"
    );
    let busy = judge(only(1));
    assert_eq!(busy.status, Status::Warn, "{busy:?}");
    assert!(
        busy.detail
            .contains("GPU 1 runs Gen1 x16 of its Gen5 x16 under load (P0, 90%)"),
        "{busy:?}"
    );
    assert!(busy.fix.unwrap().contains("BIOS PCIe generation"));
    let narrow = judge(only(2));
    assert_eq!(narrow.status, Status::Warn, "{narrow:?}");
    assert!(
        narrow.detail.contains("GPU 2 runs Gen5 x8 of its Gen5 x16"),
        "{narrow:?}"
    );
    assert!(narrow.fix.unwrap().contains("reseat"));
}

#[test]
fn with_no_gpus_the_header_names_the_loaded_driver_as_doctor_does() {
    use gpudeck::gpu::collector::GpuUpdate;
    use gpudeck::gpu::sim::SimSource;
    use gpudeck::gpu::{GpuError, GpuSource};
    use gpudeck_sim_model::SimSpec;

    // The simulation with no GPU: the driver answers, and says so.
    let error = SimSource::new(SimSpec::parse("gpus=0").unwrap())
        .inventory()
        .unwrap_err();
    assert!(matches!(error, GpuError::NoGpus { .. }), "{error:?}");
    let mut s = AppState::new(&Config::default(), "testhost".into(), false);
    s.apply_gpu(GpuUpdate::Failed(error.clone()));
    let screen = text(&render(&s, 120, 30));
    let header = screen.lines().next().unwrap();
    assert!(
        header.contains("driver 580.65.06") && header.contains("no GPUs found"),
        "{header}"
    );
    assert!(
        !header.contains("n/a") && !header.contains("no GPU data"),
        "{header}"
    );
    assert!(
        screen.contains("the NVIDIA driver 580.65.06 is loaded but reports no GPUs"),
        "{screen}"
    );
    // The doctor's report of the same state names the same driver.
    let report = s.gpu_report().unwrap();
    assert_eq!(
        report
            .system
            .as_ref()
            .and_then(|x| x.driver_version.as_deref()),
        Some("580.65.06")
    );
    // Without a driver there is nothing to name.
    let mut none = AppState::new(&Config::default(), "testhost".into(), false);
    none.apply_gpu(GpuUpdate::Failed(GpuError::DriverNotLoaded));
    let header = text(&render(&none, 120, 30))
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(
        header.contains("no GPU data") && !header.contains("driver "),
        "{header}"
    );
}
