//! `gpudeck gpus`: one sample of every GPU as a plain table or a stable JSON document.

use std::fmt::Write as _;
use std::sync::Arc;

use serde::Serialize;

use super::collector::ProcessEnricher;
use super::source::{GpuError, GpuSource};
use super::types::{GpuSample, GpuStatic, Inventory, SystemInfo, TopoPath, Topology};
use crate::host::ProcessTable;
use crate::units::{self, NA};

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

/// The plain-text table, as pasted into a bug report.
pub fn render_text(r: &GpuReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", summary_line(r));
    if let Some(e) = &r.error {
        let _ = writeln!(out, "\n{}: {}\nFix: {}", e.title, e.message, e.fix);
        return out;
    }
    let _ = writeln!(
        out,
        "\n{:<3} {:<24} {:>5} {:>5} {:>19} {:>6} {:>11} {:>8} {:>9} {:<11} {:>3} {:>4}",
        "GPU",
        "NAME",
        "UTIL",
        "MEMU",
        "MEMORY",
        "TEMP",
        "POWER",
        "SM",
        "MEM CLK",
        "PCIE",
        "P",
        "FAN"
    );
    for g in &r.gpus {
        let _ = writeln!(out, "{}", gpu_row(g));
    }
    for g in &r.gpus {
        let notes = gpu_notes(g);
        if !notes.is_empty() {
            let _ = writeln!(out, "GPU {}: {}", g.info.index, notes.join("; "));
        }
    }
    write_processes(&mut out, r);
    write_topology(&mut out, r);
    out
}

fn summary_line(r: &GpuReport) -> String {
    let sys = r.system.as_ref();
    let demo = sys.is_some_and(|s| s.source == super::types::SourceKind::Demo);
    format!(
        "host {} · driver {} · CUDA {} · NVML {} · {} GPU{}{}",
        r.host,
        units::opt(sys.and_then(|s| s.driver_version.clone())),
        units::opt(sys.and_then(|s| s.cuda_driver_version)),
        units::opt(sys.and_then(|s| s.nvml_version.clone())),
        r.gpu_count,
        if r.gpu_count == 1 { "" } else { "s" },
        if demo { " · DEMO: simulated GPUs" } else { "" },
    )
}

fn gpu_row(g: &GpuEntry) -> String {
    let s = &g.sample;
    if s.lost {
        return format!(
            "{:<3} {:<24} LOST: the GPU has fallen off the bus",
            g.info.index,
            units::truncate(&g.info.name, 24)
        );
    }
    let memory = match (s.memory_used_bytes, g.info.memory_total_bytes) {
        (Some(u), Some(t)) => format!("{} / {}", units::mib(u), units::mib(t)),
        _ => NA.to_string(),
    };
    format!(
        "{:<3} {:<24} {:>5} {:>5} {:>19} {:>6} {:>11} {:>8} {:>9} {:<11} {:>3} {:>4}",
        g.info.index,
        units::truncate(&g.info.name, 24),
        units::pct(s.util_gpu_pct),
        units::pct(s.util_mem_pct),
        memory,
        units::celsius(s.temp_c),
        units::power_pair(s.power_w, s.power_limit_w),
        units::mhz(s.sm_clock_mhz),
        units::mhz(s.mem_clock_mhz),
        units::pcie(s.pcie_gen, s.pcie_width),
        s.pstate.map_or_else(|| NA.to_string(), |p| format!("P{p}")),
        units::pct(s.fan_pct),
    )
}

fn gpu_notes(g: &GpuEntry) -> Vec<String> {
    let mut notes = Vec::new();
    if g.pcie_downgraded {
        notes.push(format!(
            "PCIe link {} below its maximum {}",
            units::pcie(g.sample.pcie_gen, g.sample.pcie_width),
            units::pcie(g.info.pcie_gen_max, g.info.pcie_width_max)
        ));
    }
    if let Some(reasons) = &g.sample.throttle_reasons {
        let slow: Vec<&str> = reasons
            .iter()
            .map(String::as_str)
            .filter(|r| super::types::is_slowdown(r))
            .collect();
        if !slow.is_empty() {
            notes.push(format!("clocks held back: {}", slow.join(", ")));
        }
    }
    if g.sample.ecc_uncorrected.unwrap_or(0) > 0 || g.sample.ecc_corrected.unwrap_or(0) > 0 {
        notes.push(format!(
            "ECC errors since boot: {} corrected, {} uncorrected",
            units::opt(g.sample.ecc_corrected),
            units::opt(g.sample.ecc_uncorrected)
        ));
    }
    match g.sample.remapped_rows {
        Some(r) if r.failure => {
            notes.push("row remapping failed: the memory cannot be repaired further".into())
        }
        Some(r) if r.pending => notes.push("a row remap waits for a GPU reset".into()),
        _ => {}
    }
    if g.sample.retired_pages.is_some_and(|p| p.pending) {
        notes.push("page retirement waits for a reboot".into());
    }
    for e in &g.sample.errors {
        notes.push(format!("{} unreadable: {}", e.metric, e.message));
    }
    notes
}

fn write_processes(out: &mut String, r: &GpuReport) {
    let procs: Vec<_> = r.gpus.iter().flat_map(|g| &g.sample.processes).collect();
    let _ = writeln!(out, "\nProcesses:");
    if procs.is_empty() {
        let _ = writeln!(out, "  none");
        return;
    }
    let _ = writeln!(
        out,
        "{:<3} {:>8} {:<12} {:>10} {:<12} COMMAND",
        "GPU", "PID", "USER", "GPU MEM", "CONTAINER"
    );
    for p in procs {
        let _ = writeln!(
            out,
            "{:<3} {:>8} {:<12} {:>10} {:<12} {}",
            p.gpu_index,
            p.pid,
            units::truncate(p.user.as_deref().unwrap_or(NA), 12),
            p.used_memory_bytes
                .map_or_else(|| NA.to_string(), units::mib),
            p.container.as_ref().map_or("-", |c| c.short_id()),
            p.command.as_deref().unwrap_or(NA),
        );
    }
}

fn write_topology(out: &mut String, r: &GpuReport) {
    if r.gpus.len() < 2 {
        return;
    }
    let _ = writeln!(out, "\nTopology:");
    let _ = write!(out, "{:<6}", "");
    for g in &r.gpus {
        let _ = write!(out, "{:<6}", format!("GPU{}", g.info.index));
    }
    let _ = writeln!(out);
    for ga in &r.gpus {
        let _ = write!(out, "{:<6}", format!("GPU{}", ga.info.index));
        for gb in &r.gpus {
            let cell = if ga.info.index == gb.info.index {
                "X".to_string()
            } else {
                r.topology
                    .iter()
                    .find(|t| {
                        (t.gpu_a, t.gpu_b) == (ga.info.index, gb.info.index)
                            || (t.gpu_b, t.gpu_a) == (ga.info.index, gb.info.index)
                    })
                    .map_or_else(
                        || "?".to_string(),
                        |t| {
                            if t.nvlinks > 0 {
                                format!("NV{}", t.nvlinks)
                            } else {
                                t.path_code.to_string()
                            }
                        },
                    )
            };
            let _ = write!(out, "{cell:<6}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "Legend: NV# = # NVLinks (through NVSwitches on HGX/DGX boards), PIX = one PCIe switch, PXB = several PCIe switches, PHB = PCIe host bridge, NODE = across host bridges in a NUMA node, SYS = across CPU sockets");
}
