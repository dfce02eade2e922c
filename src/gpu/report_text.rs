//! The plain-text face of `gpudeck gpus`: the GPU table folded to the terminal's width as
//! nvidia-smi folds its own (two lines per GPU when one does not fit), notes, processes and
//! the topology matrix.

use std::fmt::Write as _;

use super::report::{GpuEntry, GpuReport};
use crate::units::{self, NA};

/// Narrower widths are laid out as this wide.
const MIN_WIDTH: usize = 40;

/// A column of the GPU table: header, width, right-aligned.
type Col = (&'static str, usize, bool);

/// The first line of a GPU: who it is and what it is doing.
const FIRST: [Col; 7] = [
    ("GPU", 3, false),
    ("NAME", 24, false),
    ("UTIL", 5, true),
    ("MEMU", 5, true),
    ("MEMORY", 12, true),
    ("TEMP", 6, true),
    ("POWER", 11, true),
];
/// The rest: clocks and link; beside the first on wide terminals, below it otherwise.
const SECOND: [Col; 5] = [
    ("SM", 8, true),
    ("MEM CLK", 9, true),
    ("PCIE", 11, false),
    ("P", 3, true),
    ("FAN", 4, true),
];
/// Where the folded second line starts (under the name, as in nvidia-smi).
const FOLD_INDENT: usize = 4;
/// The fixed columns of a process line before its command.
const PROCESS_FIXED: usize = 50;

fn width_of(cols: &[Col]) -> usize {
    cols.iter().map(|c| c.1).sum::<usize>() + cols.len().saturating_sub(1)
}

fn row(cols: &[Col], cells: &[String]) -> String {
    cols.iter()
        .zip(cells)
        .map(|(&(_, w, right), cell)| {
            let cell = units::truncate(cell, w);
            if right {
                format!("{cell:>w$}")
            } else {
                format!("{cell:<w$}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn heads(cols: &[Col]) -> Vec<String> {
    cols.iter().map(|c| c.0.to_string()).collect()
}

/// `text` wrapped to `width`, continuation lines indented by two spaces; words never split.
fn wrap(text: &str, width: usize) -> String {
    let options = textwrap::Options::new(width)
        .break_words(false)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .subsequent_indent("  ");
    textwrap::fill(text, &options)
}

/// The plain-text report, as pasted into a bug report, laid out for `width` columns.
pub fn render_text(r: &GpuReport, width: usize) -> String {
    let width = width.max(MIN_WIDTH);
    let mut out = String::new();
    let _ = writeln!(out, "{}", summary_lines(r, width));
    if let Some(e) = &r.error {
        let text = format!("{}: {}", e.title, e.message);
        let _ = writeln!(
            out,
            "\n{}\n{}",
            wrap(&text, width),
            wrap(&format!("Fix: {}", e.fix), width)
        );
        return out;
    }
    let one_line = width >= width_of(&FIRST) + 1 + width_of(&SECOND);
    out.push('\n');
    if one_line {
        let _ = writeln!(
            out,
            "{} {}",
            row(&FIRST, &heads(&FIRST)),
            row(&SECOND, &heads(&SECOND))
        );
    } else {
        let _ = writeln!(out, "{}", row(&FIRST, &heads(&FIRST)).trim_end());
        let _ = writeln!(
            out,
            "{:FOLD_INDENT$}{}",
            "",
            row(&SECOND, &heads(&SECOND)).trim_end()
        );
    }
    for g in &r.gpus {
        write_gpu(&mut out, g, one_line);
    }
    for g in &r.gpus {
        write_notes(&mut out, g, width);
    }
    write_processes(&mut out, r, width);
    write_topology(&mut out, r, width);
    out
}

/// "host … · driver … · CUDA … · NVML … · N GPUs", broken between its parts to fit `width`.
fn summary_lines(r: &GpuReport, width: usize) -> String {
    let sys = r.system.as_ref();
    let demo = sys.is_some_and(|s| s.source == super::types::SourceKind::Demo);
    let mut parts = vec![
        format!("host {}", r.host),
        format!(
            "driver {}",
            units::opt(sys.and_then(|s| s.driver_version.clone()))
        ),
        format!(
            "CUDA {}",
            units::opt(sys.and_then(|s| s.cuda_driver_version))
        ),
        format!(
            "NVML {}",
            units::opt(sys.and_then(|s| s.nvml_version.clone()))
        ),
        format!(
            "{} GPU{}",
            r.gpu_count,
            if r.gpu_count == 1 { "" } else { "s" }
        ),
    ];
    if demo {
        parts.push("DEMO: simulated GPUs".into());
    }
    let mut lines: Vec<String> = Vec::new();
    for part in parts {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 3 + part.chars().count() <= width => {
                line.push_str(" · ");
                line.push_str(&part);
            }
            _ => lines.push(part),
        }
    }
    lines.join("\n")
}

/// A GPU's notes on one line when they fit, else one line each (wrapped when one is longer).
fn write_notes(out: &mut String, g: &GpuEntry, width: usize) {
    let notes = gpu_notes(g);
    if notes.is_empty() {
        return;
    }
    let joined = format!("GPU {}: {}", g.info.index, notes.join("; "));
    if joined.chars().count() <= width {
        let _ = writeln!(out, "{joined}");
        return;
    }
    for note in notes {
        let _ = writeln!(
            out,
            "{}",
            wrap(&format!("GPU {}: {note}", g.info.index), width)
        );
    }
}

fn write_gpu(out: &mut String, g: &GpuEntry, one_line: bool) {
    let s = &g.sample;
    if s.lost {
        let _ = writeln!(
            out,
            "{:<3} {:<24} LOST: the GPU has fallen off the bus",
            g.info.index,
            units::truncate(&g.info.name, 24)
        );
        return;
    }
    let first = [
        g.info.index.to_string(),
        g.info.name.clone(),
        units::pct(s.util_gpu_pct),
        units::pct(s.util_mem_pct),
        // The dashboard's words for the same quantity: used/total GiB.
        units::memory_pair(s.memory_used_bytes, g.info.memory_total_bytes),
        units::celsius(s.temp_c),
        units::power_pair(s.power_w, s.power_limit_w),
    ];
    let second = [
        units::mhz(s.sm_clock_mhz),
        units::mhz(s.mem_clock_mhz),
        units::pcie(s.pcie_gen, s.pcie_width),
        s.pstate.map_or_else(|| NA.to_string(), |p| format!("P{p}")),
        units::pct(s.fan_pct),
    ];
    if one_line {
        let _ = writeln!(out, "{} {}", row(&FIRST, &first), row(&SECOND, &second));
    } else {
        let _ = writeln!(out, "{}", row(&FIRST, &first).trim_end());
        let _ = writeln!(
            out,
            "{:FOLD_INDENT$}{}",
            "",
            row(&SECOND, &second).trim_end()
        );
    }
}

fn gpu_notes(g: &GpuEntry) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(kind) = g.pcie_downgrade {
        notes.push(format!(
            "PCIe link {} below its maximum {}: {}",
            units::pcie(g.sample.pcie_gen, g.sample.pcie_width),
            units::pcie(g.info.pcie_gen_max, g.info.pcie_width_max),
            kind.words()
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

fn write_processes(out: &mut String, r: &GpuReport, width: usize) {
    let procs: Vec<_> = r.gpus.iter().flat_map(|g| &g.sample.processes).collect();
    let _ = writeln!(out, "\nProcesses:");
    if procs.is_empty() {
        // The words the Processes tab uses.
        let _ = writeln!(out, "  no processes");
        return;
    }
    let _ = writeln!(
        out,
        "{:<3} {:>8} {:<12} {:>10} {:<12} COMMAND",
        "GPU", "PID", "USER", "GPU MEM", "CONTAINER"
    );
    // The command gets what the fixed columns leave, cut with an ellipsis.
    let command_width = width.saturating_sub(PROCESS_FIXED).max(10);
    for p in &procs {
        let _ = writeln!(
            out,
            "{:<3} {:>8} {:<12} {:>10} {:<12} {}",
            p.gpu_index,
            p.pid,
            units::truncate(p.user.as_deref().unwrap_or(NA), 12),
            p.used_memory_bytes
                .map_or_else(|| NA.to_string(), units::mib),
            p.container.as_ref().map_or("-", |c| c.short_id()),
            units::truncate(p.command.as_deref().unwrap_or(NA), command_width),
        );
    }
    if procs
        .iter()
        .any(|p| p.container.as_ref().is_some_and(|c| c.is_simulated()))
    {
        out.push_str(&crate::output::wrap_to(
            "  (The containers are simulated (--demo): no Docker Engine has them; `gpudeck \
             gpus --json` says \"runtime\": \"simulated\".)",
            "   ",
            width,
        ));
        out.push('\n');
    }
}

/// The matrix `nvidia-smi topo -m` prints; like it, a matrix of many GPUs is as wide as it
/// needs (six columns per GPU), since a folded matrix cannot be read.
fn write_topology(out: &mut String, r: &GpuReport, width: usize) {
    if r.gpus.len() < 2 {
        return;
    }
    let _ = writeln!(out, "\nTopology:");
    let mut head = format!("{:<6}", "");
    for g in &r.gpus {
        let _ = write!(head, "{:<6}", format!("GPU{}", g.info.index));
    }
    let _ = writeln!(out, "{}", head.trim_end());
    for ga in &r.gpus {
        let mut line = format!("{:<6}", format!("GPU{}", ga.info.index));
        for gb in &r.gpus {
            let _ = write!(
                line,
                "{:<6}",
                topology_cell(r, ga.info.index, gb.info.index)
            );
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let legend = "Legend: NV# = # NVLinks (through NVSwitches on HGX/DGX boards), \
                  PIX = one PCIe switch, PXB = several PCIe switches, PHB = PCIe host bridge, \
                  NODE = across host bridges in a NUMA node, SYS = across CPU sockets";
    let _ = writeln!(out, "{}", wrap(legend, width));
}

fn topology_cell(r: &GpuReport, a: u32, b: u32) -> String {
    if a == b {
        return "X".to_string();
    }
    r.topology
        .iter()
        .find(|t| (t.gpu_a, t.gpu_b) == (a, b) || (t.gpu_b, t.gpu_a) == (a, b))
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes_of(gen: u32, width: u32, pstate: u32, util: u32) -> Vec<String> {
        let (info, sample) = crate::gpu::report::pcie_case(gen, width, Some(pstate), util);
        gpu_notes(&GpuEntry::new(info, sample))
    }

    #[test]
    fn gpu_notes_name_a_downgraded_link_and_its_kind_but_not_an_idle_one() {
        assert!(notes_of(1, 16, 8, 2).is_empty(), "idle at P8: power saving");
        assert_eq!(
            notes_of(1, 16, 0, 90),
            ["PCIe link Gen1 x16 below its maximum Gen5 x16: a lower generation under load"]
        );
        assert_eq!(
            notes_of(1, 8, 8, 0),
            ["PCIe link Gen1 x8 below its maximum Gen5 x16: narrower than its maximum"]
        );
    }
}
