//! The selected GPU in depth: every static and live fact, history charts, and its processes when there is room.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::fastchart::{self, ChartAxis, Series};
use super::fastline;
use super::processes::process_table;
use super::style::Styles;
use crate::app::state::{AppState, GpuData};
use crate::gpu::history::Ring;
use crate::gpu::report::{pcie_downgrade, PcieDowngrade};
use crate::gpu::xid_watch::GpuXids;
use crate::gpu::{is_slowdown, lost_gpu_fix, GpuSample, GpuStatic};
use crate::health::XidCatalog;
use crate::units::{self, NA};

const FACTS_WIDTH: u16 = 46;
/// Wide enough for the longest fact line (a full UUID, clocks with five-digit memory MHz).
const FACTS_WIDTH_WIDE: u16 = 56;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, data: &GpuData, s: &Styles) {
    let i = state
        .selected_gpu
        .min(data.inventory.gpus.len().saturating_sub(1));
    let (Some(gpu), Some(sample)) = (data.inventory.gpus.get(i), data.samples.get(i)) else {
        return;
    };
    let xids = data.xids.of(gpu.index);
    if sample.lost {
        lost(area, buf, gpu, xids, &state.xid_catalog, s);
        return;
    }
    let procs: Vec<_> = sample.processes.iter().collect();
    let (top, bottom) = if area.height >= 18 {
        let h = (procs.len() as u16 + 3).clamp(4, 8);
        let [t, b] = Layout::vertical([Constraint::Min(0), Constraint::Length(h)]).areas(area);
        (t, Some(b))
    } else {
        (area, None)
    };
    let facts_w = if top.width >= FACTS_WIDTH + 30 {
        (top.width / 2).clamp(FACTS_WIDTH, FACTS_WIDTH_WIDE)
    } else {
        top.width
    };
    let [facts_area, charts_area] =
        Layout::horizontal([Constraint::Length(facts_w), Constraint::Min(0)]).areas(top);
    facts(facts_area, buf, gpu, sample, xids, &state.xid_catalog, s);
    if charts_area.width > 10 {
        charts(charts_area, buf, state, data, i, s);
    }
    if let Some(b) = bottom {
        let title = format!(" Processes on GPU {} ", gpu.index);
        process_table(b, buf, &procs, None, &title, false, s);
    }
}

/// A GPU that fell off the bus answers nothing: say so, why, and what to do, instead of empty
/// readings.
fn lost(
    area: Rect,
    buf: &mut Buffer,
    gpu: &GpuStatic,
    xids: Option<&GpuXids>,
    catalog: &XidCatalog,
    s: &Styles,
) {
    let t = s.text();
    let mut lines = vec![
        fact("UUID", gpu.uuid.clone(), t, s),
        fact("Bus", gpu.pci_bus_id.clone(), t, s),
    ];
    lines.extend(xid_lines(xids, catalog, s));
    lines.extend([
        Line::raw(""),
        Line::styled(
            format!(
                "LOST: GPU {} has fallen off the bus. The driver answers nothing for it \
                 (NVML: GPU_IS_LOST), so it shows no readings and runs nothing; \
                 work on it has failed.",
                gpu.index
            ),
            s.error(),
        ),
        Line::raw(""),
        Line::styled(lost_gpu_fix(&gpu.index.to_string()), t),
    ]);
    let title = format!(" GPU {} · {} ", gpu.index, gpu.name);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(
            Block::bordered()
                .title(Span::styled(title, s.title()))
                .border_style(s.error()),
        )
        .render(area, buf);
}

