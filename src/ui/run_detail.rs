//! The selected run in the Runs tab: what it is and how it went, its GPU use, its training
//! progress as a curve beside its GPUs' utilisation, alerts, and the tail of a rank's logs.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::app::runs::{RunChart, RunsView};
use crate::app::state::AppState;
use crate::docker::LogStream;
use crate::runs::recorded::xids::{telling, Blame};
use crate::runs::watch::{GpuTrace, ProgressView, RunDetail, RunRow};
use crate::runs::RunState;
use crate::units;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let view = &state.runs;
    let Some(run) = view.selected_run() else {
        return;
    };
    let state_word = run.state.to_string();
    // The id in the title where it fits whole; else `run` there and the id on a line of its
    // own (wrapped), never cut.
    let id_fits = run.id.chars().count() + state_word.chars().count() + 5
        <= usize::from(area.width.saturating_sub(2));
    let name = if id_fits { run.id.as_str() } else { "run" };
    let block = Block::bordered()
        .title(Line::from(vec![
            Span::styled(format!(" {name} · "), s.title()),
            Span::styled(state_word, state_style(run.state, s)),
            Span::raw(" "),
        ]))
        .border_style(s.border());
    let inner = block.inner(area);
    block.render(area, buf);
    let detail = view.selected_detail();
    let mut lines = Vec::new();
    if !id_fits {
        lines.push(Line::from(vec![
            Span::styled("id ", s.muted()),
            Span::styled(run.id.clone(), s.text()),
        ]));
    }
    lines.extend([facts_line(run, state.now, s), use_line(run, s)]);
    lines.extend(lost_lines(run, s));
    lines.extend(xid_lines(run, s, inner.width));
    if let Some(d) = detail {
        lines.push(progress_line(&d.progress, s));
    }
    lines.extend(engine_away_lines(run, state.now, s));
    lines.extend(alert_lines(view, detail, s, inner.width));
    // A line longer than the pane wraps under itself: the facts are read whole at 80 columns.
    let text = Paragraph::new(lines).wrap(Wrap { trim: false });
    let text_h = u16::try_from(text.line_count(inner.width))
        .unwrap_or(u16::MAX)
        .min(inner.height);
    text.render(
        Rect {
            height: text_h,
            ..inner
        },
        buf,
    );
    let rest = Rect {
        y: inner.y + text_h,
        height: inner.height - text_h,
        ..inner
    };
    if rest.height < 3 {
        return;
    }
    let tail_h = (rest.height / 3).clamp(1, 8);
    let [charts_area, tail_area] =
        Layout::vertical([Constraint::Min(4), Constraint::Length(tail_h)]).areas(rest);
    if let Some(d) = detail {
        charts(charts_area, buf, d, view.chart, s);
    }
    log_tail(tail_area, buf, view, s);
}

fn facts_line<'a>(run: &RunRow, now: i64, s: &Styles) -> Line<'a> {
    let mut spans = match &run.job {
        Some(job) => vec![
            Span::styled(format!("{} ", job.name), s.muted()),
            Span::styled(job.placement.clone(), s.text()),
        ],
        None => vec![
            Span::styled("GPU ", s.muted()),
            Span::styled(gpus(&run.gpus), s.text()),
        ],
    };
    spans.push(Span::styled(
        format!(
            " · {} · {}",
            run.launcher.as_str(),
            units::plural(run.ranks, "rank")
        ),
        s.text(),
    ));
    if let Some(image) = &run.image {
        spans.push(Span::styled(format!(" · {image}"), s.text()));
    }
    if let Some(start) = run.started_ms {
        let end = run
            .ended_ms
            .unwrap_or((now.max(0) as u64 * 1000).max(start));
        spans.push(Span::styled(
            format!(" · ran {}", units::run_duration(end.saturating_sub(start))),
            s.text(),
        ));
    }
    if let Some(code) = run.exit_code {
        let style = if code == 0 { s.ok() } else { s.error() };
        spans.push(Span::styled(format!(" · exit {code}"), style));
        if let Some(rank) = run.first_failed_rank {
            spans.push(Span::styled(
                format!(" (rank {rank} failed first)"),
                s.error(),
            ));
        }
    }
    if let Some(error) = &run.error {
        spans.push(Span::styled(format!(" · {error}"), s.error()));
    }
    Line::from(spans)
}

