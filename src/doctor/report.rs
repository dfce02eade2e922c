//! The doctor's verdicts: one `Check` per question, the `DoctorReport` that holds them, and its
//! text (for people and bug reports) and JSON (for scripts) faces.

use std::fmt::Write as _;

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::gpu::{CudaVersion, SourceKind};

/// The JSON schema id; bump it when a field changes meaning or disappears.
pub const SCHEMA: &str = "gpudeck.doctor/v1";

/// Text is wrapped at this width so a report pastes readably into an issue.
const WRAP: usize = 100;

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

    /// Plain text without colour codes, as pasted into a bug report.
    pub fn render_text(&self) -> String {
        self.render(false)
    }

    /// The same text with the status words coloured, for a terminal.
    pub fn render_text_coloured(&self) -> String {
        self.render(true)
    }

    fn render(&self, colour: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.headline());
        let width = self.checks.iter().map(|c| c.title.len()).max().unwrap_or(0);
        let mut family = None;
        for c in &self.checks {
            if family != Some(c.family) {
                family = Some(c.family);
                let _ = writeln!(out, "\n{}", c.family.heading());
            }
            write_check(&mut out, c, width, colour);
        }
        let _ = writeln!(out, "\n{}", summary_line(&self.summary()));
        out
    }

    /// Host, driver, the CUDA it supports, the kernel module and the GPUs, on one line.
    pub fn headline(&self) -> String {
        let driver = match (&self.driver_version, self.cuda_driver_version) {
            (Some(d), Some(c)) => format!("driver {d} (supports CUDA {c})"),
            (Some(d), None) => format!("driver {d}"),
            (None, _) => "driver unknown".to_string(),
        };
        let module = self.kernel_module_version.as_deref().unwrap_or("unknown");
        let mut line = format!(
            "gpudeck doctor · host {} · {driver} · kernel module {module} · {} GPU{}",
            self.host,
            self.gpu_count,
            if self.gpu_count == 1 { "" } else { "s" },
        );
        if self.source == Some(SourceKind::Demo) {
            line.push_str(" · DEMO: simulated GPUs");
        }
        line
    }
}

fn write_check(out: &mut String, c: &Check, width: usize, colour: bool) {
    let word = if colour {
        format!("{}{}\x1b[0m", c.status.ansi(), c.status.word())
    } else {
        c.status.word().to_string()
    };
    // Continuation lines line up under the detail column: 2 + 4 + 2 + width + 2.
    let indent = " ".repeat(10 + width);
    let lines = wrap(&c.detail, WRAP.saturating_sub(indent.len()).max(40));
    let first = lines.first().map_or("", String::as_str);
    let _ = writeln!(out, "  {word}  {:<width$}  {first}", c.title);
    for line in lines.iter().skip(1) {
        let _ = writeln!(out, "{indent}{line}");
    }
    if let Some(fix) = &c.fix {
        let fix_indent = "        ";
        let body = wrap(fix, WRAP - fix_indent.len() - 5);
        for (i, line) in body.iter().enumerate() {
            let lead = if i == 0 { "fix: " } else { "     " };
            let _ = writeln!(out, "{fix_indent}{lead}{line}");
        }
    }
}

fn summary_line(s: &Summary) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{} passed, {}, {} failed, {} skipped",
        s.passed,
        plural(s.warnings, "warning", "warnings"),
        s.failed,
        s.skipped
    )
}

/// Greedy word wrap; a word longer than `width` (a path, a URL) keeps its own line unbroken.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
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
#[path = "report_tests.rs"]
mod tests;