/// The Xids the GPU reported this session: how many, then the latest three, newest first, each
/// with its time (UTC), its class and what to do, from the Xid catalog (at most 42 columns: the
/// pane is 44 wide inside at 80 columns; `gpudeck doctor` says the rest).
fn xid_lines<'a>(xids: Option<&GpuXids>, catalog: &XidCatalog, s: &Styles) -> Vec<Line<'a>> {
    let Some(xids) = xids.filter(|x| x.total > 0) else {
        return Vec::new();
    };
    let shown = xids.recent.len().min(3);
    let more = if xids.total > shown as u64 {
        format!(", latest {shown}")
    } else {
        String::new()
    };
    let mut lines = vec![fact(
        "Xids",
        format!("{} this session{more} (UTC):", xids.total),
        s.error(),
        s,
    )];
    for e in xids.recent.iter().rev().take(shown) {
        let at = units::timestamp(e.at_unix_ms).strftime("%H:%M:%S");
        let known = u32::try_from(e.xid).ok().and_then(|x| catalog.get(x));
        let what = known.map_or_else(
            || "unknown: see gpudeck doctor".to_string(),
            |i| format!("{}: {}", i.class.short(), i.action.short()),
        );
        lines.push(Line::from(vec![
            Span::styled(format!("{:>4} ", e.xid), s.error()),
            Span::styled(format!("{at} {what}"), s.text()),
        ]));
    }
    lines
}

/// The label column of the facts.
const LABEL: usize = 9;

fn fact<'a>(label: &'a str, value: String, style: Style, s: &Styles) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("{label:<LABEL$}"), s.muted()),
        Span::styled(value, style),
    ])
}

/// An identifier users copy (the UUID, for `CUDA_VISIBLE_DEVICES`), always whole in `width`
/// columns: beside its label when both fit; else alone on its line, where its own prefix
/// (`GPU-`, `MIG-`) names it (the 46-column pane at 80 columns has 44 inside, the label and a
/// 40-character UUID need 49); else over as many lines as it needs. Never cut (`c` copies it).
fn identity_fact<'a>(
    label: &'a str,
    value: &str,
    width: u16,
    style: Style,
    s: &Styles,
) -> Vec<Line<'a>> {
    let width = usize::from(width).max(1);
    if LABEL + value.chars().count() <= width {
        return vec![fact(label, value.to_string(), style, s)];
    }
    let chars: Vec<char> = value.chars().collect();
    chars
        .chunks(width)
        .map(|piece| Line::styled(piece.iter().collect::<String>(), style))
        .collect()
}

fn facts(
    area: Rect,
    buf: &mut Buffer,
    gpu: &GpuStatic,
    x: &GpuSample,
    xids: Option<&GpuXids>,
    catalog: &XidCatalog,
    s: &Styles,
) {
    let t = s.text();
    let mut lines = identity_fact("UUID", &gpu.uuid, area.width.saturating_sub(2), t, s);
    let after_uuid = lines.len();
    lines.extend([
        fact("Bus", gpu.pci_bus_id.clone(), t, s),
        fact(
            "Arch",
            format!(
                "{} · compute {}",
                units::opt(gpu.architecture.as_deref()),
                units::opt(gpu.compute_capability.as_deref())
            ),
            t,
            s,
        ),
        fact(
            "Clocks",
            format!(
                "SM {}/{} · mem {}/{}",
                units::opt(x.sm_clock_mhz),
                units::mhz(gpu.sm_clock_max_mhz),
                units::opt(x.mem_clock_mhz),
                units::mhz(gpu.mem_clock_max_mhz)
            ),
            t,
            s,
        ),
    ]);
    // Right under the GPU's identity, so a short pane still shows it.
    lines.splice(after_uuid + 1..after_uuid + 1, xid_lines(xids, catalog, s));
    lines.push(pcie_line(gpu, x, s));
    lines.push(fact(
        "Temp",
        format!(
            "{} (slowdown {}, shutdown {})",
            units::celsius(x.temp_c),
            units::celsius(gpu.temp_slowdown_c),
            units::celsius(gpu.temp_shutdown_c)
        ),
        t,
        s,
    ));
    lines.push(fact(
        "Power",
        format!(
            "{} · P-state {} · fan {}",
            units::power_pair(x.power_w, x.power_limit_w),
            x.pstate.map_or_else(|| NA.to_string(), |p| format!("P{p}")),
            units::pct(x.fan_pct)
        ),
        t,
        s,
    ));
    lines.push(throttle_line(x, s));
    let ecc_style = if x.ecc_uncorrected.unwrap_or(0) > 0 {
        s.error()
    } else {
        t
    };
    lines.push(fact(
        "ECC",
        format!(
            "{} · {} corrected · {} uncorrected",
            units::yes_no(gpu.ecc_enabled, "on", "off"),
            units::opt(x.ecc_corrected),
            units::opt(x.ecc_uncorrected)
        ),
        ecc_style,
        s,
    ));
    lines.push(fact(
        "Modes",
        format!(
            "persistence {} · MIG {}",
            units::yes_no(gpu.persistence_mode, "on", "off"),
            units::yes_no(gpu.mig_enabled, "on", "off")
        ),
        t,
        s,
    ));
    for e in &x.errors {
        lines.push(fact(
            "Error",
            format!("{}: {}", e.metric, e.message),
            s.error(),
            s,
        ));
    }
    let title = format!(" GPU {} · {} ", gpu.index, gpu.name);
    let title = Line::from(Span::styled(title, s.title()));
    lines_in_box(&lines, &title, area, buf, s);
}