fn use_line<'a>(run: &RunRow, s: &Styles) -> Line<'a> {
    let Some(sum) = &run.summary else {
        return Line::styled("GPU use: no metrics recorded yet", s.muted());
    };
    let gpu_time = if sum.gpu_seconds_allocated >= 3600.0 {
        format!(
            "{:.1} of {:.1} GPU-hours",
            sum.gpu_seconds_busy / 3600.0,
            sum.gpu_seconds_allocated / 3600.0
        )
    } else {
        format!(
            "{:.0} of {:.0} GPU-seconds",
            sum.gpu_seconds_busy, sum.gpu_seconds_allocated
        )
    };
    let mut parts = vec![format!(
        "{:.0}% busy ({gpu_time})",
        sum.busy_ratio.unwrap_or(0.0) * 100.0,
    )];
    if let Some(peak) = sum.gpus.iter().filter_map(|g| g.peak_mem_bytes).max() {
        parts.push(format!("peak memory {}", units::human_bytes(peak)));
    }
    let powers: Vec<f64> = sum.gpus.iter().filter_map(|g| g.mean_power_w).collect();
    if !powers.is_empty() {
        parts.push(format!(
            "{:.0} W mean",
            powers.iter().sum::<f64>() / powers.len() as f64
        ));
    }
    if let Some(energy) = sum.energy_j {
        parts.push(if energy >= 3.6e6 {
            format!("{:.2} kWh", energy / 3.6e6)
        } else {
            format!("{:.1} Wh", energy / 3600.0)
        });
    }
    Line::from(vec![
        Span::styled("GPU use: ", s.muted()),
        Span::styled(parts.join(" · "), s.text()),
    ])
}

/// A line for each of the run's GPUs that fell off the bus, with when.
fn lost_lines<'a>(run: &RunRow, s: &Styles) -> Vec<Line<'a>> {
    let Some(sum) = &run.summary else {
        return Vec::new();
    };
    sum.lost_gpus
        .iter()
        .map(|lost| {
            let into = (lost.at_ms as i64 - sum.started_ms).max(0) / 1000;
            Line::styled(
                format!(
                    "⚠ GPU {} fell off the bus {} into the run; its metrics stop there.",
                    lost.index,
                    units::age(into)
                ),
                s.error(),
            )
        })
        .collect()
}

