//! The Topology tab: the GPU-to-GPU matrix `nvidia-smi topo -m` shows, with a legend and the selected pair explained.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::scroll::range_marker;
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
    let links = info_area(area, gpus.len());
    let matrix_area = Rect {
        height: area.height - links.height,
        ..area
    };
    let (rows, cols) = matrix_window(matrix_area, gpus.len(), state.selected_gpu);
    let mut lines = Vec::with_capacity(rows.len() + 1);
    // `‹` and `›` in the header where columns are left out on that side.
    let corner = if cols.start > 0 { "‹" } else { "" };
    let mut head = vec![Span::styled(format!("{corner:<CELL$}"), s.warn())];
    for b in cols.clone() {
        let more = if b + 1 == cols.end && cols.end < gpus.len() {
            "›"
        } else {
            ""
        };
        head.push(Span::styled(
            format!("{:<w$}", format!("GPU{}", gpus[b].index), w = CELL - 1),
            s.header(),
        ));
        head.push(Span::styled(format!("{more:<1}"), s.warn()));
    }
    lines.push(Line::from(head));
    for a in rows.clone() {
        let row_style = if a == state.selected_gpu {
            s.selected()
        } else {
            s.header()
        };
        let mut row = vec![Span::styled(
            format!("{:<CELL$}", format!("GPU{}", gpus[a].index)),
            row_style,
        )];
        for b in cols.clone() {
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
    let title = matrix_title(&rows, &cols, gpus.len(), matrix_area.width, s);
    Paragraph::new(lines)
        .block(Block::bordered().title(title).border_style(s.border()))
        .render(matrix_area, buf);
    info(links, buf, state, data, s);
}

/// The rows and the columns of the matrix that fit `area` (its box included), around the
/// selected GPU: every one of `n` where they fit; never a cell cut.
fn matrix_window(area: Rect, n: usize, selected: usize) -> (Range<usize>, Range<usize>) {
    let inner = usize::from(area.width.saturating_sub(2));
    // The row names' column, then one per GPU: where all fit, the last one's trailing space
    // may fall off; where not, it holds the `›`.
    let cols = match (inner + 1).saturating_sub(CELL) / CELL {
        all if all >= n => all,
        _ => inner.saturating_sub(CELL) / CELL,
    };
    let rows = usize::from(area.height.saturating_sub(3));
    let around = |fit: usize| {
        if fit >= n {
            return 0..n;
        }
        let first = selected.saturating_sub(fit / 2).min(n - fit);
        first..first + fit
    };
    (around(rows), around(cols))
}

/// The matrix's title: where rows or columns do not fit, which are shown (`cols 3-7 of 8`) and
/// that ↑/↓ moves them (they follow the selected GPU), as fits the width.
fn matrix_title<'a>(
    rows: &Range<usize>,
    cols: &Range<usize>,
    n: usize,
    width: u16,
    s: &Styles,
) -> Line<'a> {
    let part = |what: &str, r: &Range<usize>| {
        range_marker(r.start, r.len(), n)
            .map(|m| format!("{what} {}", m.trim_end_matches([' ', '↑', '↓'])))
    };
    let hidden: Vec<String> = [part("cols", cols), part("rows", rows)]
        .into_iter()
        .flatten()
        .collect();
    if hidden.is_empty() {
        return Line::from(Span::styled(" GPU topology ", s.title()));
    }
    let hidden = hidden.join(" · ");
    let room = usize::from(width.saturating_sub(4));
    let [long, short] = [format!("· {hidden} · ↑/↓ moves "), format!("· {hidden} ")];
    for (name, marker) in [
        (" GPU topology ", &long),
        (" Topology ", &long),
        (" Topology ", &short),
    ] {
        if name.chars().count() + marker.chars().count() <= room {
            return Line::from(vec![
                Span::styled(name, s.title()),
                Span::styled(marker.clone(), s.warn()),
            ]);
        }
    }
    Line::from(Span::styled(format!(" {hidden} "), s.warn()))
}

/// The legend of the matrix's codes, under the links when there is room.
const LEGEND: &str = "NV# = # NVLinks (through NVSwitches on HGX/DGX boards) · PIX = one PCIe switch · PXB = several switches · PHB = host bridge · NODE = across host bridges in a NUMA node · SYS = across CPU sockets (slowest for peer-to-peer)";

/// How the selected GPU reaches a peer, in words; with `codes`, an NVLink peer's PCIe path by its
/// code (the matrix's, which the legend explains) instead of in words.
fn link_words(link: Option<GpuLink>, codes: bool) -> String {
    match link {
        Some(l) if l.nvlinks > 0 => format!(
            "{} NVLink{}{}; PCIe path {}",
            l.nvlinks,
            if l.nvlinks == 1 { "" } else { "s" },
            if l.nvswitch { " through NVSwitch" } else { "" },
            if codes {
                l.path.code()
            } else {
                l.path.describe()
            },
        ),
        Some(l) => format!("PCIe only, {}", l.path.describe()),
        None => "unknown".into(),
    }
}

/// The peer's name column: `  GPU7   `.
const PEER_LABEL: usize = 8;

