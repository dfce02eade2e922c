//! The doctor's verdicts: one `Check` per question, the `DoctorReport` that holds them, and its
//! text (for people and bug reports) and JSON (for scripts) faces.

use std::fmt::Write as _;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::gpu::{CudaVersion, SourceKind};
use crate::units;

/// The JSON schema id; bump it when a field changes meaning or disappears.
pub const SCHEMA: &str = "gpudeck.doctor/v1";

/// Narrower than this, the detail column moves under its check instead of beside it.
const MIN_DETAIL: usize = 30;

/// The verdict of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
    /// The check cannot apply here (Docker unreachable, no GPUs...); the detail says why.
    Skip,
}

impl Status {
    /// The word printed in the report's first column.
    pub fn word(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }

    fn ansi(self) -> &'static str {
        match self {
            Status::Pass => "\x1b[32m",
            Status::Warn => "\x1b[33m",
            Status::Fail => "\x1b[1;31m",
            Status::Skip => "\x1b[2m",
        }
    }
}

/// Which part of the machine a check is about; the text report groups checks under these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Nvidia,
    Gpus,
    Docker,
    Cuda,
    Compat,
}

impl Family {
    pub fn heading(self) -> &'static str {
        match self {
            Family::Nvidia => "NVIDIA driver",
            Family::Gpus => "GPUs",
            Family::Docker => "Docker",
            Family::Cuda => "CUDA",
            Family::Compat => "Compatibility",
        }
    }
}

/// One diagnosed question: its stable id, the verdict, what was found and what to do about it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Check {
    /// Stable across releases, e.g. `nvidia.kernel_module`; scripts key on it.
    pub id: &'static str,
    pub family: Family,
    pub title: &'static str,
    pub status: Status,
    pub detail: String,
    /// Concrete commands; present for warnings and failures that have a remedy.
    pub fix: Option<String>,
    /// The Xids a `gpus.xid` check is about, structured for scripts (absent elsewhere).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub xids: Vec<crate::health::XidSeen>,
}

impl Check {
    pub fn new(
        id: &'static str,
        family: Family,
        title: &'static str,
        status: Status,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            id,
            family,
            title,
            status,
            detail: detail.into(),
            fix: None,
            xids: Vec::new(),
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// How many checks ended in each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub passed: usize,
    pub warnings: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Summary {
    /// "14 passed, 1 warning, 1 failed, 4 skipped": the CLI's last line, the tab's title and
    /// its message say the counts in these words.
    pub fn counts(&self) -> String {
        format!(
            "{} passed, {}, {} failed, {} skipped",
            self.passed,
            units::plural(self.warnings, "warning"),
            self.failed,
            self.skipped
        )
    }
}

/// The whole diagnosis of one machine.
#[derive(Clone, Debug, PartialEq)]
pub struct DoctorReport {
    pub schema: &'static str,
    pub host: String,
    /// `nvml` or `demo`; None when no GPU source opened.
    pub source: Option<SourceKind>,
    pub driver_version: Option<String>,
    /// The newest CUDA the driver supports.
    pub cuda_driver_version: Option<CudaVersion>,
    pub kernel_module_version: Option<String>,
    pub gpu_count: usize,
    pub checks: Vec<Check>,
}

impl DoctorReport {
    /// Adds a check; other parts of gpudeck (the compatibility engine) contribute theirs this way.
    pub fn push(&mut self, check: Check) {
        self.checks.push(check);
    }

    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for c in &self.checks {
            match c.status {
                Status::Pass => s.passed += 1,
                Status::Warn => s.warnings += 1,
                Status::Fail => s.failed += 1,
                Status::Skip => s.skipped += 1,
            }
        }
        s
    }

    /// 0 when every check passed or was skipped, 1 with warnings, 2 with failures.
    pub fn exit_code(&self) -> u8 {
        let s = self.summary();
        if s.failed > 0 {
            2
        } else if s.warnings > 0 {
            1
        } else {
            0
        }
    }

    /// Plain text without colour codes, as pasted into a bug report, wrapped to `width`.
    pub fn render_text(&self, width: usize) -> String {
        self.render(false, width)
    }

    /// The same text with the status words coloured, for a terminal.
    pub fn render_text_coloured(&self, width: usize) -> String {
        self.render(true, width)
    }

    fn render(&self, colour: bool, width: usize) -> String {
        let mut out = String::new();
        let headline = pack(&self.headline_parts(), width);
        let _ = writeln!(out, "{}", crate::sanitise::text(&headline));
        let title_width = self.checks.iter().map(|c| c.title.len()).max().unwrap_or(0);
        let mut family = None;
        for c in &self.checks {
            if family != Some(c.family) {
                family = Some(c.family);
                let _ = writeln!(out, "\n{}", c.family.heading());
            }
            write_check(&mut out, &cleaned(c), title_width, width, colour);
        }
        let _ = writeln!(
            out,
            "\n{}",
            crate::output::wrap_to(&summary_line(&self.summary()), "", width)
        );
        out
    }

    /// Host, driver, the CUDA it supports, the kernel module and the GPUs, on one line.
    pub fn headline(&self) -> String {
        self.headline_parts().join(" · ")
    }

    /// The headline's parts, which wrap between them rather than inside one.
    fn headline_parts(&self) -> Vec<String> {
        let driver = match (&self.driver_version, self.cuda_driver_version) {
            (Some(d), Some(c)) => format!("driver {d} (supports CUDA {c})"),
            (Some(d), None) => format!("driver {d}"),
            (None, _) => "driver unknown".to_string(),
        };
        let module = self.kernel_module_version.as_deref().unwrap_or("unknown");
        let mut parts = vec![
            "gpudeck doctor".to_string(),
            format!("host {}", self.host),
            driver,
            format!("kernel module {module}"),
            units::plural(self.gpu_count, "GPU"),
        ];
        if self.source == Some(SourceKind::Demo) {
            parts.push("DEMO: simulated GPUs".to_string());
        }
        parts
    }
}

/// `parts` joined by " · " on as few lines of `width` as they fill; a line break stands for the
/// separator and the next line is indented by two. A part too long for a line wraps between words.
fn pack(parts: &[String], width: usize) -> String {
    const INDENT: &str = "  ";
    let mut lines: Vec<String> = vec![String::new()];
    for part in parts {
        let line = lines.last_mut().expect("one line at least");
        let joined = if line.trim().is_empty() {
            format!("{line}{part}")
        } else {
            format!("{line} · {part}")
        };
        if joined.chars().count() <= width || line.trim().is_empty() {
            *line = joined;
        } else {
            lines.push(format!("{INDENT}{part}"));
        }
    }
    lines
        .iter()
        .map(|l| crate::output::wrap_to(l, INDENT, width))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `c` with the control characters of its detail and fix shown as escapes: they quote the
/// machine (a kernel log's process names, a driver's words), and the coloured text is printed
/// as it is, so that its status words keep their colours.
fn cleaned(c: &Check) -> Check {
    Check {
        detail: crate::sanitise::text(&c.detail).into_owned(),
        fix: c
            .fix
            .as_deref()
            .map(|f| crate::sanitise::text(f).into_owned()),
        ..c.clone()
    }
}

fn write_check(out: &mut String, c: &Check, title_width: usize, width: usize, colour: bool) {
    let word = if colour {
        format!("{}{}\x1b[0m", c.status.ansi(), c.status.word())
    } else {
        c.status.word().to_string()
    };
    // Continuation lines line up under the detail column: 2 + 4 + 2 + title_width + 2; where
    // that leaves too little room, the detail goes under the title, indented like the fix.
    let fix_indent = "        ";
    let beside = " ".repeat(10 + title_width);
    let room = width.saturating_sub(beside.len());
    if room >= MIN_DETAIL {
        let lines = wrap(&c.detail, room);
        let first = lines.first().map_or("", String::as_str);
        let _ = writeln!(out, "  {word}  {:<title_width$}  {first}", c.title);
        for line in lines.iter().skip(1) {
            let _ = writeln!(out, "{beside}{line}");
        }
    } else {
        let _ = writeln!(out, "  {word}  {}", c.title);
        for line in wrap(&c.detail, width.saturating_sub(fix_indent.len())) {
            let _ = writeln!(out, "{fix_indent}{line}");
        }
    }
    if let Some(fix) = &c.fix {
        let body = wrap(fix, width.saturating_sub(fix_indent.len() + 5));
        for (i, line) in body.iter().enumerate() {
            let lead = if i == 0 { "fix: " } else { "     " };
            let _ = writeln!(out, "{fix_indent}{lead}{line}");
        }
    }
}

fn summary_line(s: &Summary) -> String {
    s.counts()
}

/// The lines of `text` wrapped to `width` (see [`crate::output::wrap_to`]: words and commands
/// in backticks that fit are never split).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let lines: Vec<String> = crate::output::wrap_to(text, "", width)
        .lines()
        .map(str::to_string)
        .collect();
    if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    }
}

