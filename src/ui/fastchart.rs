//! Line charts in braille drawn as ratatui's `Chart` draws them, cell for cell, for less.
//!
//! `Chart` lays out the labels, axes and graph, draws the labels through `Line`, the axes cell by
//! cell, then paints the lines through a `Canvas`, which allocates a grid and then a layer the
//! size of the whole graph for each line and walks every cell of both; before all that it sets
//! its own (default, so unchanging) style on every cell of the chart, and the canvas sets the
//! default background on every cell of the graph. Here the same layout (`Layout`, as
//! `Chart::layout`) puts the labels (`fastline::render_aligned`, as `Line` draws them) and the
//! axes where `Chart` puts them, the graph's cells only get their background reset (a store per
//! cell: the one thing the canvas's restyling changes), and the lines are painted only in the
//! cells they cross. The cost is that of what is drawn, plus that one store per graph cell.
//!
//! The charts are tested against `Chart` itself, on buffers that already hold content and
//! styles, with any labels, styles, points and areas. Where part of the area lies outside the
//! buffer (where `Chart` panics as soon as that part holds more than the x labels' row) the cells
//! inside the buffer are those `Chart` draws on a buffer that holds the whole area.

use line_clipping::cohen_sutherland;
use line_clipping::{LineSegment, Point, Window};
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::braille::BRAILLE;
use ratatui::symbols::line;
use ratatui::text::Line;

use super::fastline;

/// One axis: its bounds, labels (spread along it) and style, and nothing else.
pub struct ChartAxis<'a> {
    pub bounds: [f64; 2],
    pub labels: Vec<Line<'a>>,
    pub style: Style,
}

/// One line: its points, in order, and its style (the dots take its foreground colour).
pub struct Series<'p> {
    pub points: &'p [(f64, f64)],
    pub style: Style,
}

