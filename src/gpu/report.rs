//! `gpudeck gpus`: one sample of every GPU as a plain table or a stable JSON document.

use std::sync::Arc;

use serde::Serialize;

use super::collector::ProcessEnricher;
use super::source::{GpuError, GpuSource};
use super::types::{GpuSample, GpuStatic, Inventory, SystemInfo, TopoPath, Topology};
use crate::host::ProcessTable;

/// The JSON schema id; bump it when a field changes meaning or disappears.
pub const SCHEMA: &str = "gpudeck.gpus/v1";

/// A snapshot of the machine's GPUs.
#[derive(Debug, Clone, Serialize)]
pub struct GpuReport {
    pub schema: &'static str,
    pub host: String,
    #[serde(flatten)]
    pub system: Option<SystemInfo>,
    pub gpu_count: usize,
    pub gpus: Vec<GpuEntry>,
    pub topology: Vec<TopologyEntry>,
    pub error: Option<ReportError>,
}

impl GpuReport {
    /// No GPUs read: for work that does not touch this machine's GPUs (a Slurm job).
    pub fn unread() -> GpuReport {
        GpuReport {
            schema: SCHEMA,
            host: crate::host::hostname(),
            system: None,
            gpu_count: 0,
            gpus: Vec::new(),
            topology: Vec::new(),
            error: None,
        }
    }
}

/// One GPU: static facts and the live sample side by side.
#[derive(Debug, Clone, Serialize)]
pub struct GpuEntry {
    #[serde(flatten)]
    pub info: GpuStatic,
    pub pcie_downgraded: bool,
    #[serde(flatten)]
    pub sample: GpuSample,
}

/// One pair of GPUs in the topology matrix.
#[derive(Debug, Clone, Serialize)]
pub struct TopologyEntry {
    pub gpu_a: u32,
    pub gpu_b: u32,
    pub nvlinks: u32,
    /// The NVLinks go through NVSwitches (HGX/DGX boards).
    pub nvswitch: bool,
    pub path: TopoPath,
    pub path_code: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReportError {
    pub title: &'static str,
    pub message: String,
    pub fix: &'static str,
}

/// Whether a PCIe link trains below what both ends support (a loose riser, a wrong slot).
pub fn pcie_downgraded(gpu: &GpuStatic, sample: &GpuSample) -> bool {
    matches!((sample.pcie_width, gpu.pcie_width_max), (Some(cur), Some(max)) if cur < max)
        || matches!((sample.pcie_gen, gpu.pcie_gen_max), (Some(cur), Some(max)) if cur < max && sample.util_gpu_pct.unwrap_or(0) > 0)
}

/// Opens the source, samples every GPU once and describes their processes.
pub fn collect(
    source: &mut dyn GpuSource,
    table: &Arc<dyn ProcessTable>,
    host: String,
) -> GpuReport {
    let inventory = match source.inventory() {
        Ok(inv) => inv,
        Err(e) => return failed(host, &e),
    };
    let mut samples: Vec<GpuSample> = inventory.gpus.iter().map(|g| source.sample(g)).collect();
    // A one-off look, so the health counters are read too (a few dozen µs calls per GPU).
    for (g, sample) in inventory.gpus.iter().zip(samples.iter_mut()) {
        sample.health = source.health(g);
    }
    ProcessEnricher::new(Arc::clone(table)).enrich(&mut samples, source);
    let gpus = inventory
        .gpus
        .iter()
        .zip(samples)
        .map(|(g, sample)| GpuEntry {
            pcie_downgraded: pcie_downgraded(g, &sample),
            info: g.clone(),
            sample,
        })
        .collect();
    report(host, inventory, gpus)
}

/// A report from facts and samples already collected (the TUI's), with no NVML call.
pub fn from_samples(host: String, inventory: &Inventory, samples: &[GpuSample]) -> GpuReport {
    let gpus = inventory
        .gpus
        .iter()
        .zip(samples)
        .map(|(g, sample)| GpuEntry {
            pcie_downgraded: pcie_downgraded(g, sample),
            info: g.clone(),
            sample: sample.clone(),
        })
        .collect();
    report(host, inventory.clone(), gpus)
}

/// A report for a machine where the source could not be opened.
pub fn failed(host: String, e: &GpuError) -> GpuReport {
    GpuReport {
        schema: SCHEMA,
        host,
        system: None,
        gpu_count: 0,
        gpus: Vec::new(),
        topology: Vec::new(),
        error: Some(ReportError {
            title: e.title(),
            message: e.to_string(),
            fix: e.fix(),
        }),
    }
}

/// The GPUs in a few words for a message: "GPUs 0-7 (8 × NVIDIA H100 80GB HBM3)", a run of one
/// model under one range, never the UUIDs (`gpudeck gpus` shows those).
pub fn brief_list(report: &GpuReport) -> String {
    let gpus: Vec<(u32, &str)> = report
        .gpus
        .iter()
        .map(|g| (g.info.index, g.info.name.as_str()))
        .collect();
    brief(&gpus)
}

/// [`brief_list`] of (index, name) pairs.
fn brief(gpus: &[(u32, &str)]) -> String {
    let mut groups: Vec<(u32, u32, &str)> = Vec::new();
    for &(index, name) in gpus {
        match groups.last_mut() {
            Some((_, last, n)) if *n == name && index == *last + 1 => *last = index,
            _ => groups.push((index, index, name)),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|&(first, last, name)| match last - first {
            0 => format!("{first} ({name})"),
            span => format!("{first}-{last} ({} × {name})", span + 1),
        })
        .collect();
    match gpus.len() {
        0 => "no GPUs".into(),
        1 => format!("GPU {}", parts.join(", ")),
        _ => format!("GPUs {}", parts.join(", ")),
    }
}

fn report(host: String, inventory: Inventory, gpus: Vec<GpuEntry>) -> GpuReport {
    GpuReport {
        schema: SCHEMA,
        host,
        system: Some(inventory.system),
        gpu_count: gpus.len(),
        topology: topology_entries(&inventory.topology, &gpus),
        gpus,
        error: None,
    }
}

fn topology_entries(topo: &Topology, gpus: &[GpuEntry]) -> Vec<TopologyEntry> {
    let mut out = Vec::new();
    for (a, ga) in gpus.iter().enumerate() {
        for (b, gb) in gpus.iter().enumerate().skip(a + 1) {
            if let Some(link) = topo.link(a, b) {
                out.push(TopologyEntry {
                    gpu_a: ga.info.index,
                    gpu_b: gb.info.index,
                    nvlinks: link.nvlinks,
                    nvswitch: link.nvswitch,
                    path: link.path,
                    path_code: link.path.code(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brief_list_groups_runs_of_one_model() {
        assert_eq!(brief(&[]), "no GPUs");
        assert_eq!(brief(&[(0, "T4")]), "GPU 0 (T4)");
        let eight: Vec<(u32, &str)> = (0..8).map(|i| (i, "NVIDIA H100 80GB HBM3")).collect();
        assert_eq!(brief(&eight), "GPUs 0-7 (8 × NVIDIA H100 80GB HBM3)");
        let mixed = [(0, "A100"), (1, "A100"), (2, "T4"), (4, "T4")];
        assert_eq!(brief(&mixed), "GPUs 0-1 (2 × A100), 2 (T4), 4 (T4)");
    }
}
