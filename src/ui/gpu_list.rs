//! The GPUs tab: one row (compact, for many GPUs) or two (with bars and a history sparkline) per GPU, then the selected GPU's detail.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::scroll::range_marker;
use super::style::{bar, sparkline, Styles};
use super::{fastline, gpu_detail};
use crate::app::state::{AppState, GpuData};
use crate::config::GraphMetric;
use crate::gpu::report::pcie_downgraded;
use crate::gpu::{GpuSample, GpuStatic};
use crate::units;

/// Where the GPU list and the detail pane sit in the tab's body.
pub struct GpuTabLayout {
    pub list: Rect,
    pub detail: Rect,
}

/// GPUs the list shows (all of them when there are fewer) before the detail pane gets a row.
const LIST_MIN_GPUS: u16 = 3;
/// Rows below which the detail pane is not worth drawing (its border and two facts): the list
/// takes them instead.
const DETAIL_MIN: u16 = 4;

/// The list on top, as tall as its GPUs need while leaving the detail pane room (9 rows, or half
/// the body); on a short terminal the detail yields first: the list keeps at least
/// `LIST_MIN_GPUS` GPUs, and a detail pane too small to say anything gives its rows to the list.
pub fn layout(body: Rect, state: &AppState, gpus: usize) -> GpuTabLayout {
    let per_row = rows_per_gpu(state, gpus) as u16;
    let count = u16::try_from(gpus).unwrap_or(u16::MAX);
    let wanted = count.saturating_mul(per_row).saturating_add(3);
    let floor = LIST_MIN_GPUS.min(count) * per_row + 3;
    let max = body.height.saturating_sub(9).max(body.height / 2);
    let mut list_height = wanted.min(max).max(floor).min(body.height);
    if body.height - list_height < DETAIL_MIN {
        list_height = wanted.min(body.height);
    }
    GpuTabLayout {
        list: Rect::new(body.x, body.y, body.width, list_height),
        detail: Rect::new(
            body.x,
            body.y + list_height,
            body.width,
            body.height - list_height,
        ),
    }
}

fn rows_per_gpu(state: &AppState, gpus: usize) -> usize {
    if gpus >= state.compact_threshold {
        1
    } else {
        2
    }
}

/// First GPU shown, so that the selected one is always visible.
fn scroll_offset(selected: usize, visible: usize) -> usize {
    selected.saturating_sub(visible.saturating_sub(1))
}

pub fn render_tab(body: Rect, buf: &mut Buffer, state: &AppState, data: &GpuData, s: &Styles) {
    let n = data.inventory.gpus.len();
    let l = layout(body, state, n);
    render_list(l.list, buf, state, data, s);
    if l.detail.height > 2 {
        gpu_detail::render(l.detail, buf, state, data, s);
    }
}

fn render_list(area: Rect, buf: &mut Buffer, state: &AppState, data: &GpuData, s: &Styles) {
    let n = data.inventory.gpus.len();
    let compact = n >= state.compact_threshold;
    let per = rows_per_gpu(state, n);
    let visible = (area.height.saturating_sub(3) as usize) / per;
    let first = scroll_offset(state.selected_gpu, visible);
    let mut title = vec![Span::styled(
        if compact {
            " GPUs (compact) "
        } else {
            " GPUs "
        },
        s.title(),
    )];
    // A list that does not fit says which GPUs it shows, of how many, and where the rest are.
    if let Some(marker) = range_marker(first, visible.min(n - first.min(n)), n) {
        title.push(Span::styled(format!("{marker} "), s.warn()));
    }
    let title = Line::from(title);
    let inner = fastline::bordered(area, buf, &title, s.border());
    if inner.height == 0 {
        return;
    }
    let name_w = name_width(inner.width);
    let bar_w = bar_width(inner.width);
    let header = format!(
        "  #  {:<name_w$} {:<util_w$}{:<mem_w$}TEMP   POWER     FLAGS",
        "NAME",
        "UTIL",
        "MEMORY",
        util_w = bar_w + 6,
        mem_w = bar_w + 13,
    );
    let header = Line::styled(
        header_fitted(&header, inner.width, name_w, bar_w),
        s.header(),
    );
    fastline::render(&header, Rect { height: 1, ..inner }, buf);
    for (slot, (gpu, sample)) in data
        .inventory
        .gpus
        .iter()
        .zip(&data.samples)
        .skip(first)
        .take(visible)
        .enumerate()
    {
        let y = inner.y + 1 + (slot * per) as u16;
        let selected = first + slot == state.selected_gpu;
        let line_area = Rect::new(inner.x, y, inner.width, 1);
        let last_xid = data.xids.last(gpu.index).map(|e| e.xid);
        gpu_line(gpu, sample, last_xid, selected, line_area, buf, s);
        if per == 2 && y + 1 < inner.y + inner.height {
            let history = &data.history[first + slot];
            let (ring, max, style) = match state.graph {
                GraphMetric::Utilization => (&history.util, 100.0, s.util()),
                GraphMetric::Memory => (&history.memory_pct, 100.0, s.memory()),
                GraphMetric::Power => (
                    &history.power_w,
                    sample.power_limit_w.unwrap_or(1.0) as f32,
                    s.power(),
                ),
            };
            let width = inner.width.saturating_sub(8) as usize;
            let line = Line::from(vec![
                Span::styled("     ", s.muted()),
                Span::styled(sparkline(ring.iter(), max, width), style),
            ]);
            fastline::render(&line, Rect::new(inner.x, y + 1, inner.width, 1), buf);
        }
    }
}

