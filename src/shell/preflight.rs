//! Pre-flight for a shell: the checks every GPU container passes (`launch_check`: do the GPUs
//! exist, can Docker hand them over, is the image here, will it run on this driver), and whether
//! the GPUs are free.

use crate::compat::Verdict;
use crate::gpu::report::{GpuEntry, GpuReport};
use crate::launch_check::{
    check_readable, find_gpus, find_local, gpu_plumbing, judge_image, GpuPlumbing, LaunchError,
    PreflightContext, Workload,
};
use crate::units;

use super::error::ShellError;
use super::spec::{ResolvedGpu, ResolvedGpus, ShellGpus, ShellRequest};

/// Above this share of its memory in use a GPU counts as taken by someone else.
const BUSY_MEMORY_SHARE: f64 = 0.5;

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
        find_local(&req.image, &ctx.local_images).ok_or_else(|| LaunchError::ImageNotLocal {
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
    let plumbing = gpu_plumbing(&ctx.engine, Workload::Shell)?;
    let mut warnings = busy_warnings(&gpus, &ctx.gpu);
    let (verdict, warning) = judge_image(&req.image, image, ctx, req.force, Workload::Shell)?;
    warnings.extend(warning);
    Ok(Preflight {
        gpus,
        plumbing,
        warnings,
        verdict: Some(verdict),
    })
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

fn resolve_gpus(wanted: &ShellGpus, report: &GpuReport) -> Result<ResolvedGpus, ShellError> {
    if *wanted == ShellGpus::None {
        return Ok(ResolvedGpus::default());
    }
    check_readable(report, Workload::Shell)?;
    let resolved = |g: &GpuEntry| ResolvedGpu {
        index: g.info.index,
        uuid: g.info.uuid.clone(),
        name: g.info.name.clone(),
    };
    let gpus: Vec<ResolvedGpu> = match wanted {
        ShellGpus::None => Vec::new(),
        ShellGpus::All => report.gpus.iter().map(resolved).collect(),
        ShellGpus::Indices(indices) => {
            find_gpus(indices, report, |g, i| g.info.index == *i, u32::to_string)?;
            // In the host's order, as `gpudeck gpus` lists them.
            let chosen = report
                .gpus
                .iter()
                .filter(|g| indices.contains(&g.info.index));
            chosen.map(resolved).collect()
        }
    };
    if gpus.is_empty() {
        let none = LaunchError::gpus_unreadable(Workload::Shell, "the driver reports no GPU");
        return Err(none.into());
    }
    Ok(ResolvedGpus { gpus })
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

#[cfg(test)]
#[path = "preflight_tests.rs"]
mod tests;
