//! `gpudeck compat`: the board as a stable JSON document or a text report to paste into a bug report.

use std::fmt::Write as _;

use serde::Serialize;

use super::board::Board;
use super::data::TableSource;
use super::engine::{Level, Scope};
use super::profile::{GpuRuntime, ImageProfile};
use crate::output::wrap_to;
use crate::pull::Framework;

/// The JSON schema id; bump it when a field changes meaning or disappears.
pub const SCHEMA: &str = "gpudeck.compat/v1";

/// `gpudeck compat` exit codes, as `compat --help` and docs/compatibility.md list them.
pub const EXIT_RUNS: u8 = 0;
pub const EXIT_UNKNOWN: u8 = 1;
pub const EXIT_WONT_RUN: u8 = 2;
/// A named image cannot be found (or is not an image reference).
pub const EXIT_UNKNOWN_IMAGE: u8 = 3;
/// gpudeck could not judge at all: its runtime did not start or the report could not be encoded.
pub const EXIT_FAILED: u8 = 4;

#[derive(Debug, Clone, Serialize)]
pub struct CompatReport {
    pub schema: &'static str,
    pub host_name: String,
    #[serde(flatten)]
    pub board: Board,
    pub tables: Vec<TableSource>,
}

impl CompatReport {
    pub fn new(host_name: String, board: Board, tables: Vec<TableSource>) -> CompatReport {
        CompatReport {
            schema: SCHEMA,
            host_name,
            board,
            tables,
        }
    }

    /// The exit code of `gpudeck compat`, from the same verdicts the text and JSON show:
    /// 0 when every listed image runs (directly or through compatibility), 1 when some verdict
    /// is unknown (and none will not run), 2 when one will not run.
    pub fn exit_code(&self) -> u8 {
        match self.board.images.iter().map(|a| a.verdict.level).max() {
            Some(Level::WontRun) => EXIT_WONT_RUN,
            Some(Level::Unknown) => EXIT_UNKNOWN,
            _ => EXIT_RUNS,
        }
    }

    /// The report as text wrapped to `width`; `every_reason` shows the reasons of images that
    /// simply run too (for images the user named), otherwise only problems are explained.
    pub fn render_text(&self, every_reason: bool, width: usize) -> String {
        let mut out = String::new();
        // Each line wraps on its own, continuing under its own indent.
        let mut say = |text: String, indent: &str| {
            let _ = writeln!(out, "{}", wrap_to(&text, indent, width));
        };
        let host = &self.board.host;
        let gpus = gpu_groups(host);
        say(
            format!(
                "Host {}: driver {}, CUDA {}, {}",
                self.host_name,
                host.driver.as_deref().unwrap_or("unknown"),
                host.cuda.map_or("unknown".into(), |c| c.to_string()),
                if gpus.is_empty() {
                    "no GPUs".to_string()
                } else {
                    gpus.join(", ")
                }
            ),
            "  ",
        );
        if let Some(problem) = &host.problem {
            say(format!("  driver: {problem}"), "    ");
        }
        say(
            format!("  container GPUs: {}", runtime_words(host.runtime)),
            "    ",
        );
        let blocked = if self.board.host_blocks() {
            " on this driver and these GPUs; no container gets a GPU here, see below"
        } else {
            ""
        };
        for best in &self.board.best {
            say(
                format!(
                    "Best {} image here: {} ({}{blocked})",
                    best.framework.label(),
                    best.reference,
                    best.level.word()
                ),
                "  ",
            );
        }
        say(String::new(), "");
        for a in &self.board.images {
            let v = &a.verdict;
            say(
                format!(
                    "{:<15} {}  [{}]",
                    v.level.word().to_uppercase(),
                    a.image.reference,
                    facts_label(&a.image),
                ),
                &" ".repeat(16),
            );
            let shown = v
                .reasons
                .iter()
                .filter(|r| r.scope == Scope::Image && (every_reason || r.level > Level::Runs));
            for r in shown {
                say(format!("    {}", r.text), "    ");
                if let Some(fix) = &r.fix {
                    say(format!("      fix: {fix}"), &" ".repeat(11));
                }
            }
            if every_reason && v.level > v.image_level {
                say(
                    format!("    {}", host_caveat(v.image_level, v.level)),
                    "    ",
                );
            }
            if let Some(alt) = &a.alternative {
                say(
                    format!("      or use {alt}, which {}", self.board.runs_where()),
                    &" ".repeat(9),
                );
            }
        }
        let host_reasons: Vec<_> = self
            .board
            .images
            .first()
            .map(|a| {
                a.verdict
                    .reasons
                    .iter()
                    .filter(|r| r.scope == Scope::Host)
                    .collect()
            })
            .unwrap_or_default();
        for r in host_reasons {
            say(String::new(), "");
            say(format!("For every image: {}", r.text), "  ");
            if let Some(fix) = &r.fix {
                say(format!("  fix: {fix}"), &" ".repeat(7));
            }
        }
        let counts: Vec<String> = self
            .board
            .counts()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(l, n)| format!("{n} {}", l.word()))
            .collect();
        say(String::new(), "");
        say(
            format!(
                "{}: {}",
                crate::units::plural(self.board.images.len(), "image"),
                counts.join(", ")
            ),
            "  ",
        );
        out
    }
}

