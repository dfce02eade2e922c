//! The table every list tab draws with: fixed columns get what they need, the flexible column
//! (a name, an image reference, a command) gets the rest, and a cell longer than its column
//! ends with `…`.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::text::Span;
use ratatui::widgets::{Block, Cell, Row, Table, Widget};

use super::style::Styles;

/// Columns are this far apart.
pub const SPACING: u16 = 1;

/// How wide a column is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// Always this wide (a state word, a size, a time).
    Fixed(u16),
    /// As wide as its longest shown cell or its title, within `min..=max` (an id).
    Fit { min: u16, max: u16 },
    /// What the other columns leave, at least `min` (a name, an image reference, a command).
    Flex { min: u16 },
}

/// A column: its title and width rule.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub title: &'static str,
    pub width: Width,
}

impl Column {
    pub const fn fixed(title: &'static str, width: u16) -> Self {
        Self {
            title,
            width: Width::Fixed(width),
        }
    }

    pub const fn fit(title: &'static str, min: u16, max: u16) -> Self {
        Self {
            title,
            width: Width::Fit { min, max },
        }
    }

    pub const fn flex(title: &'static str, min: u16) -> Self {
        Self {
            title,
            width: Width::Flex { min },
        }
    }
}

/// One row: its cells (text with its own style) and the row's style.
#[derive(Clone, Debug)]
pub struct TableRow {
    pub cells: Vec<Span<'static>>,
    pub style: Style,
}

impl TableRow {
    pub fn new(cells: Vec<Span<'static>>, style: Style) -> Self {
        Self { cells, style }
    }
}

/// The width of each column for a table `total` columns wide (inside its borders) showing
/// `rows`. The flexible columns share what the others leave; when even their minimum does
/// not fit, the rightmost columns give way first.
pub fn widths(columns: &[Column], rows: &[TableRow], total: u16) -> Vec<u16> {
    let mut out: Vec<u16> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| match c.width {
            Width::Fixed(w) => w,
            Width::Fit { min, max } => rows
                .iter()
                .filter_map(|r| r.cells.get(i))
                .map(|cell| cell.width())
                .chain([Span::raw(c.title).width()])
                .max()
                .map_or(min, |w| (w as u16).clamp(min, max.max(min))),
            Width::Flex { min } => min,
        })
        .collect();
    let gaps = SPACING * columns.len().saturating_sub(1) as u16;
    let used: u16 = out.iter().sum::<u16>() + gaps;
    let flex: Vec<usize> = columns
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.width, Width::Flex { .. }))
        .map(|(i, _)| i)
        .collect();
    if total >= used {
        let spare = total - used;
        for (n, &i) in flex.iter().enumerate() {
            // Shared evenly; the first flexible column takes the odd column.
            let share =
                spare / flex.len() as u16 + u16::from((n as u16) < spare % flex.len() as u16);
            out[i] += share;
        }
        return out;
    }
    let mut over = used - total;
    for w in out.iter_mut().rev() {
        let cut = over.min(*w);
        *w -= cut;
        over -= cut;
        if over == 0 {
            break;
        }
    }
    out
}

