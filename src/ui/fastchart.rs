//! Line charts in braille drawn as ratatui's `Chart` draws them, cell for cell, for less: the
//! axes, labels and styles by `Chart` itself, the lines by painting only the cells they cross.
//! `Chart` paints each line through a `Canvas`, which allocates a grid and then a layer the size
//! of the whole graph for each line and walks every cell of both; at 160x50 that was the largest
//! cost of the GPUs tab's frame after the diff.

use line_clipping::cohen_sutherland;
use line_clipping::{LineSegment, Point, Window};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::symbols::braille::BRAILLE;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Widget};

/// One axis: its bounds, labels (spread along it) and style, and nothing else.
pub struct ChartAxis<'a> {
    pub bounds: [f64; 2],
    pub labels: Vec<Line<'a>>,
    pub style: Style,
}

impl<'a> ChartAxis<'a> {
    fn axis(&self) -> Axis<'a> {
        Axis::default()
            .bounds(self.bounds)
            .labels(self.labels.clone())
            .style(self.style)
    }
}

/// One line: its points, in order, and its style (the dots take its foreground colour).
pub struct Series<'p> {
    pub points: &'p [(f64, f64)],
    pub style: Style,
}

/// Draws what `Chart::new(datasets).x_axis(x).y_axis(y).render(area, buf)` draws, where each
/// series is `Dataset::default().marker(Marker::Braille).graph_type(GraphType::Line)`, with its
/// style and points, and each axis has only bounds, labels and a style.
pub fn line_chart(
    area: Rect,
    buf: &mut Buffer,
    series: &[Series<'_>],
    x: &ChartAxis<'_>,
    y: &ChartAxis<'_>,
) {
    // Everything but the lines: a chart without data draws the same labels, axes and styles,
    // and leaves the graph's cells as it found them but for their background.
    Chart::new(Vec::new())
        .x_axis(x.axis())
        .y_axis(y.axis())
        .render(area, buf);
    let Some(graph) = graph_area(area, &x.labels, &y.labels) else {
        return;
    };
    if graph.is_empty() {
        return;
    }
    let mut dots = Dots::new(graph.width, graph.height, x.bounds, y.bounds);
    // Each series is a layer over the ones before it: its cells take its dots and its colour.
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

/// Where `Chart` puts the graph inside `area`, for axes with these labels (aligned left, the
/// default): the last row for the x labels and the one above for the x axis, the columns on the
/// left for the y labels (at most a third of the width) and one for the y axis.
fn graph_area(area: Rect, x_labels: &[Line<'_>], y_labels: &[Line<'_>]) -> Option<Rect> {
    if area.height == 0 || area.width == 0 {
        return None;
    }
    let mut x = area.left();
    let mut y = area.bottom() - 1;
    let has_x_labels = !x_labels.is_empty();
    let has_y_labels = !y_labels.is_empty();
    if has_x_labels && y > area.top() {
        y -= 1;
    }
    let widest_y_label = y_labels.iter().map(Line::width).max().unwrap_or_default() as u16;
    // The first x label ends under the y axis, not left of it.
    let first_x_label = x_labels
        .first()
        .map(|l| (l.width() as u16).saturating_sub(u16::from(has_y_labels)))
        .unwrap_or_default();
    x += widest_y_label.max(first_x_label).min(area.width / 3);
    if has_x_labels && y > area.top() {
        y -= 1;
    }
    if has_y_labels && x + 1 < area.right() {
        x += 1;
    }
    let width = area.right().saturating_sub(x);
    let height = y.saturating_sub(area.top()).saturating_add(1);
    Some(Rect::new(x, area.top(), width, height))
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
    use proptest::prelude::*;
    use ratatui::style::{Color, Modifier, Style};
    use ratatui::symbols::Marker;
    use ratatui::text::Span;
    use ratatui::widgets::{Dataset, GraphType};

    use super::*;

    /// Both ways of drawing, over a buffer that already has content and styles.
    fn both(
        area: Rect,
        full: Rect,
        series: &[(Vec<(f64, f64)>, Style)],
        x: &ChartAxis<'_>,
        y: &ChartAxis<'_>,
    ) -> (Buffer, Buffer) {
        let mut base = Buffer::empty(full);
        for row in full.top()..full.bottom() {
            let text: String = "abcdefghijklmnopqrstuvwxyz".repeat(8);
            base.set_string(full.x, row, text, Style::default().bg(Color::Blue));
        }
        let mut slow = base.clone();
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
            .x_axis(x.axis())
            .y_axis(y.axis())
            .render(area, &mut slow);
        let mut fast = base;
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
        let full = Rect::new(0, 0, 160, 30);
        let (x, y) = axes(300.0, 700.0);
        for area in [
            Rect::new(1, 1, 158, 20),
            Rect::new(0, 0, 160, 30),
            Rect::new(5, 3, 40, 8),
            Rect::new(2, 2, 6, 3),
            Rect::new(0, 0, 1, 1),
            Rect::new(0, 0, 3, 2),
            Rect::new(0, 0, 0, 5),
        ] {
            for n in 0..=series.len() {
                let (slow, fast) = both(area, full, &series[..n], &x, &y);
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
        for (xl, yl) in [(0, 0), (1, 0), (0, 3), (3, 1), (2, 2)] {
            let labels = |n: usize| (0..n).map(|i| Line::from("x".repeat(i * 3 + 1))).collect();
            let x = plain([0.0, 49.0], labels(xl));
            let y = plain([0.0, 8.0], labels(yl));
            for area in [full, Rect::new(3, 2, 20, 6), Rect::new(0, 0, 4, 3)] {
                let (slow, fast) = both(area, full, &series, &x, &y);
                assert_eq!(slow, fast, "{xl} x labels, {yl} y labels in {area:?}");
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

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any points, inside the bounds or not, any bounds, any area of the buffer.
        #[test]
        fn any_points_are_drawn_as_the_chart_widget_draws_them(
            (x, y, width, height) in (0u16..10, 0u16..6, 0u16..50, 0u16..20),
            (left, right, bottom, top) in (-100.0f64..0.0, -10.0f64..50.0, -10.0f64..50.0, 0.0f64..150.0),
            lines in vec(vec((coordinate(), coordinate()), 0..40), 0..3),
        ) {
            let full = Rect::new(0, 0, 60, 26);
            let area = Rect::new(x, y, width, height);
            let x_axis = ChartAxis {
                bounds: [left, right],
                labels: vec![Line::from("-5m"), Line::from("now")],
                style: Style::default().fg(Color::Gray),
            };
            let y_axis = ChartAxis {
                bounds: [bottom, top],
                labels: vec![Line::from("0%"), Line::from("100%")],
                style: Style::default(),
            };
            let colors = [Color::Green, Color::Blue, Color::Reset];
            let series: Vec<_> = lines
                .into_iter()
                .zip(colors)
                .map(|(points, c)| (points, Style::default().fg(c)))
                .collect();
            let (slow, fast) = both(area, full, &series, &x_axis, &y_axis);
            prop_assert_eq!(slow, fast);
        }
    }
}