fn gpu_line(
    gpu: &GpuStatic,
    sample: &GpuSample,
    last_xid: Option<u64>,
    selected: bool,
    area: Rect,
    buf: &mut Buffer,
    s: &Styles,
) {
    let marker = if selected { "▶" } else { " " };
    let name_w = name_width(area.width);
    let mut row = RowParts::default();
    row.whole([Span::styled(
        format!("{marker}{:>2}  ", gpu.index),
        if selected { s.selected() } else { s.accent() },
    )]);
    row.text(
        format!(
            "{:<name_w$} ",
            units::truncate(&short_name(&gpu.name), name_w)
        ),
        s.text(),
    );
    if sample.lost {
        row.text(
            "LOST: fell off the bus (check dmesg for Xid 79)".into(),
            s.error(),
        );
        row.whole(xid_flag(last_xid, s));
        fastline::render(&row.fitted(area.width), area, buf);
        return;
    }
    let util = sample.util_gpu_pct;
    let bar_w = bar_width(area.width);
    let (fill, rest) = bar(util.unwrap_or(0) as f64 / 100.0, bar_w);
    row.whole([
        Span::styled(fill, s.util()),
        Span::styled(rest, s.gauge_bg()),
        Span::styled(format!("{:>5} ", units::pct(util)), s.text()),
    ]);
    let mem_frac = match (sample.memory_used_bytes, gpu.memory_total_bytes) {
        (Some(u), Some(t)) if t > 0 => u as f64 / t as f64,
        _ => 0.0,
    };
    let (fill, rest) = bar(mem_frac, bar_w);
    row.whole([
        Span::styled(fill, s.memory()),
        Span::styled(rest, s.gauge_bg()),
        Span::styled(
            // Up to "99.9/99.9GiB" (12); the space before it keeps it off the bar.
            format!(
                " {:>12} ",
                units::memory_pair(sample.memory_used_bytes, gpu.memory_total_bytes)
            ),
            s.text(),
        ),
    ]);
    let temp_style = match (sample.temp_c, gpu.temp_slowdown_c) {
        (Some(t), Some(limit)) if limit > 0 => s.level(f64::from(t) / f64::from(limit)),
        _ => s.text(),
    };
    row.whole([Span::styled(
        // One column less than before the memory's leading space: the row keeps its width.
        format!("{:>4}  ", units::celsius(sample.temp_c)),
        temp_style,
    )]);
    row.whole([Span::styled(
        format!(
            "{:>9}",
            units::power_pair(sample.power_w, sample.power_limit_w)
        ),
        s.text(),
    )]);
    row.whole(xid_flag(last_xid, s));
    for flag in flags(gpu, sample, s) {
        row.whole([flag]);
    }
    fastline::render(&row.fitted(area.width), area, buf);
}