/// The Xid that says most about the run: what happened and whom it points at, what it means
/// and what to do, and how many more came; each wrapped to the detail's width under itself.
fn xid_lines<'a>(run: &RunRow, s: &Styles, width: u16) -> Vec<Line<'a>> {
    let Some(hit) = telling(&run.xids) else {
        return Vec::new();
    };
    let style = match hit.attribution {
        Blame::Machine | Blame::Run => s.error(),
        Blame::OtherProcess | Blame::Unknown => s.warn(),
    };
    let mut parts = vec![
        (format!("⚠ {}", hit.summary), "  ", style),
        (
            format!("  Xid {}: {}. Do: {}", hit.xid, hit.meaning, hit.action),
            "    ",
            s.text(),
        ),
    ];
    if let Some(more) = more_xids(run.xids.len()) {
        parts.push((format!("  {more}"), "    ", s.muted()));
    }
    let width = usize::from(width).max(10);
    parts
        .into_iter()
        .flat_map(|(text, indent, style)| {
            let options = textwrap::Options::new(width).subsequent_indent(indent);
            textwrap::wrap(&text, &options)
                .into_iter()
                .map(|piece| Line::styled(piece.into_owned(), style))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// "(2 more Xids; ...)" when a run had more than the one shown.
fn more_xids(count: usize) -> Option<String> {
    let more = count.checked_sub(1).filter(|n| *n > 0)?;
    let noun = if more == 1 { "Xid" } else { "Xids" };
    Some(format!(
        "({more} more {noun}; `gpudeck runs --json` lists them all.)"
    ))
}

fn progress_line<'a>(p: &ProgressView, s: &Styles) -> Line<'a> {
    let mut parts = Vec::new();
    if let Some(latest) = &p.latest {
        if let Some(epoch) = latest.epoch {
            parts.push(match latest.total_epochs {
                Some(t) => format!("epoch {epoch}/{t}"),
                None => format!("epoch {epoch}"),
            });
        }
        if let Some(step) = latest.step {
            parts.push(match latest.total_steps {
                Some(t) => format!("step {step}/{t}"),
                None => format!("step {step}"),
            });
        }
    }
    parts.extend(
        p.last_values
            .iter()
            .take(6)
            .map(|(name, v)| format!("{name} {}", number(*v))),
    );
    if parts.is_empty() {
        return Line::styled("Progress: none printed yet", s.muted());
    }
    let mut spans = vec![
        Span::styled("Progress: ", s.muted()),
        Span::styled(parts.join(" · "), s.text()),
    ];
    if p.non_finite > 0 {
        spans.push(Span::styled(
            format!(" · {} NaN/inf values (diverging?)", p.non_finite),
            s.error(),
        ));
    }
    Line::from(spans)
}

/// A container run whose supervisor waits for the engine: what happened and that it is handled.
fn engine_away_lines<'a>(run: &RunRow, now: i64, s: &Styles) -> Vec<Line<'a>> {
    let Some(away) = &run.engine_away else {
        return Vec::new();
    };
    let secs = (now.max(0) as u64 * 1000).saturating_sub(away.since_ms) / 1000;
    vec![
        Line::styled(
            format!(
                "⚠ The Docker Engine went away {} ago; the containers run on.",
                units::age(secs as i64)
            ),
            s.warn(),
        ),
        Line::styled(
            "  gpudeck reconnects by itself. Check it: `systemctl status docker`.",
            s.warn(),
        ),
    ]
}

/// The alerts, each wrapped to the detail's width so that it reads whole, what to do included.
fn alert_lines<'a>(
    view: &RunsView,
    detail: Option<&RunDetail>,
    s: &Styles,
    width: u16,
) -> Vec<Line<'a>> {
    let mut alerts: Vec<(String, ratatui::style::Style)> = detail
        .into_iter()
        .flat_map(|d| d.alerts.iter())
        .map(|a| (format!("⚠ {} {}", a.message, a.fix), s.warn()))
        .collect();
    if let Some(held) = &view.held {
        let text = format!("⚠ {} K kills them (asks first).", held.message);
        alerts.push((text, s.error()));
    }
    if let Some(e) = detail.and_then(|d| d.metrics_error.as_ref()) {
        alerts.push((format!("metrics: {e}"), s.warn()));
    }
    let options = textwrap::Options::new(usize::from(width).max(10)).subsequent_indent("  ");
    alerts
        .into_iter()
        .flat_map(|(text, style)| {
            textwrap::wrap(&text, &options)
                .into_iter()
                .map(|piece| Line::styled(piece.into_owned(), style))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn number(v: f64) -> String {
    if v.abs() >= 1000.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    }
}

/// The y range of a curve and its two labels: the values' own range; a flat curve gets a band
/// of 5 % of its value on each side (1 at zero) so it sits mid-chart at its value. Both labels
/// carry the same decimals, enough to tell them apart.
fn y_axis(values: impl Iterator<Item = f64>) -> ([f64; 2], [String; 2]) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = match (lo, hi) {
        (lo, hi) if lo > hi => (0.0, 1.0),
        (lo, hi) if lo < hi => (lo, hi),
        (v, _) => {
            let pad = if v == 0.0 { 1.0 } else { v.abs() * 0.05 };
            (v - pad, v + pad)
        }
    };
    let decimals = (1.0 - (hi - lo).log10().floor()).clamp(0.0, 6.0) as usize;
    (
        [lo, hi],
        [format!("{lo:.decimals$}"), format!("{hi:.decimals$}")],
    )
}

/// GPU utilisation of each of the run's GPUs over its time, beside the training curve.
fn charts(area: Rect, buf: &mut Buffer, d: &RunDetail, kind: RunChart, s: &Styles) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    gpu_chart(left, buf, d, kind, s);
    progress_chart(right, buf, d, s);
}

/// One line per GPU of the run over its whole time: utilisation, memory or power.
fn gpu_chart(area: Rect, buf: &mut Buffer, d: &RunDetail, kind: RunChart, s: &Styles) {
    let palette = [
        s.util(),
        s.memory(),
        s.power(),
        s.accent(),
        s.ok(),
        s.warn(),
    ];
    let pick = |f: fn(&GpuTrace) -> &[(f64, f64)]| d.gpus.iter().map(f).collect::<Vec<_>>();
    let (label, series) = match kind {
        RunChart::Utilisation => ("GPU util %", pick(|g| &g.util_pct)),
        RunChart::Memory => ("GPU memory %", pick(|g| &g.mem_pct)),
        RunChart::Power => ("GPU power W", pick(|g| &g.power_w)),
    };
    let last_x = |s: &&[(f64, f64)]| s.last().map(|p| p.0);
    let max_x = series.iter().filter_map(last_x).fold(1.0_f64, f64::max);
    let max_y = match kind {
        RunChart::Power => series
            .iter()
            .flat_map(|s| s.iter().map(|p| p.1))
            .fold(1.0_f64, f64::max)
            .ceil(),
        _ => 100.0,
    };
    let datasets: Vec<Dataset> = series
        .iter()
        .enumerate()
        .map(|(i, points)| line(points, palette[i % palette.len()]))
        .collect();
    let mut title = vec![Span::styled(format!(" {label} "), s.title())];
    for (i, g) in d.gpus.iter().enumerate().take(8) {
        let style = palette[i % palette.len()];
        title.push(Span::styled(format!("■{} ", g.index), style));
    }
    chart(
        area,
        buf,
        datasets,
        Line::from(title),
        ([0.0, max_x], ["0s".to_string(), units::age(max_x as i64)]),
        ([0.0, max_y], [number(0.0), number(max_y)]),
        s,
    );
}

/// The training curve by step, or why there is none.
fn progress_chart(right: Rect, buf: &mut Buffer, d: &RunDetail, s: &Styles) {
    let Some((name, points)) = &d.progress.curve else {
        Paragraph::new(Line::styled("no training curve yet", s.muted()))
            .block(
                Block::bordered()
                    .title(Span::styled(" progress ", s.title()))
                    .border_style(s.border()),
            )
            .render(right, buf);
        return;
    };
    let y = y_axis(points.iter().map(|p| p.1));
    let x_max = points.last().map_or(1.0, |p| p.0.max(1.0));
    let x_min = points.first().map_or(0.0, |p| p.0.min(x_max - 1.0));
    let title = Line::from(vec![
        Span::styled(format!(" {name} "), s.accent()),
        Span::styled("by step ", s.muted()),
    ]);
    chart(
        right,
        buf,
        vec![line(points, s.accent())],
        title,
        ([x_min, x_max], [number(x_min), number(x_max)]),
        y,
        s,
    );
}

fn line(points: &[(f64, f64)], style: Style) -> Dataset<'_> {
    Dataset::default()
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(style)
        .data(points)
}

