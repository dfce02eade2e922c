use super::*;
use crate::doctor::run_checks;
use crate::doctor::testkit::healthy;

fn report(statuses: &[Status]) -> DoctorReport {
    let mut r = run_checks(&healthy());
    r.checks.clear();
    for (i, s) in statuses.iter().enumerate() {
        let ids = ["a.one", "a.two", "a.three", "a.four"];
        let mut c = Check::new(ids[i], Family::Gpus, "Title", *s, format!("detail {i}"));
        if *s == Status::Fail {
            c = c.with_fix("do this");
        }
        r.push(c);
    }
    r
}

#[test]
fn exit_codes_follow_the_worst_status() {
    assert_eq!(report(&[]).exit_code(), 0);
    assert_eq!(report(&[Status::Pass, Status::Skip]).exit_code(), 0);
    assert_eq!(
        report(&[Status::Pass, Status::Warn, Status::Skip]).exit_code(),
        1
    );
    assert_eq!(report(&[Status::Warn, Status::Fail]).exit_code(), 2);
    assert_eq!(report(&[Status::Fail]).exit_code(), 2);
}

#[test]
fn the_healthy_machine_passes_everything() {
    let r = run_checks(&healthy());
    let not_passed: Vec<_> = r
        .checks
        .iter()
        .filter(|c| c.status != Status::Pass)
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:#?}");
    assert_eq!(r.exit_code(), 0);
    assert_eq!(r.summary().passed, r.checks.len());
}

#[test]
fn ids_are_unique_and_namespaced_by_family() {
    let r = run_checks(&healthy());
    let mut ids: Vec<&str> = r.checks.iter().map(|c| c.id).collect();
    for c in &r.checks {
        let family = serde_json::to_value(c.family).expect("json");
        assert!(
            c.id.starts_with(&format!("{}.", family.as_str().unwrap_or(""))),
            "{}",
            c.id
        );
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), r.checks.len());
}

#[test]
fn text_has_aligned_columns_fixes_and_a_summary() {
    let mut r = report(&[Status::Pass, Status::Warn, Status::Fail, Status::Skip]);
    r.checks[1].title = "A longer title";
    let text = r.render_text(100);
    assert!(
        !text.contains('\x1b'),
        "no colour codes in plain text: {text}"
    );
    assert!(
        text.starts_with("gpudeck doctor · host gpubox · driver 580.65.06 (supports CUDA 13.0)"),
        "{text}"
    );
    assert!(text.contains("\nGPUs\n"), "{text}");
    assert!(
        text.contains("  PASS  Title           detail 0\n"),
        "{text}"
    );
    assert!(
        text.contains("  WARN  A longer title  detail 1\n"),
        "{text}"
    );
    assert!(
        text.contains("  FAIL  Title           detail 2\n        fix: do this\n"),
        "{text}"
    );
    assert!(
        text.ends_with("\n1 passed, 1 warning, 1 failed, 1 skipped\n"),
        "{text}"
    );
}

#[test]
fn coloured_text_colours_only_the_status_words() {
    let r = report(&[Status::Fail]);
    let text = r.render_text_coloured(100);
    assert!(text.contains("\x1b[1;31mFAIL\x1b[0m"), "{text:?}");
    assert_eq!(text.matches('\x1b').count(), 2, "{text:?}");
}

#[test]
fn long_details_and_fixes_wrap_under_their_column() {
    let mut r = report(&[Status::Fail]);
    r.checks[0].detail = "word ".repeat(40);
    r.checks[0].fix = Some("step ".repeat(40));
    let text = r.render_text(100);
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line:?}");
    }
    let detail_lines: Vec<&str> = text.lines().filter(|l| l.contains("word")).collect();
    assert!(detail_lines.len() > 1);
    assert!(detail_lines[1].starts_with(&" ".repeat(15)), "{text}");
    let fix_lines: Vec<&str> = text.lines().filter(|l| l.contains("step")).collect();
    assert!(fix_lines[0].starts_with("        fix: step"), "{text}");
    assert!(fix_lines[1].starts_with("             step"), "{text}");
}

#[test]
fn the_whole_report_fits_the_width_it_is_given() {
    let mut r = run_checks(&healthy());
    r.checks[0].detail = "word ".repeat(40);
    r.checks[0].fix = Some("step ".repeat(40));
    for width in [40, 60, 80, 120] {
        let text = r.render_text(width);
        for line in text.lines() {
            assert!(line.chars().count() <= width, "{width}: {line:?}\n{text}");
        }
        // Nothing is lost to the wrapping.
        assert!(text.contains("kernel module 580.65.06"), "{text}");
        assert_eq!(text.matches("word").count(), 40, "{text}");
    }
    // Wide enough, the headline is one line; at 80 it breaks between its parts.
    assert_eq!(
        r.render_text(200).lines().next(),
        Some(r.headline().as_str())
    );
    let narrow = r.render_text(80);
    let second = narrow.lines().nth(1).unwrap_or_default();
    assert!(
        second.starts_with("  kernel module") || second.starts_with("  driver"),
        "{narrow}"
    );
    // At 40 columns the details go under their titles instead of beside them.
    let narrowest = r.render_text(40);
    assert!(narrowest.contains("\n        word word"), "{narrowest}");
}

#[test]
fn json_carries_the_schema_summary_and_exit_code() {
    let r = report(&[Status::Pass, Status::Warn]);
    let v = serde_json::to_value(&r).expect("json");
    assert_eq!(v["schema"], "gpudeck.doctor/v1");
    assert_eq!(v["driver_version"], "580.65.06");
    assert_eq!(v["cuda_driver_version"]["major"], 13);
    assert_eq!(v["checks"][1]["status"], "warn");
    assert_eq!(v["checks"][1]["family"], "gpus");
    assert!(v["checks"][0]["fix"].is_null());
    assert_eq!(v["summary"]["warnings"], 1);
    assert_eq!(v["summary"]["passed"], 1);
    assert_eq!(v["exit_code"], 1);
}

#[test]
fn the_demo_says_so_in_the_headline() {
    let mut f = healthy();
    if let Some(s) = f.gpu.system.as_mut() {
        s.source = crate::gpu::SourceKind::Demo;
    }
    assert!(run_checks(&f).headline().ends_with("DEMO: simulated GPUs"));
    assert!(!run_checks(&healthy()).headline().contains("DEMO"));
    let failed = crate::doctor::testkit::nvml_failed(&crate::gpu::GpuError::DriverNotLoaded);
    let line = run_checks(&failed).headline();
    assert!(
        line.contains("· driver unknown · kernel module 580.65.06 · 0 GPUs"),
        "{line}"
    );
}

#[test]
fn a_check_keeps_its_title_and_place_whether_it_runs_or_skips() {
    let layout = |f: &crate::doctor::HostFacts| -> Vec<(&'static str, &'static str)> {
        run_checks(f)
            .checks
            .iter()
            .map(|c| (c.id, c.title))
            .collect()
    };
    let mut broken = crate::doctor::testkit::nvml_failed(&crate::gpu::GpuError::DriverNotLoaded);
    broken.docker = crate::doctor::facts::DockerFacts::Unreachable {
        host: None,
        problem: crate::doctor::facts::DockerProblem::from_error(
            &crate::docker::DockerError::Other("boom".into()),
        ),
    };
    assert_eq!(layout(&healthy()), layout(&broken));
}