/// The peers of the selected GPU as lines, each a paragraph of its own (it may wrap): in words
/// where every peer's line fits `width`, else with the NVLink peers' PCIe paths as codes, all
/// alike, so that each peer keeps a line of its own at 80 columns.
fn peer_lines<'a>(state: &AppState, data: &GpuData, width: usize, s: &Styles) -> Vec<Line<'a>> {
    let gpus = &data.inventory.gpus;
    let a = state.selected_gpu;
    let links: Vec<_> = (0..gpus.len())
        .filter(|b| *b != a)
        .map(|b| (b, data.inventory.topology.link(a, b)))
        .collect();
    let codes = links
        .iter()
        .any(|(_, l)| PEER_LABEL + link_words(*l, false).chars().count() > width);
    links
        .into_iter()
        .map(|(b, link)| {
            Line::from(vec![
                Span::styled(format!("  GPU{:<3}", gpus[b].index), s.text()),
                Span::styled(link_words(link, codes), cell_style(link, s)),
            ])
        })
        .collect()
}

/// Rows each peer takes at `width` (more than one where its line wraps).
fn heights(peers: &[Line<'_>], width: u16) -> Vec<usize> {
    peers
        .iter()
        .map(|l| {
            Paragraph::new(l.clone())
                .wrap(Wrap { trim: false })
                .line_count(width)
                .max(1)
        })
        .collect()
}

/// The first peer shown, scrolled `scroll` peers down but no further than where the last peer
/// is at the bottom of `rows`; and how many peers are shown from there.
fn peer_window(heights: &[usize], rows: usize, scroll: usize) -> (usize, usize) {
    let mut last_first = heights.len();
    let mut used = 0;
    while last_first > 0 && used + heights[last_first - 1] <= rows {
        used += heights[last_first - 1];
        last_first -= 1;
    }
    let first = scroll.min(last_first.min(heights.len().saturating_sub(1)));
    let mut used = 0;
    let shown = heights[first..]
        .iter()
        .take_while(|h| {
            used += **h;
            used <= rows
        })
        .count();
    (first, shown)
}

/// The area of the links pane in the tab's `area`.
fn info_area(area: Rect, gpus: usize) -> Rect {
    let matrix_height = (gpus as u16 + 3).min(area.height);
    Rect {
        y: area.y + matrix_height,
        height: area.height - matrix_height,
        ..area
    }
}

/// The furthest the links pane scrolls (`J`/`K`) in the tab's `area`.
pub fn links_scroll_limit(area: Rect, state: &AppState, data: &GpuData) -> usize {
    let inner = Block::bordered().inner(info_area(area, data.inventory.gpus.len()));
    if inner.height < 2 {
        return 0;
    }
    let theme = crate::config::Theme::monochrome();
    let s = Styles::new(&theme);
    let peers = peer_lines(state, data, usize::from(inner.width), &s);
    if peers.is_empty() {
        return 0;
    }
    let rows = usize::from(inner.height) - 1;
    peer_window(&heights(&peers, inner.width), rows, usize::MAX).0
}

fn info(area: Rect, buf: &mut Buffer, state: &AppState, data: &GpuData, s: &Styles) {
    if area.height < 3 {
        return;
    }
    let gpus = &data.inventory.gpus;
    let block = Block::bordered().border_style(s.border());
    let inner = block.inner(area);
    let peers = peer_lines(state, data, usize::from(inner.width), s);
    let rows = usize::from(inner.height).saturating_sub(1);
    let hs = heights(&peers, inner.width);
    let (first, shown) = if peers.is_empty() {
        (0, 0)
    } else {
        peer_window(&hs, rows, state.links_scroll)
    };
    let mut title = vec![Span::styled(
        " Links from the selected GPU (↑/↓) ",
        s.title(),
    )];
    // Peers that do not fit are counted, and `J`/`K` bring them in; on a narrow pane the
    // title gives way to the count.
    if let Some(marker) = range_marker(first, shown, peers.len()) {
        let marker = format!("· peers {marker} J/K ");
        if 36 + marker.chars().count() > usize::from(inner.width) {
            title[0] = Span::styled(" Links ", s.title());
        }
        title.push(Span::styled(marker, s.warn()));
    }
    block.title(Line::from(title)).render(area, buf);
    let Some(ga) = gpus.get(state.selected_gpu) else {
        return;
    };
    let mut y = inner.y;
    Paragraph::new(Line::styled(
        format!("GPU{} ({}) reaches:", ga.index, ga.pci_bus_id),
        s.accent(),
    ))
    .render(
        Rect {
            y,
            height: 1,
            ..inner
        },
        buf,
    );
    y += 1;
    for (line, h) in peers.into_iter().zip(hs).skip(first).take(shown) {
        let h = h as u16;
        Paragraph::new(line).wrap(Wrap { trim: false }).render(
            Rect {
                y,
                height: h,
                ..inner
            },
            buf,
        );
        y += h;
    }
    // The legend below the links, from the second row left (a blank one between).
    let left = inner.bottom().saturating_sub(y);
    if first + shown == gpus.len().saturating_sub(1) && left >= 2 {
        Paragraph::new(Line::styled(LEGEND, s.muted()))
            .wrap(Wrap { trim: false })
            .render(
                Rect {
                    y: y + 1,
                    height: left - 1,
                    ..inner
                },
                buf,
            );
    }
}