fn chart(
    area: Rect,
    buf: &mut Buffer,
    datasets: Vec<Dataset>,
    title: Line,
    (x, x_labels): ([f64; 2], [String; 2]),
    (y, y_labels): ([f64; 2], [String; 2]),
    s: &Styles,
) {
    Chart::new(datasets)
        .block(Block::bordered().title(title).border_style(s.border()))
        .x_axis(Axis::default().bounds(x).labels(x_labels).style(s.muted()))
        .y_axis(Axis::default().bounds(y).labels(y_labels).style(s.muted()))
        .render(area, buf);
}

/// The newest lines of the rank whose logs are followed.
fn log_tail(area: Rect, buf: &mut Buffer, view: &RunsView, s: &Styles) {
    let Some(logs) = &view.logs else {
        Paragraph::new(Line::styled("no output yet", s.muted())).render(area, buf);
        return;
    };
    let label = format!(
        "── rank {} output · Enter all of it{} ",
        view.log_rank,
        if view.skipped_bytes > 0 {
            format!(
                " · {} skipped (too fast to show; all in the log file)",
                units::human_bytes(view.skipped_bytes)
            )
        } else {
            String::new()
        }
    );
    Line::styled(label, s.muted()).render(Rect { height: 1, ..area }, buf);
    let area = Rect {
        y: area.y + 1,
        height: area.height.saturating_sub(1),
        ..area
    };
    let n = area.height as usize;
    let start = logs.lines.len().saturating_sub(n);
    let lines: Vec<Line> = logs
        .lines
        .range(start..)
        .map(|l| match l.stream {
            LogStream::Stderr => Line::from(vec![
                Span::styled("E ", s.error()),
                Span::styled(l.text.clone(), s.text()),
            ]),
            LogStream::Stdout => Line::from(vec![
                Span::styled("  ", s.muted()),
                Span::styled(l.text.clone(), s.text()),
            ]),
        })
        .collect();
    Paragraph::new(lines).render(area, buf);
}