/// Draws what `Chart::new(datasets).x_axis(x).y_axis(y).render(area, buf)` draws, where each
/// series is `Dataset::default().marker(Marker::Braille).graph_type(GraphType::Line)`, with its
/// style and points, and each axis has only bounds, labels and a style. Where part of the area
/// lies outside the buffer, the part inside gets what `Chart` draws on a buffer holding it all.
pub fn line_chart(
    area: Rect,
    buf: &mut Buffer,
    series: &[Series<'_>],
    x: &ChartAxis<'_>,
    y: &ChartAxis<'_>,
) {
    if area.is_empty() {
        return;
    }
    let seen = buf.area.intersection(area);
    if seen == area {
        draw(area, buf, series, x, y);
    } else if !seen.is_empty() {
        // Rare (the screens lay charts out inside the frame): draw on a buffer of the whole
        // area, which holds what this one does where they meet, and keep that part.
        let mut whole = Buffer::empty(area);
        copy(buf, &mut whole, seen);
        draw(area, &mut whole, series, x, y);
        copy(&whole, buf, seen);
    }
}

fn copy(from: &Buffer, to: &mut Buffer, area: Rect) {
    for row in area.top()..area.bottom() {
        for col in area.left()..area.right() {
            to[(col, row)] = from[(col, row)].clone();
        }
    }
}

/// `line_chart` for a non-empty area inside the buffer, in `Chart::render`'s order: the x
/// labels, the y labels, the x axis, the y axis, the corner, the graph's background, the lines.
fn draw(area: Rect, buf: &mut Buffer, series: &[Series<'_>], x: &ChartAxis<'_>, y: &ChartAxis<'_>) {
    let Some(layout) = Layout::new(area, &x.labels, &y.labels) else {
        return;
    };
    let graph = layout.graph;
    if let Some(row) = layout.label_x {
        x_labels(buf, &x.labels, row, area, graph);
    }
    if let Some(col) = layout.label_y {
        y_labels(buf, &y.labels, col, area, graph);
    }
    if let Some(row) = layout.axis_x {
        for col in graph.left()..graph.right() {
            buf[(col, row)]
                .set_symbol(line::HORIZONTAL)
                .set_style(x.style);
        }
    }
    if let Some(col) = layout.axis_y {
        for row in graph.top()..graph.bottom() {
            buf[(col, row)]
                .set_symbol(line::VERTICAL)
                .set_style(y.style);
        }
    }
    if let (Some(row), Some(col)) = (layout.axis_x, layout.axis_y) {
        buf[(col, row)]
            .set_symbol(line::BOTTOM_LEFT)
            .set_style(x.style);
    }
    // The canvas first sets `Style::default().bg(Color::Reset)` on every cell of the graph,
    // which changes their background and nothing else.
    let width = usize::from(graph.width);
    for row in graph.top()..graph.bottom() {
        let start = buf.index_of(graph.x, row);
        for cell in &mut buf.content[start..start + width] {
            cell.bg = Color::Reset;
        }
    }
    paint(graph, buf, series, x.bounds, y.bounds);
}

/// Where `Chart` puts each part inside its area, as `Chart::layout` does for axes with labels
/// aligned left (the default) and no titles: the last row for the x labels and the one above for
/// the x axis, the columns on the left for the y labels (with the first x label, which ends under
/// the y axis, at most a third of the width) and one for the y axis; each only where there are
/// labels and room.
struct Layout {
    /// The row of the x labels.
    label_x: Option<u16>,
    /// The first column of the y labels.
    label_y: Option<u16>,
    /// The row of the x axis.
    axis_x: Option<u16>,
    /// The column of the y axis.
    axis_y: Option<u16>,
    graph: Rect,
}

impl Layout {
    fn new(area: Rect, x_labels: &[Line<'_>], y_labels: &[Line<'_>]) -> Option<Self> {
        if area.height == 0 || area.width == 0 {
            return None;
        }
        let mut x = area.left();
        let mut y = area.bottom() - 1;
        let has_x_labels = !x_labels.is_empty();
        let has_y_labels = !y_labels.is_empty();
        let mut label_x = None;
        if has_x_labels && y > area.top() {
            label_x = Some(y);
            y -= 1;
        }
        let label_y = has_y_labels.then_some(x);
        let widest_y_label = y_labels.iter().map(Line::width).max().unwrap_or_default() as u16;
        // The first x label ends under the y axis, not left of it.
        let first_x_label = x_labels
            .first()
            .map(|l| (l.width() as u16).saturating_sub(u16::from(has_y_labels)))
            .unwrap_or_default();
        x += widest_y_label.max(first_x_label).min(area.width / 3);
        let mut axis_x = None;
        if has_x_labels && y > area.top() {
            axis_x = Some(y);
            y -= 1;
        }
        let mut axis_y = None;
        if has_y_labels && x + 1 < area.right() {
            axis_y = Some(x);
            x += 1;
        }
        let width = area.right().saturating_sub(x);
        let height = y.saturating_sub(area.top()).saturating_add(1);
        Some(Self {
            label_x,
            label_y,
            axis_x,
            axis_y,
            graph: Rect::new(x, area.top(), width, height),
        })
    }
}

/// The x labels, as `Chart::render_x_labels` draws them (none unless there are two or more):
/// the first right-aligned in the columns left of the graph, the last right-aligned in the last
/// of as many equal parts of the graph's width as there are labels, those between centred in
/// the parts between, a column from the left of each.
fn x_labels(buf: &mut Buffer, labels: &[Line<'_>], row: u16, chart: Rect, graph: Rect) {
    let count = labels.len() as u16;
    let (Some(first), Some(last)) = (labels.first(), labels.last()) else {
        return;
    };
    if count < 2 {
        return;
    }
    let between_ticks = graph.width / count;
    let first_area = Rect::new(chart.left(), row, graph.left() - chart.left(), 1);
    fastline::render_aligned(first, first_area, buf, Alignment::Right);
    for (i, label) in labels[1..labels.len() - 1].iter().enumerate() {
        let x = graph.left() + (i + 1) as u16 * between_ticks + 1;
        let label_area = Rect::new(x, row, between_ticks.saturating_sub(1), 1);
        fastline::render_aligned(label, label_area, buf, Alignment::Center);
    }
    let last_area = Rect::new(graph.right() - between_ticks, row, between_ticks, 1);
    fastline::render_aligned(last, last_area, buf, Alignment::Right);
}

/// The y labels, as `Chart::render_y_labels` draws them (none unless there are two or more):
/// left-aligned from the chart's left edge to the column before the y axis, the first on the
/// graph's last row, the last on its first, those between spread evenly between.
fn y_labels(buf: &mut Buffer, labels: &[Line<'_>], col: u16, chart: Rect, graph: Rect) {
    let count = labels.len() as u16;
    if count < 2 {
        return;
    }
    let width = (graph.left() - chart.left()).saturating_sub(1);
    for (i, label) in labels.iter().enumerate() {
        let dy = i as u16 * (graph.height - 1) / (count - 1);
        if dy < graph.bottom() {
            let row = graph.bottom().saturating_sub(1) - dy;
            fastline::render_aligned(label, Rect::new(col, row, width, 1), buf, Alignment::Left);
        }
    }
}

/// The lines, each a layer over the ones before it: the cells it crosses take its dots and its
/// colour, as the canvas's braille layers do.
fn paint(graph: Rect, buf: &mut Buffer, series: &[Series<'_>], x: [f64; 2], y: [f64; 2]) {
    if graph.is_empty() || series.is_empty() {
        return;
    }
    let mut dots = Dots::new(graph.width, graph.height, x, y);
    for s in series {
        dots.clear();
        for &(px, py) in s.points {
            if let Some((gx, gy)) = dots.grid_point(px, py) {
                dots.paint(gx, gy);
            }
        }
        for pair in s.points.windows(2) {
            dots.line(pair[0], pair[1]);
        }
        let color = s.style.fg.unwrap_or(Color::Reset);
        let width = usize::from(graph.width);
        for (i, &pattern) in dots.cells.iter().enumerate() {
            if pattern == 0 {
                continue;
            }
            // The graph lies inside the area, which lies inside the buffer.
            let (cx, cy) = ((i % width) as u16, (i / width) as u16);
            if let Some(cell) = buf.cell_mut((graph.x + cx, graph.y + cy)) {
                cell.set_char(BRAILLE[usize::from(pattern)]).set_fg(color);
            }
        }
    }
}

/// A braille grid: two dots across and four down per cell, a bit for each, as the canvas keeps
/// one (bit `x % 2 + 2 * (y % 4)`, the index into ratatui's `BRAILLE`).
struct Dots {
    width: u16,
    height: u16,
    x_bounds: [f64; 2],
    y_bounds: [f64; 2],
    cells: Vec<u8>,
}

impl Dots {
    fn new(width: u16, height: u16, x_bounds: [f64; 2], y_bounds: [f64; 2]) -> Self {
        Self {
            width,
            height,
            x_bounds,
            y_bounds,
            cells: vec![0; usize::from(width) * usize::from(height)],
        }
    }

    fn clear(&mut self) {
        self.cells.fill(0);
    }

    /// The dot a point of the chart falls on, counted from the top left, rounded to the
    /// nearest; none outside the bounds (the canvas's `Painter::get_point`).
    fn grid_point(&self, x: f64, y: f64) -> Option<(usize, usize)> {
        let [left, right] = self.x_bounds;
        let [bottom, top] = self.y_bounds;
        if x < left || x > right || y < bottom || y > top {
            return None;
        }
        let (width, height) = (right - left, top - bottom);
        if width <= 0.0 || height <= 0.0 {
            return None;
        }
        let dots_across = f64::from(self.width) * 2.0;
        let dots_down = f64::from(self.height) * 4.0;
        // As the canvas does: a float cast to usize saturates, and NaN becomes 0.
        let gx = ((x - left) * (dots_across - 1.0) / width).round() as usize;
        let gy = ((top - y) * (dots_down - 1.0) / height).round() as usize;
        Some((gx, gy))
    }

    fn paint(&mut self, x: usize, y: usize) {
        let index = (y / 4)
            .saturating_mul(usize::from(self.width))
            .saturating_add(x / 2);
        if let Some(cell) = self.cells.get_mut(index) {
            *cell |= 1u8 << ((x % 2) + 2 * (y % 4));
        }
    }

    /// A line between two points of the chart, clipped to the bounds, dot by dot (the
    /// canvas's `Line`: Cohen-Sutherland clipping, then Bresenham).
    fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64)) {
        let [xmin, xmax] = self.x_bounds;
        let [ymin, ymax] = self.y_bounds;
        let Some(clipped) = cohen_sutherland::clip_line(
            LineSegment::new(Point::new(x1, y1), Point::new(x2, y2)),
            Window::new(xmin, xmax, ymin, ymax),
        ) else {
            return;
        };
        let Some((x1, y1)) = self.grid_point(clipped.p1.x, clipped.p1.y) else {
            return;
        };
        let Some((x2, y2)) = self.grid_point(clipped.p2.x, clipped.p2.y) else {
            return;
        };
        let (dx, dy) = (x2.abs_diff(x1), y2.abs_diff(y1));
        if dx == 0 {
            for y in y1.min(y2)..=y1.max(y2) {
                self.paint(x1, y);
            }
        } else if dy == 0 {
            for x in x1.min(x2)..=x1.max(x2) {
                self.paint(x, y1);
            }
        } else if dy < dx {
            if x1 > x2 {
                self.shallow(x2, y2, x1, y1);
            } else {
                self.shallow(x1, y1, x2, y2);
            }
        } else if y1 > y2 {
            self.steep(x2, y2, x1, y1);
        } else {
            self.steep(x1, y1, x2, y2);
        }
    }

    /// Bresenham for a line more across than down, `x1 <= x2`.
    fn shallow(&mut self, x1: usize, y1: usize, x2: usize, y2: usize) {
        let dx = (x2 - x1) as isize;
        let dy = (y2 as isize - y1 as isize).abs();
        let mut d = 2 * dy - dx;
        let mut y = y1;
        for x in x1..=x2 {
            self.paint(x, y);
            if d > 0 {
                y = if y1 > y2 {
                    y.saturating_sub(1)
                } else {
                    y.saturating_add(1)
                };
                d -= 2 * dx;
            }
            d += 2 * dy;
        }
    }

    /// Bresenham for a line more down than across, `y1 <= y2`.
    fn steep(&mut self, x1: usize, y1: usize, x2: usize, y2: usize) {
        let dx = (x2 as isize - x1 as isize).abs();
        let dy = (y2 - y1) as isize;
        let mut d = 2 * dx - dy;
        let mut x = x1;
        for y in y1..=y2 {
            self.paint(x, y);
            if d > 0 {
                x = if x1 > x2 {
                    x.saturating_sub(1)
                } else {
                    x.saturating_add(1)
                };
                d -= 2 * dy;
            }
            d += 2 * dx;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::option;
    use proptest::prelude::*;
    use proptest::sample::select;
    use ratatui::style::{Color, Modifier, Style};
    use ratatui::symbols::Marker;
    use ratatui::text::Span;
    use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Widget};

    use super::*;

    fn axis<'a>(a: &ChartAxis<'a>) -> Axis<'a> {
        Axis::default()
            .bounds(a.bounds)
            .labels(a.labels.clone())
            .style(a.style)
    }

    /// What `Chart` draws over `base`: on `base` itself where the area lies inside it, else on
    /// a buffer that holds both (`base`'s cells where they meet, empty ones elsewhere), of which
    /// `base`'s part is kept.
    fn chart(
        area: Rect,
        base: &Buffer,
        series: &[(Vec<(f64, f64)>, Style)],
        x: &ChartAxis<'_>,
        y: &ChartAxis<'_>,
    ) -> Buffer {
        let mut whole = Buffer::empty(base.area.union(area));
        copy(base, &mut whole, base.area);
        let datasets = series
            .iter()
            .map(|(points, style)| {
                Dataset::default()
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(*style)
                    .data(points)
            })
            .collect();
        Chart::new(datasets)
            .x_axis(axis(x))
            .y_axis(axis(y))
            .render(area, &mut whole);
        let mut seen = base.clone();
        copy(&whole, &mut seen, base.area);
        seen
    }

    /// Both ways of drawing over `base`: `Chart`'s, then `line_chart`'s.
    fn both(
        area: Rect,
        base: &Buffer,
        series: &[(Vec<(f64, f64)>, Style)],
        x: &ChartAxis<'_>,
        y: &ChartAxis<'_>,
    ) -> (Buffer, Buffer) {
        let slow = chart(area, base, series, x, y);
        let mut fast = base.clone();
        let series: Vec<Series<'_>> = series
            .iter()
            .map(|(points, style)| Series {
                points,
                style: *style,
            })
            .collect();
        line_chart(area, &mut fast, &series, x, y);
        (slow, fast)
    }

    /// A buffer that already has content and styles: letters on blue, some of them magenta and
    /// italic.
    fn lettered(full: Rect) -> Buffer {
        let mut base = Buffer::empty(full);
        for row in full.top()..full.bottom() {
            let text: String = "abcdefghijklmnopqrstuvwxyz".repeat(8);
            base.set_string(full.x, row, text, Style::default().bg(Color::Blue));
        }
        for (i, cell) in base.content.iter_mut().enumerate() {
            if i % 3 == 0 {
                cell.set_style(
                    Style::default()
                        .fg(Color::Magenta)
                        .add_modifier(Modifier::ITALIC),
                );
            }
        }
        base
    }

    fn axes(span: f64, top: f64) -> (ChartAxis<'static>, ChartAxis<'static>) {
        let muted = Style::default().fg(Color::DarkGray);
        let x = ChartAxis {
            bounds: [-(span - 1.0), 0.0],
            labels: vec![
                Line::from(Span::styled("-10m", muted)),
                Line::from(Span::styled("now", muted)),
            ],
            style: muted,
        };
        let y = ChartAxis {
            bounds: [0.0, top],
            labels: vec![Line::from("0W"), Line::from(format!("{top:.0}W"))],
            style: muted,
        };
        (x, y)
    }

    #[test]
    fn draws_what_the_chart_widget_draws_for_the_gpu_charts() {
        let util: Vec<(f64, f64)> = (0..300)
            .map(|i| (f64::from(i) - 299.0, f64::from((i * 37) % 101)))
            .collect();
        let mem: Vec<(f64, f64)> = (0..300)
            .map(|i| (f64::from(i) - 299.0, 40.0 + f64::from(i % 7)))
            .collect();
        // Power above its limit leaves the chart at the top; a flat line, a single point.
        let power: Vec<(f64, f64)> = (0..300)
            .map(|i| (f64::from(i) - 299.0, f64::from(i) * 2.5))
            .collect();
        let series = [
            (util, Style::default().fg(Color::Green)),
            (
                mem,
                Style::default()
                    .fg(Color::Blue)
                    .add_modifier(Modifier::BOLD),
            ),
            (power, Style::default()),
            (
                vec![(-3.0, 50.0), (0.0, 50.0)],
                Style::default().fg(Color::Red),
            ),
            (vec![(-100.0, 20.0)], Style::default().fg(Color::Yellow)),
            (Vec::new(), Style::default().fg(Color::Yellow)),
        ];
        let base = lettered(Rect::new(0, 0, 160, 30));
        let (x, y) = axes(300.0, 700.0);
        for area in [
            Rect::new(1, 1, 158, 20),
            Rect::new(0, 0, 160, 30),
            Rect::new(5, 3, 40, 8),
            Rect::new(2, 2, 6, 3),
            Rect::new(0, 0, 1, 1),
            Rect::new(0, 0, 3, 2),
            Rect::new(0, 0, 0, 5),
            // At the buffer's right and bottom edges, and past them.
            Rect::new(100, 20, 60, 10),
            Rect::new(159, 29, 1, 1),
            Rect::new(120, 25, 60, 10),
            Rect::new(150, 0, 20, 30),
            Rect::new(0, 28, 30, 3),
            Rect::new(170, 40, 10, 5),
        ] {
            for n in 0..=series.len() {
                let (slow, fast) = both(area, &base, &series[..n], &x, &y);
                assert_eq!(slow, fast, "{n} series in {area:?}");
            }
        }
    }

    #[test]
    fn axes_without_labels_are_laid_out_as_the_chart_widget_does() {
        let points: Vec<(f64, f64)> = (0..50).map(|i| (f64::from(i), f64::from(i % 9))).collect();
        let series = [(points, Style::default().fg(Color::Cyan))];
        let plain = |bounds, labels: Vec<Line<'static>>| ChartAxis {
            bounds,
            labels,
            style: Style::default(),
        };
        let full = Rect::new(0, 0, 40, 12);
        let base = lettered(full);
        for (xl, yl) in [(0, 0), (1, 0), (0, 3), (3, 1), (2, 2)] {
            let labels = |n: usize| (0..n).map(|i| Line::from("x".repeat(i * 3 + 1))).collect();
            let x = plain([0.0, 49.0], labels(xl));
            let y = plain([0.0, 8.0], labels(yl));
            for area in [full, Rect::new(3, 2, 20, 6), Rect::new(0, 0, 4, 3)] {
                let (slow, fast) = both(area, &base, &series, &x, &y);
                assert_eq!(slow, fast, "{xl} x labels, {yl} y labels in {area:?}");
            }
        }
    }

    #[test]
    fn labels_of_any_number_width_and_style_are_placed_as_the_chart_widget_places_them() {
        let points: Vec<(f64, f64)> = (0..20).map(|i| (f64::from(i), f64::from(i % 5))).collect();
        let series = [(points, Style::default().fg(Color::Green))];
        let labels = [
            Line::from(Span::styled("-10m", Style::default().fg(Color::DarkGray))),
            Line::from("世界").style(Style::default().bg(Color::Red)),
            Line::from(vec![
                Span::raw("mid"),
                Span::styled("dle", Style::default().fg(Color::Red)),
            ])
            .right_aligned(),
            Line::from(""),
            Line::from("a label wider than its room"),
            Line::from("e\u{301}"),
        ];
        let base = lettered(Rect::new(0, 0, 50, 14));
        for n in 0..=labels.len() {
            for m in [0, 2, 3, 5] {
                let x = ChartAxis {
                    bounds: [0.0, 19.0],
                    labels: labels[..n].to_vec(),
                    style: Style::default().fg(Color::Gray).add_modifier(Modifier::DIM),
                };
                let y = ChartAxis {
                    bounds: [0.0, 4.0],
                    labels: labels.iter().rev().take(m).cloned().collect(),
                    style: Style::default().bg(Color::Yellow),
                };
                for area in [
                    Rect::new(0, 0, 50, 14),
                    Rect::new(2, 1, 33, 9),
                    Rect::new(1, 1, 7, 4),
                    Rect::new(40, 10, 20, 8),
                ] {
                    let (slow, fast) = both(area, &base, &series, &x, &y);
                    assert_eq!(slow, fast, "{n} x labels, {m} y labels in {area:?}");
                }
            }
        }
    }

    /// Finite values only: with NaN and infinite points among them, ratatui's chart did not
    /// finish drawing in testing (its line clipping, the same function here); the GPU charts'
    /// points are finite.
    fn coordinate() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => -120.0f64..120.0,
            1 => Just(0.0),
            1 => Just(100.0),
            1 => Just(-5.0),
        ]
    }

    fn color() -> impl Strategy<Value = Color> {
        select(vec![
            Color::Reset,
            Color::Red,
            Color::Blue,
            Color::DarkGray,
            Color::Indexed(42),
            Color::Rgb(1, 2, 3),
        ])
    }

    /// The default style often, else any colours and modifiers added and taken away.
    fn style() -> impl Strategy<Value = Style> {
        prop_oneof![
            1 => Just(Style::default()),
            2 => (option::of(color()), option::of(color()), any::<u16>(), any::<u16>()).prop_map(
                |(fg, bg, add, sub)| {
                    Style {
                        fg,
                        bg,
                        add_modifier: Modifier::from_bits_truncate(add),
                        sub_modifier: Modifier::from_bits_truncate(sub),
                        ..Style::default()
                    }
                }
            ),
        ]
    }

    /// A label of a few spans: empty, narrow, long, wide characters, a combining mark, a
    /// zero-width space; its own style and alignment (which `Chart` overrides).
    fn label() -> impl Strategy<Value = Line<'static>> {
        let text = prop_oneof![
            4 => select(vec!["", "0", "0%", "100%", "-10m", "now", "700W", " ", "a long label", "⣿→"]),
            1 => select(vec!["世界", "🙂x", "e\u{301}", "\u{200b}"]),
        ];
        let alignment = option::of(select(vec![
            Alignment::Left,
            Alignment::Center,
            Alignment::Right,
        ]));
        (vec((text, style()), 0..3), style(), alignment).prop_map(|(spans, style, alignment)| {
            let spans: Vec<Span<'static>> = spans
                .into_iter()
                .map(|(text, style)| Span::styled(text, style))
                .collect();
            let mut line = Line::from(spans).style(style);
            line.alignment = alignment;
            line
        })
    }

    fn length(max: u16) -> impl Strategy<Value = u16> {
        prop_oneof![0..=max.min(2), 0..=max]
    }

    /// A buffer anywhere near the origin and an area inside it, or anywhere near it (at and
    /// past its edges, or off it).
    fn buffer_and_area() -> impl Strategy<Value = (Rect, Rect)> {
        (0u16..4, 0u16..4, 0u16..50, 0u16..24).prop_flat_map(|(bx, by, bw, bh)| {
            let full = Rect::new(bx, by, bw, bh);
            let inside = (bx..=bx + bw, by..=by + bh).prop_flat_map(move |(x, y)| {
                (Just(x), Just(y), length(bx + bw - x), length(by + bh - y))
            });
            let near = (0u16..60, 0u16..30, length(60), length(30));
            (
                Just(full),
                prop_oneof![3 => inside.boxed(), 2 => near.boxed()],
            )
                .prop_map(|(full, (x, y, w, h))| (full, Rect::new(x, y, w, h)))
        })
    }

    /// A buffer already filled with characters (one of them wide) in any styles.
    fn filled(area: Rect, fill: &[(&str, Style)]) -> Buffer {
        let mut buf = Buffer::empty(area);
        for (i, cell) in buf.content.iter_mut().enumerate() {
            let (symbol, style) = fill[(i * 7 + i / 5) % fill.len()];
            cell.set_symbol(symbol).set_style(style);
        }
        buf
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any points, inside the bounds or not, any bounds, labels and styles, any area in,
        /// at the edge of or outside a buffer that already holds anything.
        #[test]
        fn any_chart_is_drawn_as_the_chart_widget_draws_it(
            (full, area) in buffer_and_area(),
            fill in vec((select(vec!["a", "b", " ", "─", "世"]), style()), 1..6),
            (left, right, bottom, top) in (-100.0f64..0.0, -10.0f64..50.0, -10.0f64..50.0, 0.0f64..150.0),
            lines in vec((vec((coordinate(), coordinate()), 0..40), color()), 0..3),
            (x_labels, x_style) in (vec(label(), 0..5), style()),
            (y_labels, y_style) in (vec(label(), 0..5), style()),
        ) {
            let base = filled(full, &fill);
            let x_axis = ChartAxis {
                bounds: [left, right],
                labels: x_labels,
                style: x_style,
            };
            let y_axis = ChartAxis {
                bounds: [bottom, top],
                labels: y_labels,
                style: y_style,
            };
            let series: Vec<_> = lines
                .into_iter()
                .map(|(points, c)| (points, Style::default().fg(c)))
                .collect();
            let (slow, fast) = both(area, &base, &series, &x_axis, &y_axis);
            prop_assert_eq!(slow, fast);
        }
    }
}
