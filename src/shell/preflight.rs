//! Pre-flight for a shell: do the GPUs exist and are they free, can Docker hand them over, is the
//! image here, and will it run on this driver.

use crate::compat::{
    judge, CompatData, GpuRuntime, HostProfile, ImageProfile, ImageSource, Level, Verdict,
};
use crate::docker::types::{EngineInfo, ImageInfo};
use crate::gpu::report::{GpuEntry, GpuReport};
use crate::image::ImageRef;
use crate::units;

use super::error::ShellError;
use super::spec::{GpuPlumbing, ResolvedGpu, ResolvedGpus, ShellGpus, ShellRequest};

/// Above this share of its memory in use a GPU counts as taken by someone else.
const BUSY_MEMORY_SHARE: f64 = 0.5;

/// What pre-flight needs to know about the machine, gathered by the caller.
#[derive(Debug, Clone)]
pub struct PreflightContext {
    pub gpu: GpuReport,
    pub engine: EngineInfo,
    pub local_images: Vec<ImageInfo>,
    pub compat: CompatData,
}

/// What pre-flight decided: the GPUs by UUID, how to ask Docker for them, what to warn about.
#[derive(Debug, Clone)]
pub struct Preflight {
    pub gpus: ResolvedGpus,
    pub plumbing: GpuPlumbing,
    pub warnings: Vec<String>,
    /// The compatibility verdict for the image on this host; `None` without GPUs.
    pub verdict: Option<Verdict>,
}

/// Checks a request against the machine; refuses what cannot work, warns about what may not.
pub fn preflight(req: &ShellRequest, ctx: &PreflightContext) -> Result<Preflight, ShellError> {
    let image =
        find_local(&req.image, &ctx.local_images).ok_or_else(|| ShellError::ImageNotLocal {
            image: req.image.clone(),
        })?;
    let gpus = resolve_gpus(&req.gpus, &ctx.gpu)?;
    if gpus.is_empty() {
        return Ok(Preflight {
            gpus,
            plumbing: GpuPlumbing::None,
            warnings: Vec::new(),
            verdict: None,
        });
    }
    let plumbing = gpu_plumbing(&ctx.engine)?;
    let mut warnings = busy_warnings(&gpus, &ctx.gpu);
    let (verdict, warning) = judge_image(&req.image, image, ctx, req.force)?;
    warnings.extend(warning);
    Ok(Preflight {
        gpus,
        plumbing,
        warnings,
        verdict: Some(verdict),
    })
}

/// The compatibility verdict for a local image on this host: "will not run" is refused with
/// every reason and its fix (a warning when forced), "runs via compat" is a warning.
pub fn judge_image(
    name: &str,
    image: &ImageInfo,
    ctx: &PreflightContext,
    force: bool,
) -> Result<(Verdict, Option<String>), ShellError> {
    let runtime = GpuRuntime::from_engine(Some(&ctx.engine));
    let host = HostProfile::from_report(&ctx.gpu, runtime);
    let profile = ImageProfile::from_facts(name, &image.facts, ImageSource::Local);
    let verdict = judge(&ctx.compat, &host, &profile);
    let warning = match verdict.level {
        Level::WontRun if !force => {
            return Err(ShellError::WontRun {
                image: name.to_string(),
                reasons: reasons_text(&verdict, Level::WontRun),
            })
        }
        Level::WontRun => Some(format!(
            "{name} will not run on this machine; starting it anyway (--force):\n{}",
            reasons_text(&verdict, Level::WontRun)
        )),
        Level::Compat => Some(format!(
            "{name} runs here only through a compatibility layer:\n{}",
            reasons_text(&verdict, Level::Compat)
        )),
        Level::Runs | Level::Unknown => None,
    };
    Ok((verdict, warning))
}

/// Up to `count` GPUs nobody uses (no processes, memory mostly free), least used first.
pub fn suggest_free_gpus(report: &GpuReport, count: usize) -> Vec<u32> {
    let mut free: Vec<(&GpuEntry, u64)> = report
        .gpus
        .iter()
        .filter(|g| !g.sample.lost && g.sample.processes.is_empty() && !memory_busy(g))
        .map(|g| (g, g.sample.memory_used_bytes.unwrap_or(0)))
        .collect();
    free.sort_by_key(|(g, used)| (*used, g.sample.util_gpu_pct.unwrap_or(0), g.info.index));
    free.into_iter()
        .take(count)
        .map(|(g, _)| g.info.index)
        .collect()
}

/// The local image a name means: a tag equal to it once both are read as references (so
/// `busybox` finds `docker.io/library/busybox:latest`), or an id prefix of at least 4 digits.
pub fn find_local<'a>(name: &str, local: &'a [ImageInfo]) -> Option<&'a ImageInfo> {
    let wanted = ImageRef::parse(name).ok();
    let hex = name.trim_start_matches("sha256:");
    local.iter().find(|image| {
        let by_tag = wanted.as_ref().is_some_and(|wanted| {
            image
                .tags
                .iter()
                .any(|t| ImageRef::parse(t).is_ok_and(|r| same_name(&r, wanted)))
        });
        by_tag || (hex.len() >= 4 && image.id.trim_start_matches("sha256:").starts_with(hex))
    })
}

/// Equal once a missing tag reads as `latest`, as `docker run busybox` means `busybox:latest`.
fn same_name(a: &ImageRef, b: &ImageRef) -> bool {
    a.registry_host() == b.registry_host()
        && a.repository() == b.repository()
        && a.effective_tag() == b.effective_tag()
}

