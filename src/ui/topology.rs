//! The Topology tab: the GPU-to-GPU matrix `nvidia-smi topo -m` shows, with a legend and the selected pair explained.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::app::state::{AppState, GpuData};
use crate::gpu::{GpuLink, TopoPath};

const CELL: usize = 6;

fn cell_text(link: Option<GpuLink>) -> String {
    match link {
        Some(l) if l.nvlinks > 0 => format!("NV{}", l.nvlinks),
        Some(l) => l.path.code().to_string(),
        None => "?".into(),
    }
}

fn cell_style(link: Option<GpuLink>, s: &Styles) -> ratatui::style::Style {
    match link {
        Some(l) if l.nvlinks > 0 => s.ok(),
        Some(l) if l.path == TopoPath::CrossSocket => s.warn(),
        _ => s.text(),
    }
}

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, data: &GpuData, s: &Styles) {
    let gpus = &data.inventory.gpus;
    let matrix_height = (gpus.len() as u16 + 3).min(area.height);
    let [matrix_area, info_area] =
        Layout::vertical([Constraint::Length(matrix_height), Constraint::Min(0)]).areas(area);
    let mut lines = Vec::with_capacity(gpus.len() + 1);
    let mut head = vec![Span::raw(" ".repeat(CELL))];
    for g in gpus {
        head.push(Span::styled(
            format!("{:<CELL$}", format!("GPU{}", g.index)),
            s.header(),
        ));
    }
    lines.push(Line::from(head));
    for (a, ga) in gpus.iter().enumerate() {
        let row_style = if a == state.selected_gpu {
            s.selected()
        } else {
            s.header()
        };
        let mut row = vec![Span::styled(
            format!("{:<CELL$}", format!("GPU{}", ga.index)),
            row_style,
        )];
        for b in 0..gpus.len() {
            if a == b {
                row.push(Span::styled(format!("{:<CELL$}", "X"), s.muted()));
            } else {
                let link = data.inventory.topology.link(a, b);
                row.push(Span::styled(
                    format!("{:<CELL$}", cell_text(link)),
                    cell_style(link, s),
                ));
            }
        }
        lines.push(Line::from(row));
    }
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .title(Span::styled(" GPU topology ", s.title()))
                .border_style(s.border()),
        )
        .render(matrix_area, buf);
    info(info_area, buf, state, data, s);
}

fn info(area: Rect, buf: &mut Buffer, state: &AppState, data: &GpuData, s: &Styles) {
    if area.height < 3 {
        return;
    }
    let gpus = &data.inventory.gpus;
    let a = state.selected_gpu;
    let mut lines = Vec::new();
    if let Some(ga) = gpus.get(a) {
        lines.push(Line::styled(
            format!("GPU{} ({}) reaches:", ga.index, ga.pci_bus_id),
            s.accent(),
        ));
        for (b, gb) in gpus.iter().enumerate().filter(|(b, _)| *b != a) {
            let link = data.inventory.topology.link(a, b);
            let how = match link {
                Some(l) if l.nvlinks > 0 => format!(
                    "{} NVLink{}{}; PCIe path {}",
                    l.nvlinks,
                    if l.nvlinks == 1 { "" } else { "s" },
                    if l.nvswitch { " through NVSwitch" } else { "" },
                    l.path.describe()
                ),
                Some(l) => format!("PCIe only, {}", l.path.describe()),
                None => "unknown".into(),
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  GPU{:<3}", gb.index), s.text()),
                Span::styled(how, cell_style(link, s)),
            ]));
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "NV# = # NVLinks (through NVSwitches on HGX/DGX boards) · PIX = one PCIe switch · PXB = several switches · PHB = host bridge · NODE = across host bridges in a NUMA node · SYS = across CPU sockets (slowest for peer-to-peer)",
        s.muted(),
    ));
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .title(Span::styled(
                    " Links from the selected GPU (↑/↓) ",
                    s.title(),
                ))
                .border_style(s.border()),
        )
        .render(area, buf);
}