pub(super) fn state_style(state: RunState, s: &Styles) -> Style {
    match state {
        RunState::Running | RunState::Succeeded => s.ok(),
        RunState::Starting | RunState::Stopped => s.warn(),
        RunState::Failed | RunState::Lost => s.error(),
    }
}

pub(super) fn gpus(list: &[u32]) -> String {
    if list.is_empty() {
        return "none".into();
    }
    let names: Vec<String> = list.iter().map(u32::to_string).collect();
    names.join(",")
}

#[cfg(test)]
mod tests {
    use super::y_axis;

    #[test]
    fn a_flat_curve_gets_an_axis_around_its_value() {
        let (range, labels) = y_axis([0.5, 0.5, 0.5].into_iter());
        assert!(
            range[0] < 0.5 && 0.5 < range[1] && range[0] > 0.4 && range[1] < 0.6,
            "{range:?}"
        );
        assert_eq!(labels, ["0.475", "0.525"]);
        let (range, labels) = y_axis([2.0].into_iter());
        assert!(
            (range[0] - 1.9).abs() < 1e-9 && (range[1] - 2.1).abs() < 1e-9,
            "{range:?}"
        );
        assert_eq!(labels, ["1.90", "2.10"]);
        let (range, labels) = y_axis([0.0, 0.0].into_iter());
        assert_eq!(range, [-1.0, 1.0]);
        assert_eq!(labels, ["-1.0", "1.0"]);
    }

    #[test]
    fn both_labels_carry_the_same_decimals() {
        let (range, labels) = y_axis([2.5, 0.2, 1.1].into_iter());
        assert_eq!(range, [0.2, 2.5]);
        assert_eq!(labels, ["0.2", "2.5"]);
        let (_, labels) = y_axis([1200.0, 4800.0].into_iter());
        assert_eq!(labels, ["1200", "4800"]);
        let (_, labels) = y_axis([0.0312, 0.0371].into_iter());
        assert_eq!(labels, ["0.0312", "0.0371"]);
    }
}
