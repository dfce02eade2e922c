//! The GPU history charts: lines in braille over two labelled axes, gpudeck's own chart widget.
//!
//! The layout is the one ratatui's `Chart` uses, so the charts look as they did when drawn by
//! it: the x labels on the last row and the x axis above them, the y labels in the columns on
//! the left (as wide as the widest label, at most a third of the area) and the y axis beside
//! them, the graph in the rest. The lines are painted only in the cells they cross (two dots
//! across and four down per cell, a Bresenham line between each pair of points, clipped to the
//! bounds); the graph's other cells only get their background reset. Drawing `Chart` itself
//! went through a canvas that allocates and walks a layer the size of the whole graph for each
//! line, every frame.
//!
//! Only public ratatui types are used (`Buffer`, `Line`, the braille and line symbols). The
//! tests say what a chart draws (a snapshot of a small one, the dots given points light, where
//! the labels and axes go), not how `Chart` would draw it, so a ratatui upgrade is a version
//! bump and a look at the snapshot.

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

/// Draws a line chart of `series` over the axes `x` and `y` in `area`: each series a braille
/// line through its points, in its colour, over the ones before it; each axis a line with its
/// labels spread along it (none with fewer than two). Where part of the area lies outside the
/// buffer, the part inside gets what the chart draws on a buffer holding it all.
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

/// `line_chart` for a non-empty area inside the buffer: the x labels, the y labels, the x axis,
/// the y axis, the corner, the graph's background, the lines.
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
    // The graph shows on the terminal's own background.
    let width = usize::from(graph.width);
    for row in graph.top()..graph.bottom() {
        let start = buf.index_of(graph.x, row);
        for cell in &mut buf.content[start..start + width] {
            cell.bg = Color::Reset;
        }
    }
    paint(graph, buf, series, x.bounds, y.bounds);
}

/// Where each part goes inside the chart's area: the last row for the x labels and the one above
/// for the x axis, the columns on the left for the y labels (with the first x label, which ends
/// under the y axis, at most a third of the width) and one for the y axis; each only where there
/// are labels and room.
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

/// The x labels (none unless there are two or more):
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

/// The y labels (none unless there are two or more):
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
/// colour.
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