fn resolve_gpus(wanted: &ShellGpus, report: &GpuReport) -> Result<ResolvedGpus, ShellError> {
    if *wanted == ShellGpus::None {
        return Ok(ResolvedGpus::default());
    }
    if let Some(error) = &report.error {
        return Err(ShellError::GpusUnreadable {
            detail: format!("{}: {}", error.title, error.message),
        });
    }
    let resolved = |g: &GpuEntry| ResolvedGpu {
        index: g.info.index,
        uuid: g.info.uuid.clone(),
        name: g.info.name.clone(),
    };
    let gpus: Vec<ResolvedGpu> = match wanted {
        ShellGpus::None => Vec::new(),
        ShellGpus::All => report.gpus.iter().map(resolved).collect(),
        ShellGpus::Indices(indices) => {
            let missing: Vec<String> = indices
                .iter()
                .filter(|i| !report.gpus.iter().any(|g| g.info.index == **i))
                .map(u32::to_string)
                .collect();
            if !missing.is_empty() {
                return Err(ShellError::NoSuchGpu {
                    missing: missing.join(", "),
                    present: present_gpus(report),
                });
            }
            let chosen = report
                .gpus
                .iter()
                .filter(|g| indices.contains(&g.info.index));
            chosen.map(resolved).collect()
        }
    };
    if gpus.is_empty() {
        return Err(ShellError::GpusUnreadable {
            detail: "the driver reports no GPU".into(),
        });
    }
    Ok(ResolvedGpus { gpus })
}

/// "GPUs 0-3 (4 × NVIDIA A100)": index and name, never the UUIDs.
fn present_gpus(report: &GpuReport) -> String {
    crate::gpu::report::brief_list(report)
}

/// How to ask this engine for GPUs: the nvidia runtime (or its hook) means the toolkit's `--gpus`
/// path; a CDI spec serves on Docker 25+; neither is refused with the toolkit message. The
/// decision is `GpuRuntime::from_engine`'s, as for the compatibility verdicts.
pub fn gpu_plumbing(engine: &EngineInfo) -> Result<GpuPlumbing, ShellError> {
    match GpuRuntime::from_engine(Some(engine)) {
        GpuRuntime::Nvidia | GpuRuntime::Hook => Ok(GpuPlumbing::DeviceRequest),
        GpuRuntime::Cdi => Ok(GpuPlumbing::Cdi),
        GpuRuntime::CdiTooOld => Err(ShellError::NoToolkit {
            detail: format!(
                "an NVIDIA CDI spec exists, but Docker {} (API {}) takes CDI devices only from API 1.44 (Docker 25)",
                engine.server_version, engine.api_version
            ),
        }),
        GpuRuntime::Missing | GpuRuntime::Unknown => Err(ShellError::NoToolkit {
            detail: format!(
                "Docker lists the runtimes {} and no NVIDIA CDI spec",
                engine.runtimes.join(", ")
            ),
        }),
    }
}

fn memory_busy(gpu: &GpuEntry) -> bool {
    match (gpu.sample.memory_used_bytes, gpu.info.memory_total_bytes) {
        (Some(used), Some(total)) if total > 0 => used as f64 / total as f64 > BUSY_MEMORY_SHARE,
        _ => false,
    }
}

fn busy_warnings(gpus: &ResolvedGpus, report: &GpuReport) -> Vec<String> {
    let mut warnings = Vec::new();
    for chosen in &gpus.gpus {
        let Some(entry) = report.gpus.iter().find(|g| g.info.uuid == chosen.uuid) else {
            continue;
        };
        let processes: Vec<String> = entry
            .sample
            .processes
            .iter()
            .map(describe_process)
            .collect();
        if !processes.is_empty() {
            warnings.push(format!(
                "GPU {} is in use by {}",
                chosen.index,
                processes.join(", ")
            ));
        } else if memory_busy(entry) {
            warnings.push(format!(
                "GPU {} has {} of memory in use",
                chosen.index,
                units::memory_pair(
                    entry.sample.memory_used_bytes,
                    entry.info.memory_total_bytes
                )
            ));
        }
    }
    if !warnings.is_empty() {
        let free = suggest_free_gpus(report, gpus.gpus.len());
        if !free.is_empty() {
            let list: Vec<String> = free.iter().map(u32::to_string).collect();
            warnings.push(format!("free GPUs: --gpus {}", list.join(",")));
        }
    }
    warnings
}

fn describe_process(p: &crate::gpu::GpuProcess) -> String {
    let command = p.command.as_deref().unwrap_or("?");
    let mut text = format!("{command} (pid {}", p.pid);
    if let Some(user) = &p.user {
        text.push_str(&format!(", {user}"));
    }
    if let Some(bytes) = p.used_memory_bytes {
        text.push_str(&format!(", {}", units::human_bytes(bytes)));
    }
    text.push(')');
    text
}

/// Every reason at `level`, each with its fix, one per line.
fn reasons_text(verdict: &Verdict, level: Level) -> String {
    verdict
        .reasons
        .iter()
        .filter(|r| r.level == level)
        .map(|r| match &r.fix {
            Some(fix) => format!("  - {}\n    fix: {fix}", r.text),
            None => format!("  - {}", r.text),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[path = "preflight_tests.rs"]
mod tests;