/// The header over rows `width` columns wide: its titles in step with the rows, which draw
/// each figure whole or not at all (a title over a column the rows left out would say the
/// column is there); cut with `…` inside the name as the rows are.
fn header_fitted(header: &str, width: u16, name_w: usize, bar_w: usize) -> String {
    let width = usize::from(width);
    if header.chars().count() <= width {
        return header.to_string();
    }
    // Where each part of a row ends: index, name, utilisation, memory, temperature, power.
    let mut ends = [5, name_w + 1, bar_w + 6, bar_w + 14, 6, 9];
    for i in 1..ends.len() {
        ends[i] += ends[i - 1];
    }
    let Some(&keep) = ends.iter().rev().find(|&&end| end <= width) else {
        return units::truncate(header, width);
    };
    let chars: Vec<char> = header.chars().collect();
    let mut cut = keep.min(chars.len());
    // A title the boundary splits is left out whole.
    if chars.get(cut).is_some_and(|c| *c != ' ') {
        while cut > 0 && chars[cut - 1] != ' ' {
            cut -= 1;
        }
    }
    chars[..cut]
        .iter()
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// A GPU row as its parts, left to right: each figure (with its bar) is drawn whole or not at
/// all, so a narrow terminal never shows `60.1/7` for `60.1/79.6GiB`; the name is cut with `…`.
#[derive(Default)]
struct RowParts {
    parts: Vec<(Vec<Span<'static>>, bool)>,
}

impl RowParts {
    /// A part drawn whole or left out (a figure, a flag).
    fn whole(&mut self, spans: impl IntoIterator<Item = Span<'static>>) {
        self.parts.push((spans.into_iter().collect(), false));
    }

    /// A part of text, cut with `…` where the row ends.
    fn text(&mut self, text: String, style: ratatui::style::Style) {
        self.parts.push((vec![Span::styled(text, style)], true));
    }

    /// The parts that fit `width` columns: up to the first that does not, which is cut when it
    /// is text and left out with all after it when it is a figure.
    fn fitted(self, width: u16) -> Line<'static> {
        let mut room = usize::from(width);
        let mut out = Vec::new();
        for (spans, text) in self.parts {
            let w: usize = spans.iter().map(Span::width).sum();
            if w <= room {
                room -= w;
                out.extend(spans);
                continue;
            }
            if text {
                out.extend(spans.into_iter().next().map(|span| {
                    let cut = super::table::cut_text(&span.content, room as u16);
                    Span::styled(cut, span.style)
                }));
            }
            break;
        }
        Line::from(out)
    }
}

/// `XID 79`: the GPU reported Xids while the dashboard ran, the latest being 79. First of the
/// flags, so that it shows at 80 columns whatever else is flagged.
fn xid_flag<'a>(last_xid: Option<u64>, s: &Styles) -> Option<Span<'a>> {
    last_xid.map(|xid| Span::styled(format!(" XID {xid}"), s.error()))
}

/// Short warnings that belong on the row itself: throttling, a slow PCIe link, ECC errors.
fn flags<'a>(gpu: &GpuStatic, sample: &GpuSample, s: &Styles) -> Vec<Span<'a>> {
    let mut out = Vec::new();
    let throttled = sample
        .throttle_reasons
        .as_ref()
        .is_some_and(|r| r.iter().any(|r| crate::gpu::is_slowdown(r)));
    if throttled {
        out.push(Span::styled(" THROTTLE", s.warn()));
    }
    if pcie_downgraded(gpu, sample) {
        out.push(Span::styled(" PCIe↓", s.warn()));
    }
    if sample.ecc_uncorrected.unwrap_or(0) > 0 {
        out.push(Span::styled(" ECC", s.error()));
    }
    if !sample.errors.is_empty() {
        out.push(Span::styled(" ERR", s.error()));
    }
    out
}

/// Room for GPU names: enough for "GeForce RTX 4090" at 80 columns, more when there is space,
/// so that at least one warning flag still fits on the row.
fn name_width(width: u16) -> usize {
    if width >= 100 {
        20
    } else {
        16
    }
}

/// The utilisation and memory bars: 6 cells at 80 columns, growing with the row (up to 40
/// cells) while keeping room for every warning flag.
fn bar_width(width: u16) -> usize {
    const FLAGS: usize = 24;
    let fixed = name_width(width) + 41;
    let spare = usize::from(width).saturating_sub(fixed + FLAGS) / 2;
    spare.clamp(6, 40)
}

/// "NVIDIA H100 80GB HBM3" -> "H100 80GB HBM3": the vendor is the same on every row.
fn short_name(name: &str) -> String {
    name.strip_prefix("NVIDIA ").unwrap_or(name).to_string()
}

/// The GPU under a click on screen row `row`, if any.
pub fn row_at(body: Rect, state: &AppState, data: &GpuData, row: u16) -> Option<usize> {
    let n = data.inventory.gpus.len();
    let l = layout(body, state, n);
    let first_row = l.list.y + 2;
    let last_row = l.list.y + l.list.height.saturating_sub(1);
    if row < first_row || row >= last_row {
        return None;
    }
    let per = rows_per_gpu(state, n);
    let visible = (l.list.height.saturating_sub(3) as usize) / per;
    let index = scroll_offset(state.selected_gpu, visible) + (row - first_row) as usize / per;
    (index < n).then_some(index)
}

#[cfg(test)]
mod pcie_flag_tests {
    use super::*;

    fn flagged(gen: u32, width: u32, pstate: u32, util: u32) -> bool {
        let theme = crate::config::Theme::builtin("dark").expect("built in");
        let s = Styles::new(&theme);
        let (gpu, sample) = crate::gpu::report::pcie_case(gen, width, Some(pstate), util);
        let spans = flags(&gpu, &sample, &s);
        let pcie: Vec<_> = spans.iter().filter(|sp| sp.content == " PCIe↓").collect();
        assert!(pcie.iter().all(|sp| sp.style == s.warn()));
        !pcie.is_empty()
    }

    #[test]
    fn the_pcie_flag_spares_idle_gpus_saving_power() {
        assert!(!flagged(1, 16, 8, 3), "idle at P8, Gen1: power saving");
        assert!(flagged(1, 16, 0, 85), "busy at P0, Gen1");
        assert!(flagged(1, 8, 8, 0), "x8 of x16, even idle");
        assert!(!flagged(5, 16, 0, 100), "at its maximum");
    }
}