/// A braille grid: two dots across and four down per cell, a bit for each (bit
/// `x % 2 + 2 * (y % 4)`, the index into ratatui's `BRAILLE`).
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
    /// nearest; none outside the bounds.
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
        // A float cast to usize saturates, and NaN becomes 0.
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

    /// A line between two points of the chart, clipped to the bounds, dot by dot
    /// (Cohen-Sutherland clipping, then Bresenham).
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
    use ratatui::text::Span;

    use super::*;

    /// An axis with bounds only: no labels, so no axis line and no room taken.
    fn bare(bounds: [f64; 2]) -> ChartAxis<'static> {
        ChartAxis {
            bounds,
            labels: Vec::new(),
            style: Style::default(),
        }
    }

    /// `line_chart` of these lines, in these colours, on an empty buffer of `area`.
    fn drawn(
        area: Rect,
        lines: &[(&[(f64, f64)], Color)],
        x: &ChartAxis<'_>,
        y: &ChartAxis<'_>,
    ) -> Buffer {
        let series: Vec<Series<'_>> = lines
            .iter()
            .map(|(points, color)| Series {
                points,
                style: Style::default().fg(*color),
            })
            .collect();
        let mut buf = Buffer::empty(area);
        line_chart(area, &mut buf, &series, x, y);
        buf
    }

    fn rows(buf: &Buffer) -> Vec<String> {
        (buf.area.top()..buf.area.bottom())
            .map(|y| {
                (buf.area.left()..buf.area.right())
                    .map(|x| buf[(x, y)].symbol())
                    .collect()
            })
            .collect()
    }

    /// A 2x2 graph of 4x8 dots over x 0..3 and y 0..7: one dot per unit, y up.
    const SMALL: Rect = Rect::new(0, 0, 2, 2);

    #[test]
    fn each_point_lights_the_dot_it_falls_on() {
        let (x, y) = (bare([0.0, 3.0]), bare([0.0, 7.0]));
        // The top left corner: the first dot of the first cell (braille dot 1).
        let buf = drawn(SMALL, &[(&[(0.0, 7.0)], Color::Green)], &x, &y);
        assert_eq!(rows(&buf), ["⠁ ", "  "]);
        assert_eq!(buf[(0, 0)].fg, Color::Green);
        // The bottom right corner: the last dot of the last cell (braille dot 8).
        let buf = drawn(SMALL, &[(&[(3.0, 0.0)], Color::Green)], &x, &y);
        assert_eq!(rows(&buf), ["  ", " ⢀"]);
        // Rounded to the nearest dot: (1.4, 5.6) is the dot at (1, 6) from the bottom left.
        let buf = drawn(SMALL, &[(&[(1.4, 5.6)], Color::Green)], &x, &y);
        assert_eq!(rows(&buf), ["⠐ ", "  "]);
        // Outside the bounds: nothing (each point a line of its own: the two joined would
        // cross the graph).
        let buf = drawn(
            SMALL,
            &[
                (&[(4.0, 3.0)], Color::Green),
                (&[(-1.0, 3.0)], Color::Green),
            ],
            &x,
            &y,
        );
        assert_eq!(rows(&buf), ["  ", "  "]);
    }

    #[test]
    fn lines_light_every_dot_between_their_points_and_are_clipped_to_the_bounds() {
        let (x, y) = (bare([0.0, 3.0]), bare([0.0, 7.0]));
        // Along the top: the first row of dots of both top cells (dots 1 and 4).
        let buf = drawn(SMALL, &[(&[(0.0, 7.0), (3.0, 7.0)], Color::Red)], &x, &y);
        assert_eq!(rows(&buf), ["⠉⠉", "  "]);
        // Down the left: the left column of dots of both left cells (dots 1, 2, 3 and 7).
        let buf = drawn(SMALL, &[(&[(0.0, 0.0), (0.0, 7.0)], Color::Red)], &x, &y);
        assert_eq!(rows(&buf), ["⡇ ", "⡇ "]);
        // A diagonal from the bottom left to the top right, one dot across per two down.
        let buf = drawn(SMALL, &[(&[(0.0, 0.0), (3.0, 7.0)], Color::Red)], &x, &y);
        assert_eq!(rows(&buf), [" ⡜", "⡜ "]);
        // From far outside to the middle: only the part inside the bounds is drawn.
        let buf = drawn(SMALL, &[(&[(-30.0, 3.0), (1.0, 3.0)], Color::Red)], &x, &y);
        assert_eq!(rows(&buf), ["  ", "⠉ "]);
    }

    #[test]
    fn a_later_line_takes_the_cells_it_crosses_with_its_own_dots_and_colour() {
        let (x, y) = (bare([0.0, 3.0]), bare([0.0, 7.0]));
        let top: &[(f64, f64)] = &[(0.0, 7.0), (3.0, 7.0)];
        let corner: &[(f64, f64)] = &[(3.0, 7.0)];
        let buf = drawn(SMALL, &[(top, Color::Red), (corner, Color::Blue)], &x, &y);
        // The right cell shows only the second line's dot (dot 4), in its colour.
        assert_eq!(rows(&buf), ["⠉⠈", "  "]);
        assert_eq!(buf[(0, 0)].fg, Color::Red);
        assert_eq!(buf[(1, 0)].fg, Color::Blue);
    }

    fn labelled() -> (ChartAxis<'static>, ChartAxis<'static>) {
        let muted = Style::default().fg(Color::DarkGray);
        let x = ChartAxis {
            bounds: [-9.0, 0.0],
            labels: vec![
                Line::from(Span::styled("-10m", muted)),
                Line::from(Span::styled("now", muted)),
            ],
            style: muted,
        };
        let y = ChartAxis {
            bounds: [0.0, 700.0],
            labels: vec![Line::from("0W"), Line::from("700W")],
            style: muted,
        };
        (x, y)
    }

    /// A small GPU chart as the detail pane draws it: a power line rising to the limit under a
    /// flat one, with a time axis and a watt axis.
    #[test]
    fn a_small_gpu_chart() {
        let (x, y) = labelled();
        let rising: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i) - 9.0, f64::from(i) * 80.0))
            .collect();
        let flat: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i) - 9.0, 350.0)).collect();
        let buf = drawn(
            Rect::new(0, 0, 20, 7),
            &[(&rising, Color::Yellow), (&flat, Color::Blue)],
            &x,
            &y,
        );
        insta::assert_snapshot!(rows(&buf).join("\n"));
        // The axes and the labels in the axis style, the lines in their colours.
        let muted = Color::DarkGray;
        assert_eq!(buf[(4, 5)].symbol(), "└");
        assert_eq!(buf[(4, 5)].fg, muted);
        assert_eq!(buf[(4, 0)].symbol(), "│");
        assert_eq!(buf[(10, 5)].symbol(), "─");
        assert_eq!(buf[(1, 6)].symbol(), "-");
        assert_eq!(buf[(1, 6)].fg, muted);
        assert_eq!(buf[(19, 0)].fg, Color::Yellow);
        assert!(
            (5..20).any(|x| buf[(x, 2)].fg == Color::Blue),
            "the flat line crosses the middle row"
        );
    }

    #[test]
    fn labels_go_at_the_ends_of_their_axes_and_the_graph_takes_the_rest() {
        let (x, y) = labelled();
        let buf = drawn(Rect::new(0, 0, 20, 7), &[], &x, &y);
        let rows = rows(&buf);
        // The widest y label (4 columns) sets the y axis's column; the first x label ends
        // under it, the last at the right edge.
        assert_eq!(rows[0], "700W│               ");
        assert_eq!(rows[4], "0W  │               ");
        assert_eq!(rows[5], "    └───────────────");
        assert_eq!(rows[6], " -10m            now");
        // Without labels, no axis is drawn and the graph takes the whole area.
        let (x, y) = (bare([-9.0, 0.0]), bare([0.0, 700.0]));
        let full: Vec<(f64, f64)> = vec![(-9.0, 0.0), (0.0, 0.0)];
        let buf = drawn(Rect::new(0, 0, 20, 7), &[(&full, Color::Red)], &x, &y);
        assert_eq!(super::tests::rows(&buf)[6], "⣀".repeat(20));
    }

    #[test]
    fn the_graph_keeps_what_is_under_it_but_its_background() {
        let (x, y) = (bare([0.0, 3.0]), bare([0.0, 7.0]));
        let mut buf = Buffer::empty(Rect::new(0, 0, 4, 2));
        buf.set_string(
            0,
            0,
            "abcd",
            Style::default().fg(Color::Cyan).bg(Color::Blue),
        );
        let series = [Series {
            points: &[(0.0, 7.0)],
            style: Style::default().fg(Color::Red),
        }];
        line_chart(SMALL, &mut buf, &series, &x, &y);
        assert_eq!(rows(&buf), ["⠁bcd", "    "]);
        assert_eq!(buf[(1, 0)].bg, Color::Reset, "inside the chart");
        assert_eq!(buf[(1, 0)].fg, Color::Cyan);
        assert_eq!(buf[(2, 0)].bg, Color::Blue, "outside the chart");
    }

    /// Finite values only; the GPU charts' points are finite.
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
    /// zero-width space; its own style and alignment.
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
        /// at the edge of or outside a buffer that already holds anything: the chart draws
        /// nothing outside its area, and inside the buffer what it draws on a buffer holding
        /// its whole area.
        #[test]
        fn any_chart_stays_in_its_area_and_is_cut_by_the_buffer_only(
            (full, area) in buffer_and_area(),
            fill in vec((select(vec!["a", "b", " ", "─", "世"]), style()), 1..6),
            (left, right, bottom, top) in (-100.0f64..0.0, -10.0f64..50.0, -10.0f64..50.0, 0.0f64..150.0),
            lines in vec((vec((coordinate(), coordinate()), 0..40), color()), 0..3),
            (x_labels, x_style) in (vec(label(), 0..5), style()),
            (y_labels, y_style) in (vec(label(), 0..5), style()),
        ) {
            let base = filled(full, &fill);
            let x_axis = ChartAxis { bounds: [left, right], labels: x_labels, style: x_style };
            let y_axis = ChartAxis { bounds: [bottom, top], labels: y_labels, style: y_style };
            let series: Vec<Series<'_>> = lines
                .iter()
                .map(|(points, c)| Series { points, style: Style::default().fg(*c) })
                .collect();
            let mut cut = base.clone();
            line_chart(area, &mut cut, &series, &x_axis, &y_axis);
            let mut whole = Buffer::empty(full.union(area));
            copy(&base, &mut whole, full);
            line_chart(area, &mut whole, &series, &x_axis, &y_axis);
            for row in full.top()..full.bottom() {
                for col in full.left()..full.right() {
                    let expected = if area.contains((col, row).into()) {
                        &whole[(col, row)]
                    } else {
                        &base[(col, row)]
                    };
                    prop_assert_eq!(&cut[(col, row)], expected, "({}, {})", col, row);
                }
            }
        }
    }
}