/// `catalog, PyTorch 2.5.1, 3.1 GiB to pull`: where an image's facts come from and what they say.
fn facts_label(image: &ImageProfile) -> String {
    let mut parts = vec![image.source.label().to_string()];
    let cuda_by_tag = image.cuda_from_tag.as_ref().and(image.cuda);
    // NVIDIA's CUDA image is labelled by its CUDA version, which the tag note says already.
    if let Some(framework) = image
        .framework_label()
        .filter(|_| !(cuda_by_tag.is_some() && image.framework == Some(Framework::Cuda)))
    {
        parts.push(framework);
    }
    if let Some(cuda) = cuda_by_tag {
        parts.push(format!("CUDA {cuda} inferred from the tag"));
    }
    if let Some(bytes) = image.download_bytes {
        parts.push(format!("{} to pull", crate::units::human_bytes(bytes)));
    }
    parts.join(", ")
}

/// `8x NVIDIA H100 80GB HBM3 (sm_90)`: identical GPUs counted once.
fn gpu_groups(host: &super::profile::HostProfile) -> Vec<String> {
    let mut groups: Vec<(String, usize)> = Vec::new();
    for g in &host.gpus {
        let label = match g.compute_capability {
            Some(cc) => format!("{} (sm_{}{})", g.name, cc.major(), cc.minor()),
            None => g.name.clone(),
        };
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => groups.push((label, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(label, n)| {
            if n > 1 {
                format!("{n}x {label}")
            } else {
                label
            }
        })
        .collect()
}

/// Why an image that suits this driver and these GPUs still gets a worse verdict.
pub fn host_caveat(image_level: Level, level: Level) -> String {
    let gpus = if level == Level::WontRun {
        "it will not get a GPU here"
    } else {
        "whether it gets a GPU here is unknown"
    };
    format!(
        "{} on this driver and these GPUs, but {gpus}: see \"For every image\" below",
        image_level.word()
    )
}

pub fn runtime_words(runtime: GpuRuntime) -> &'static str {
    match runtime {
        GpuRuntime::Nvidia => "Docker has the NVIDIA runtime",
        GpuRuntime::Hook => "Docker gives GPUs through the NVIDIA hook (--gpus)",
        GpuRuntime::Cdi => "Docker has NVIDIA CDI devices",
        GpuRuntime::CdiTooOld => "Docker is too old for the NVIDIA CDI spec (needs 25+)",
        GpuRuntime::Missing => "Docker has no NVIDIA runtime or CDI spec",
        GpuRuntime::Unknown => "Docker not reachable",
    }
}
