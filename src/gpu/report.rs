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
    /// `pcie_downgrade.is_some()`, kept for the scripts that read it.
    pub pcie_downgraded: bool,
    /// Why the link counts as downgraded ([`pcie_downgrade`]), `null` when it does not.
    pub pcie_downgrade: Option<PcieDowngrade>,
    #[serde(flatten)]
    pub sample: GpuSample,
}

impl GpuEntry {
    /// The entry of one GPU, its PCIe verdict judged from the two.
    pub fn new(info: GpuStatic, sample: GpuSample) -> GpuEntry {
        let downgrade = pcie_downgrade(&info, &sample);
        GpuEntry {
            info,
            pcie_downgraded: downgrade.is_some(),
            pcie_downgrade: downgrade,
            sample,
        }
    }
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

/// How a PCIe link runs below what it should.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PcieDowngrade {
    /// Fewer lanes than the maximum (x8 of x16): a wrong slot, a loose card or riser. No power
    /// state lowers the width, so it counts at any load.
    Width,
    /// A lower generation while the GPU is under load ([`under_load`]): a riser or slot that
    /// cannot hold the speed, or the BIOS's PCIe setting.
    Generation,
}

impl PcieDowngrade {
    /// In a few words, for a pane or a check.
    pub fn words(self) -> &'static str {
        match self {
            PcieDowngrade::Width => "narrower than its maximum",
            PcieDowngrade::Generation => "a lower generation under load",
        }
    }
}

/// GPU utilisation from which a GPU counts as busy when it does not report its P-state. Idle
/// GPUs read 0-3 %, from the driver's own housekeeping.
pub const BUSY_UTIL_PCT: u32 = 10;

/// Whether the GPU is working, so that its PCIe link should run at full speed: in P0-P2 when
/// it reports its P-state (the P-state is what lowers the link: an idle GPU drops to P8 and
/// below, and its link to Gen1, to save power), else at [`BUSY_UTIL_PCT`] or more.
pub fn under_load(sample: &GpuSample) -> bool {
    match sample.pstate {
        Some(p) => p <= 2,
        None => sample.util_gpu_pct.is_some_and(|u| u >= BUSY_UTIL_PCT),
    }
}

/// Whether (and how) a PCIe link runs below what both ends support: a narrower width at any
/// load, a lower generation only [`under_load`] (an idle GPU lowers it to save power). The one
/// rule behind the GPU list's `PCIe↓`, the detail pane, doctor and `gpudeck gpus`.
pub fn pcie_downgrade(gpu: &GpuStatic, sample: &GpuSample) -> Option<PcieDowngrade> {
    let below =
        |cur: Option<u32>, max: Option<u32>| matches!((cur, max), (Some(c), Some(m)) if c < m);
    if below(sample.pcie_width, gpu.pcie_width_max) {
        Some(PcieDowngrade::Width)
    } else if below(sample.pcie_gen, gpu.pcie_gen_max) && under_load(sample) {
        Some(PcieDowngrade::Generation)
    } else {
        None
    }
}

/// [`pcie_downgrade`] as a yes or no.
pub fn pcie_downgraded(gpu: &GpuStatic, sample: &GpuSample) -> bool {
    pcie_downgrade(gpu, sample).is_some()
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
        .map(|(g, sample)| GpuEntry::new(g.clone(), sample))
        .collect();
    report(host, inventory, gpus)
}

/// A report from facts and samples already collected (the TUI's), with no NVML call.
pub fn from_samples(host: String, inventory: &Inventory, samples: &[GpuSample]) -> GpuReport {
    let gpus = inventory
        .gpus
        .iter()
        .zip(samples)
        .map(|(g, sample)| GpuEntry::new(g.clone(), sample.clone()))
        .collect();
    report(host, inventory.clone(), gpus)
}

/// A report for a machine where the source could not be opened, with the driver's facts when
/// the driver answered (loaded, but no GPU found).
pub fn failed(host: String, e: &GpuError) -> GpuReport {
    GpuReport {
        schema: SCHEMA,
        host,
        system: e.system().cloned(),
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

/// For the PCIe rule's tests in every view: an H100 (Gen5 x16 at best) reading this link,
/// P-state and utilisation.
#[cfg(test)]
pub(crate) fn pcie_case(
    gen: u32,
    width: u32,
    pstate: Option<u32>,
    util: u32,
) -> (GpuStatic, GpuSample) {
    let info = GpuStatic {
        pcie_gen_max: Some(5),
        pcie_width_max: Some(16),
        ..GpuStatic::default()
    };
    let sample = GpuSample {
        pcie_gen: Some(gen),
        pcie_width: Some(width),
        pstate,
        util_gpu_pct: Some(util),
        ..GpuSample::default()
    };
    (info, sample)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(gen: u32, width: u32, pstate: Option<u32>, util: u32) -> GpuEntry {
        let (info, sample) = pcie_case(gen, width, pstate, util);
        GpuEntry::new(info, sample)
    }

    #[test]
    fn a_lower_generation_counts_only_under_load_and_a_narrower_width_always() {
        use PcieDowngrade::{Generation, Width};
        let cases = [
            // Idle at P8 reading a few percent: power saving.
            (entry(1, 16, Some(8), 3), None),
            // Busy at P0: the link should be at full speed.
            (entry(1, 16, Some(0), 85), Some(Generation)),
            // P2 (where GeForce cards compute) counts as working, even between kernels.
            (entry(3, 16, Some(2), 0), Some(Generation)),
            // Without a P-state, utilisation decides: under 10 % is idle.
            (entry(1, 16, None, 9), None),
            (entry(1, 16, None, 10), Some(Generation)),
            // A narrower link at any load; width before generation.
            (entry(1, 8, Some(8), 0), Some(Width)),
            (entry(3, 8, Some(0), 100), Some(Width)),
            (entry(5, 16, Some(0), 100), None),
        ];
        for (e, want) in cases {
            assert_eq!(e.pcie_downgrade, want, "{:?}", e.sample);
            assert_eq!(e.pcie_downgraded, want.is_some());
            assert_eq!(pcie_downgraded(&e.info, &e.sample), want.is_some());
        }
        // Unknown maxima or links judge nothing.
        let mut unknown = entry(1, 8, Some(0), 100);
        unknown.info.pcie_width_max = None;
        unknown.info.pcie_gen_max = None;
        assert_eq!(pcie_downgrade(&unknown.info, &unknown.sample), None);
    }

    #[test]
    fn the_json_says_whether_and_why_a_link_is_downgraded() {
        let json = |e: &GpuEntry| serde_json::to_value(e).expect("json");
        let idle = json(&entry(1, 16, Some(8), 2));
        assert_eq!(idle["pcie_downgraded"], false);
        assert!(idle["pcie_downgrade"].is_null());
        let busy = json(&entry(1, 16, Some(0), 90));
        assert_eq!(busy["pcie_downgraded"], true);
        assert_eq!(busy["pcie_downgrade"], "generation");
        let narrow = json(&entry(1, 8, Some(8), 0));
        assert_eq!(narrow["pcie_downgraded"], true);
        assert_eq!(narrow["pcie_downgrade"], "width");
    }

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