/// The JSON face adds the summary and the exit code, so scripts need not recount.
impl Serialize for DoctorReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("DoctorReport", 11)?;
        s.serialize_field("schema", self.schema)?;
        s.serialize_field("host", &self.host)?;
        s.serialize_field("source", &self.source)?;
        s.serialize_field("driver_version", &self.driver_version)?;
        s.serialize_field("cuda_driver_version", &self.cuda_driver_version)?;
        s.serialize_field("kernel_module_version", &self.kernel_module_version)?;
        s.serialize_field("gpu_count", &self.gpu_count)?;
        s.serialize_field("checks", &self.checks)?;
        s.serialize_field("summary", &self.summary())?;
        s.serialize_field("exit_code", &self.exit_code())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
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
            text.starts_with(
                "gpudeck doctor · host gpubox · driver 580.65.06 (supports CUDA 13.0)"
            ),
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
    fn coloured_text_shows_the_machine_s_control_characters_as_escapes() {
        let mut r = report(&[]);
        r.host = "box\x1b]0;pwned\x07".into();
        r.push(
            Check::new(
                "a.one",
                Family::Gpus,
                "Title",
                Status::Fail,
                "name=\x1b[2J\u{9b}31m \u{202e}x",
            )
            .with_fix("see \x1b]52;c;eA==\x07"),
        );
        let text = r.render_text_coloured(100);
        // Only the status word's colour and its reset.
        assert_eq!(text.matches('\x1b').count(), 2, "{text:?}");
        assert!(!text.contains(['\u{9b}', '\u{202e}', '\u{7}']), "{text:?}");
        assert!(
            text.contains("name=\\u001b[2J\\u009b31m \\u202ex"),
            "{text}"
        );
        assert!(text.contains("box\\u001b]0;pwned\\u0007"), "{text}");
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
        let mut broken =
            crate::doctor::testkit::nvml_failed(&crate::gpu::GpuError::DriverNotLoaded);
        broken.docker = crate::doctor::facts::DockerFacts::Unreachable {
            host: None,
            problem: crate::doctor::facts::DockerProblem::from_error(
                &crate::docker::DockerError::Other("boom".into()),
            ),
        };
        assert_eq!(layout(&healthy()), layout(&broken));
    }
}