/// `text` cut to `width` display columns, ending with `…` when cut.
pub fn cut(text: &str, width: u16) -> String {
    let width = usize::from(width);
    if Span::raw(text).width() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    let mut utf8 = [0u8; 4];
    for c in text.chars() {
        let w = Span::raw(&*c.encode_utf8(&mut utf8)).width();
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Draws `rows` (the ones on screen) under a header line, each cell cut to its column.
/// `selected` is the index in `rows` of the selected row.
pub fn render(
    area: Rect,
    buf: &mut Buffer,
    block: Block<'_>,
    columns: &[Column],
    rows: Vec<TableRow>,
    selected: Option<usize>,
    s: &Styles,
) {
    let (header_style, selected_style) = (s.header(), s.selected());
    let inner = block.inner(area);
    let widths = widths(columns, &rows, inner.width);
    let header = Row::new(
        columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| Cell::from(header_cell(c.title, *w))),
    )
    .style(header_style);
    let rows = rows.into_iter().enumerate().map(|(i, r)| {
        let cells = r.cells.into_iter().zip(&widths).map(|(span, w)| {
            let text = cut(&span.content, *w);
            Cell::from(Span::styled(text, span.style))
        });
        let row = Row::new(cells.collect::<Vec<_>>());
        if Some(i) == selected {
            row.style(selected_style)
        } else {
            row.style(r.style)
        }
    });
    Table::new(rows, widths.iter().map(|w| Constraint::Length(*w)))
        .header(header)
        .column_spacing(SPACING)
        .block(block)
        .render(area, buf);
}

/// A column title in its width: cut with `…` when that leaves a letter of it, else its first
/// letters (a one-column verdict mark is headed `V`, not `…`).
fn header_cell(title: &str, width: u16) -> String {
    if width >= 3 {
        cut(title, width)
    } else {
        title.chars().take(usize::from(width)).collect()
    }
}

/// Under the header of a table whose filter `text` hides every row: what happened and what to do.
pub fn no_match(area: Rect, buf: &mut Buffer, text: &str, s: &Styles) {
    let inner = Block::bordered().inner(area);
    if inner.height < 2 {
        return;
    }
    let line = format!("No row contains \"{text}\". Esc clears the filter, / edits it.");
    Line::styled(cut(&line, inner.width), s.muted()).render(
        Rect {
            y: inner.y + 1,
            height: 1,
            ..inner
        },
        buf,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> TableRow {
        TableRow::new(
            cells.iter().map(|c| Span::raw(c.to_string())).collect(),
            Style::default(),
        )
    }

    const COLUMNS: [Column; 3] = [
        Column::fit("ID", 4, 20),
        Column::flex("COMMAND", 10),
        Column::fixed("STATE", 9),
    ];

    #[test]
    fn the_flexible_column_takes_the_spare_width_and_the_id_only_what_it_needs() {
        let rows = [row(&["resnet-3f9a", "python train.py", "running"])];
        assert_eq!(widths(&COLUMNS, &rows, 78), vec![11, 78 - 11 - 9 - 2, 9]);
        assert_eq!(widths(&COLUMNS, &rows, 198), vec![11, 198 - 11 - 9 - 2, 9]);
        // An id longer than the cap is cut there; the title is never cut by the fit.
        let long = [row(&["a-very-long-run-name-indeed-3f9a", "x", "y"])];
        assert_eq!(widths(&COLUMNS, &long, 78)[0], 20);
        assert_eq!(widths(&COLUMNS, &[row(&["a", "b", "c"])], 78)[0], 4);
    }

    #[test]
    fn flexible_columns_share_the_spare_width_and_the_right_gives_way_when_narrow() {
        let columns = [
            Column::flex("NAME", 4),
            Column::flex("IMAGE", 4),
            Column::fixed("UP", 5),
        ];
        assert_eq!(widths(&columns, &[], 36), vec![15, 14, 5]);
        let narrow = widths(&COLUMNS, &[row(&["resnet-3f9a", "", ""])], 25);
        assert_eq!(narrow, vec![11, 10, 2]);
        assert_eq!(narrow.iter().sum::<u16>() + 2, 25);
    }

    #[test]
    fn long_cells_end_with_an_ellipsis_and_short_ones_stay_whole() {
        assert_eq!(cut("python train.py --epochs 90", 12), "python trai…");
        assert_eq!(cut("python", 12), "python");
        assert_eq!(cut("python", 6), "python");
        assert_eq!(cut("python", 1), "…");
        assert_eq!(cut("python", 0), "");
        // Wide characters count as two columns.
        assert_eq!(cut("日本語のモデル", 7), "日本語…");
        assert_eq!(header_cell("VERDICT", 1), "V");
        assert_eq!(header_cell("VERDICT", 4), "VER…");
    }
}