/// `lines` in a box as `Paragraph::new(lines).block(Block::bordered().title(title))` draws them
/// without wrapping (each cut at the border), the cheap way: this pane is redrawn every second.
fn lines_in_box(lines: &[Line<'_>], title: &Line<'_>, area: Rect, buf: &mut Buffer, s: &Styles) {
    let inner = fastline::bordered(area, buf, title, s.border());
    for (line, y) in lines.iter().zip(inner.top()..inner.bottom()) {
        fastline::render(
            line,
            Rect {
                y,
                height: 1,
                ..inner
            },
            buf,
        );
    }
}

/// The link against its maximum, and what a lower one means (`report::pcie_downgrade`): fewer
/// lanes (`NARROW LINK`), a lower generation while working (`SLOW, BUSY`), or an idle GPU's
/// power saving (`(idle)`, not a fault).
fn pcie_line<'a>(gpu: &GpuStatic, x: &GpuSample, s: &Styles) -> Line<'a> {
    let pcie = format!(
        "{} (max {})",
        units::pcie(x.pcie_gen, x.pcie_width),
        units::pcie(gpu.pcie_gen_max, gpu.pcie_width_max)
    );
    let lower_gen = matches!((x.pcie_gen, gpu.pcie_gen_max), (Some(c), Some(m)) if c < m);
    match pcie_downgrade(gpu, x) {
        Some(PcieDowngrade::Width) => fact("PCIe", format!("{pcie} NARROW LINK"), s.warn(), s),
        Some(PcieDowngrade::Generation) => fact("PCIe", format!("{pcie} SLOW, BUSY"), s.warn(), s),
        None if lower_gen => Line::from(vec![
            Span::styled(format!("{:<9}", "PCIe"), s.muted()),
            Span::styled(pcie, s.text()),
            Span::styled(" (idle)", s.muted()),
        ]),
        None => fact("PCIe", pcie, s.text(), s),
    }
}

fn throttle_line<'a>(x: &GpuSample, s: &Styles) -> Line<'a> {
    match &x.throttle_reasons {
        None => fact("Throttle", NA.to_string(), s.text(), s),
        Some(r) if r.is_empty() => fact("Throttle", "none".into(), s.ok(), s),
        Some(r) => {
            let style = if r.iter().any(|r| is_slowdown(r)) {
                s.warn()
            } else {
                s.text()
            };
            fact("Throttle", r.join(", "), style, s)
        }
    }
}

/// Samples the charts span: the history so far, at least a minute's worth, at most its capacity,
/// so graphs fill the width from the start instead of a sliver at the right edge.
fn chart_span(ring: &Ring, refresh_ms: u64) -> usize {
    let minute = (60_000 / refresh_ms.max(1)) as usize;
    ring.len().max(minute).min(ring.capacity()).max(2)
}

/// Chart points for a ring, at most `max_points` of them: consecutive samples are merged into
/// their peak, so a long history costs no more to draw than the chart has braille dots, and a
/// one-second spike still shows.
fn points(ring: &Ring, max_points: usize) -> Vec<(f64, f64)> {
    let n = ring.len();
    let bucket = n.div_ceil(max_points.max(1)).max(1);
    let values: Vec<Option<f32>> = ring.iter().collect();
    values
        .chunks(bucket)
        .enumerate()
        .filter_map(|(b, chunk)| {
            let peak = chunk.iter().flatten().copied().reduce(f32::max)?;
            let last = b * bucket + chunk.len() - 1;
            Some((last as f64 - (n as f64 - 1.0), f64::from(peak)))
        })
        .collect()
}

fn charts(area: Rect, buf: &mut Buffer, state: &AppState, data: &GpuData, i: usize, s: &Styles) {
    let history = &data.history[i];
    let sample = &data.samples[i];
    let areas: Vec<Rect> = if state.show_power {
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
            .split(area)
            .to_vec()
    } else {
        vec![area]
    };
    let span = chart_span(&history.util, state.refresh_ms);
    let span_secs = span as f64 * state.refresh_ms as f64 / 1000.0;
    let x_labels = vec![
        Line::from(Span::styled(
            format!("-{}", duration_label(span_secs)),
            s.muted(),
        )),
        Line::from(Span::styled("now", s.muted())),
    ];
    let x_bounds = [-(span as f64 - 1.0), 0.0];
    // Two braille dots per cell across the visible span.
    let max_points = (usize::from(area.width) * 2 * history.util.len() / span).max(2);
    let util = points(&history.util, max_points);
    let mem = points(&history.memory_pct, max_points);
    let title = Line::from(vec![
        Span::styled(" util ", s.util()),
        Span::styled(units::pct(sample.util_gpu_pct), s.text()),
        Span::styled("  memory ", s.memory()),
        Span::styled(
            units::memory_pair(
                sample.memory_used_bytes,
                data.inventory.gpus[i].memory_total_bytes,
            ),
            s.text(),
        ),
        Span::raw(" "),
    ]);
    let x_axis = ChartAxis {
        bounds: x_bounds,
        labels: x_labels,
        style: s.muted(),
    };
    let series = [
        Series {
            points: &util,
            style: s.util(),
        },
        Series {
            points: &mem,
            style: s.memory(),
        },
    ];
    // The box drawn apart, the cheap way, and the chart inside it, as `.block(..)` would.
    let inner = fastline::bordered(areas[0], buf, &title, s.border());
    let y_axis = ChartAxis {
        bounds: [0.0, 100.0],
        labels: vec![Line::from("0%"), Line::from("100%")],
        style: s.muted(),
    };
    fastchart::line_chart(inner, buf, &series, &x_axis, &y_axis);
    if let Some(power_area) = areas.get(1) {
        let power = points(&history.power_w, max_points);
        let limit = sample.power_limit_w.unwrap_or(1.0).max(1.0);
        let title = Line::from(vec![
            Span::styled(" power ", s.power()),
            Span::styled(
                units::power_pair(sample.power_w, sample.power_limit_w),
                s.text(),
            ),
            Span::raw(" "),
        ]);
        let inner = fastline::bordered(*power_area, buf, &title, s.border());
        let series = [Series {
            points: &power,
            style: s.power(),
        }];
        let y_axis = ChartAxis {
            bounds: [0.0, limit],
            labels: vec![Line::from("0W"), Line::from(format!("{limit:.0}W"))],
            style: s.muted(),
        };
        fastchart::line_chart(inner, buf, &series, &x_axis, &y_axis);
    }
}

fn duration_label(secs: f64) -> String {
    if secs >= 120.0 {
        format!("{:.0}m", secs / 60.0)
    } else {
        format!("{secs:.0}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PCIe line of an H100 (Gen5 x16 at best) with this link, P-state and utilisation.
    fn pcie_of(gen: u32, width: u32, pstate: u32, util: u32) -> (String, Vec<Style>) {
        let theme = crate::config::Theme::builtin("dark").expect("built in");
        let s = Styles::new(&theme);
        let (gpu, x) = crate::gpu::report::pcie_case(gen, width, Some(pstate), util);
        let line = pcie_line(&gpu, &x, &s);
        let text = line.spans.iter().map(|sp| sp.content.as_ref()).collect();
        (text, line.spans.iter().skip(1).map(|sp| sp.style).collect())
    }

    #[test]
    fn the_pcie_line_says_which_kind_of_lower_link_it_is() {
        let theme = crate::config::Theme::builtin("dark").expect("built in");
        let s = Styles::new(&theme);
        // Idle at P8, Gen1: power saving, not flagged.
        let (text, styles) = pcie_of(1, 16, 8, 2);
        assert_eq!(text, "PCIe     Gen1 x16 (max Gen5 x16) (idle)");
        assert!(!styles.contains(&s.warn()), "{styles:?}");
        // Busy at P0, Gen1: a downgrade of the generation.
        let (text, styles) = pcie_of(1, 16, 0, 90);
        assert_eq!(text, "PCIe     Gen1 x16 (max Gen5 x16) SLOW, BUSY");
        assert_eq!(styles, vec![s.warn()]);
        // Idle at x8 of x16: a narrower link at any load.
        let (text, styles) = pcie_of(1, 8, 8, 0);
        assert_eq!(text, "PCIe     Gen1 x8 (max Gen5 x16) NARROW LINK");
        assert_eq!(styles, vec![s.warn()]);
        // At its maximum: nothing to say. Each fits the narrow pane (46 columns, 44 inside).
        assert_eq!(pcie_of(5, 16, 0, 90).0, "PCIe     Gen5 x16 (max Gen5 x16)");
        for (g, w, p, u) in [(1, 16, 8, 2), (1, 16, 0, 90), (1, 8, 8, 0)] {
            assert!(pcie_of(g, w, p, u).0.chars().count() <= 44);
        }
    }

    #[test]
    fn facts_are_drawn_as_a_paragraph_draws_them() {
        let theme = crate::config::Theme::builtin("dark").expect("built in");
        let s = Styles::new(&theme);
        let lines = vec![
            fact(
                "UUID",
                "GPU-986b3e2e-6f84-a10b-3d7d-f2ba0d8c1e2f-and-more".into(),
                s.text(),
                &s,
            ),
            fact("Xids", "2 this session (UTC):".into(), s.error(), &s),
            Line::from(vec![
                Span::styled("  79 ", s.error()),
                Span::styled("03:14:07 bus/power: reboot", s.text()),
            ]),
            fact(
                "PCIe",
                "Gen3 x8 (max Gen5 x16) NARROW LINK ↓".into(),
                s.warn(),
                &s,
            ),
            fact(
                "Temp",
                "57°C (slowdown 87°C, shutdown 92°C)".into(),
                s.text(),
                &s,
            ),
        ];
        let block = || {
            Block::bordered()
                .title(Span::styled(" GPU 2 · NVIDIA H100 80GB HBM3 ", s.title()))
                .border_style(s.border())
        };
        for area in [
            Rect::new(0, 0, 46, 9),
            Rect::new(2, 1, 30, 4),
            Rect::new(0, 0, 60, 12),
        ] {
            let mut slow = Buffer::empty(Rect::new(0, 0, 64, 14));
            Paragraph::new(lines.clone())
                .block(block())
                .render(area, &mut slow);
            let mut fast = Buffer::empty(Rect::new(0, 0, 64, 14));
            let title = Line::from(Span::styled(" GPU 2 · NVIDIA H100 80GB HBM3 ", s.title()));
            lines_in_box(&lines, &title, area, &mut fast, &s);
            assert_eq!(slow, fast, "{area:?}");
        }
    }

    #[test]
    fn long_histories_are_merged_into_peaks() {
        let mut ring = Ring::new(600);
        for i in 0..600 {
            ring.push(Some(if i == 301 { 100.0 } else { 1.0 }));
        }
        let pts = points(&ring, 60);
        assert_eq!(pts.len(), 60);
        assert_eq!(
            pts.last().map(|p| p.0),
            Some(0.0),
            "the newest sample is at x = 0"
        );
        assert!(
            pts.iter().any(|p| p.1 == 100.0),
            "a one-sample spike survives"
        );
        assert_eq!(
            points(&ring, 1000).len(),
            600,
            "short histories keep every sample"
        );
    }
}
