//! The table every list tab draws with. Each column has a minimum: a fixed width, an id's
//! readable floor, a number's widest value. When the minimums do not fit, whole columns drop
//! out, the least needed first (each table says which); then ids grow to their length and the
//! flexible column (a name, an image reference, a command) takes the rest. A number is never
//! cut: its column is as wide as its widest value, or not shown. A text cell longer than its
//! column ends with `…`; an identifier (run id, image reference, container name) is cut in the
//! middle, keeping its end, where names differ (`gpudeck-2026…-crun-3`).

use std::cmp::Reverse;

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
    /// Always this wide (a state word, a size, a time); a number column grows to its widest value.
    Fixed(u16),
    /// As wide as its longest shown cell or its title, within `min..=max` (an id); on a narrow
    /// table it gives way down to [`ID_FLOOR`] before other columns drop out.
    Fit { min: u16, max: u16 },
    /// What the other columns leave, at least `min` (a name, an image reference, a command).
    Flex { min: u16 },
}

/// An id is not squeezed below this many columns (or its column's `min`, if more) while
/// other columns can drop out: `gpude…-crun-3` still tells the ranks apart.
pub const ID_FLOOR: u16 = 12;

/// What a cell longer than its column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Its start and `…` (a command, a sentence).
    End,
    /// Its start, `…` and its end (an identifier: what differs is often at the end).
    Middle,
    /// Never cut (a figure): the column is as wide as its widest cell, or drops out whole.
    Never,
}

/// A column: its title, width rule, how its cells are cut, and how much it is needed.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub title: &'static str,
    pub width: Width,
    pub cut: Cut,
    /// When the table is too narrow for every column's minimum, the column with the lowest
    /// `keep` drops out first (the rightmost first among equals).
    pub keep: u8,
}

impl Column {
    pub const fn fixed(title: &'static str, width: u16) -> Self {
        Self::new(title, Width::Fixed(width))
    }

    pub const fn fit(title: &'static str, min: u16, max: u16) -> Self {
        Self::new(title, Width::Fit { min, max })
    }

    pub const fn flex(title: &'static str, min: u16) -> Self {
        Self::new(title, Width::Flex { min })
    }

    const fn new(title: &'static str, width: Width) -> Self {
        Self {
            title,
            width,
            cut: Cut::End,
            keep: 0,
        }
    }

    /// A column of figures: never cut.
    pub const fn number(self) -> Self {
        Self {
            cut: Cut::Never,
            ..self
        }
    }

    /// A column of identifiers: cut in the middle.
    pub const fn ident(self) -> Self {
        Self {
            cut: Cut::Middle,
            ..self
        }
    }

    /// How much the column is needed: higher stays longer.
    pub const fn keep(self, keep: u8) -> Self {
        Self { keep, ..self }
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
/// `rows`, `None` for a column that drops out. Every column starts at its minimum (a number
/// column at its widest cell); while they do not fit, the column with the lowest `keep` drops
/// out; then each id grows towards its longest cell and the flexible columns share the rest.
pub fn widths(columns: &[Column], rows: &[TableRow], total: u16) -> Vec<Option<u16>> {
    let widest = |i: usize| -> u16 {
        rows.iter()
            .filter_map(|r| r.cells.get(i))
            .map(|cell| cell.width())
            .max()
            .map_or(0, |w| u16::try_from(w).unwrap_or(u16::MAX))
    };
    let title = |c: &Column| Span::raw(c.title).width() as u16;
    // (least, wanted) per column.
    let sizes: Vec<(u16, u16)> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| match (c.width, c.cut) {
            (Width::Fixed(w), Cut::Never) => {
                let w = w.max(widest(i));
                (w, w)
            }
            (Width::Fixed(w), _) => (w, w),
            (Width::Fit { min, .. }, Cut::Never) => {
                let w = min.max(widest(i)).max(title(c));
                (w, w)
            }
            (Width::Fit { min, max }, _) => {
                let want = widest(i).max(title(c)).clamp(min, max.max(min));
                (want.min(min.max(ID_FLOOR)), want)
            }
            (Width::Flex { min }, Cut::Never) => {
                let w = min.max(widest(i));
                (w, w)
            }
            (Width::Flex { min }, _) => (min, min),
        })
        .collect();
    let mut shown = vec![true; columns.len()];
    let needed = |shown: &[bool]| -> u32 {
        let n = shown.iter().filter(|s| **s).count() as u32;
        let least: u32 = sizes
            .iter()
            .zip(shown)
            .filter(|(_, s)| **s)
            .map(|((least, _), _)| u32::from(*least))
            .sum();
        least + u32::from(SPACING) * n.saturating_sub(1)
    };
    while needed(&shown) > u32::from(total) {
        let Some(drop) = (0..columns.len())
            .filter(|&i| shown[i])
            .min_by_key(|&i| (columns[i].keep, Reverse(i)))
        else {
            break;
        };
        shown[drop] = false;
    }
    let mut spare = u32::from(total).saturating_sub(needed(&shown));
    let mut out: Vec<Option<u16>> = sizes
        .iter()
        .zip(&shown)
        .map(|((least, _), s)| s.then_some(*least))
        .collect();
    // Ids towards their longest cell, left to right.
    for (i, (least, want)) in sizes.iter().enumerate() {
        if let Some(w) = out[i].as_mut() {
            let grow = u32::from(want - least).min(spare);
            *w += grow as u16;
            spare -= grow;
        }
    }
    let flex: Vec<usize> = (0..columns.len())
        .filter(|&i| shown[i] && matches!(columns[i].width, Width::Flex { .. }))
        .filter(|&i| columns[i].cut != Cut::Never)
        .collect();
    if !flex.is_empty() {
        let n = flex.len() as u32;
        for (k, &i) in flex.iter().enumerate() {
            // Shared evenly; the first flexible column takes the odd column.
            let share = spare / n + u32::from((k as u32) < spare % n);
            if let Some(w) = out[i].as_mut() {
                *w += share as u16;
            }
        }
    }
    out
}

/// Whether a character parts the pieces of an identifier (`-`, `/`, `:`, `_`, `@`, a space):
/// where a middle cut starts the end it keeps.
fn separates(c: char) -> bool {
    matches!(c, '-' | '/' | ':' | '_' | '@' | ' ')
}

fn char_width(c: char) -> usize {
    let mut utf8 = [0u8; 4];
    Span::raw(&*c.encode_utf8(&mut utf8)).width()
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
    for c in text.chars() {
        let w = char_width(c);
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// A text cell cut to `width` display columns, as [`cut`], except that a figure in it is not
/// cut short: when the cut falls inside a word (not the first) and what it keeps of that word
/// holds a digit, the word goes whole (`driver …`, not `driver 550.5…`, which reads as a
/// figure); `/home…` and a one-word cell (`svc-tra…`) keep what fits.
pub fn cut_text(text: &str, width: u16) -> String {
    let out = cut(text, width);
    let Some(kept) = out.strip_suffix('…') else {
        return out;
    };
    let start = kept
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let inside_word = text[kept.len()..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace());
    if start > 0 && inside_word && kept[start..].chars().any(|c| c.is_ascii_digit()) {
        format!("{}…", &kept[..start])
    } else {
        out
    }
}

/// `text` cut to `width` display columns in the middle: its start, `…` and its end, the end
/// (about half) starting at a separator where it has one, so `gpudeck-20261128-085030-crun-3`
/// reads `gpudeck-2026…-crun-3` in 20 columns and each rank's id stays apart from the others,
/// and `nvcr.io/nvidia/pytorch:24.05-py3` keeps its tag: `nvcr.…:24.05-py3` in 16.
pub fn cut_middle(text: &str, width: u16) -> String {
    let width = usize::from(width);
    if Span::raw(text).width() <= width {
        return text.to_string();
    }
    if width <= 2 {
        return cut(text, width as u16);
    }
    let room = width - 1;
    let chars: Vec<(char, usize)> = text.chars().map(|c| (c, char_width(c))).collect();
    // The end: the last characters filling about half the room…
    let mut tail_start = chars.len();
    let mut tail_w = 0;
    while tail_start > 0 && tail_w + chars[tail_start - 1].1 <= room.div_ceil(2) {
        tail_start -= 1;
        tail_w += chars[tail_start].1;
    }
    // …reaching back to a separator just before it (up to two thirds of the room: a tag
    // `:24.05-py3` whole), or else from its first separator on.
    let mut back = (tail_start, tail_w);
    let longer = loop {
        if tail_start >= chars.len() || separates(chars[tail_start].0) {
            break None;
        }
        if back.0 == 0 || separates(chars[back.0].0) && back.0 < tail_start {
            break (back.0 > 0).then_some(back);
        }
        let w = back.1 + chars[back.0 - 1].1;
        if w > room * 2 / 3 {
            break None;
        }
        back = (back.0 - 1, w);
    };
    if let Some((start, w)) = longer {
        (tail_start, tail_w) = (start, w);
    } else if let Some(k) =
        (tail_start..chars.len().saturating_sub(1)).find(|&k| separates(chars[k].0))
    {
        tail_w -= chars[tail_start..k].iter().map(|(_, w)| w).sum::<usize>();
        tail_start = k;
    }
    let mut out = String::new();
    let mut used = 0;
    for &(c, w) in &chars[..tail_start] {
        if used + w > room - tail_w {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out.extend(chars[tail_start..].iter().map(|(c, _)| c));
    out
}

/// A cell's text in a column `width` wide, cut as the column says (a number is never cut: its
/// column is as wide as it).
pub fn fit_cell(text: &str, column: &Column, width: u16) -> String {
    match column.cut {
        Cut::End => cut_text(text, width),
        Cut::Middle => cut_middle(text, width),
        Cut::Never => text.to_string(),
    }
}

/// Draws `rows` (the ones on screen) under a header line, each cell cut to its column; columns
/// that do not fit are left out. `selected` is the index in `rows` of the selected row.
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
    let shown: Vec<(usize, u16)> = widths
        .iter()
        .enumerate()
        .filter_map(|(i, w)| w.map(|w| (i, w)))
        .collect();
    let header = Row::new(
        shown
            .iter()
            .map(|&(i, w)| Cell::from(header_cell(columns[i].title, w))),
    )
    .style(header_style);
    let rows = rows.into_iter().enumerate().map(|(n, r)| {
        let cells = shown.iter().map(|&(i, w)| {
            let span = r.cells.get(i).cloned().unwrap_or_default();
            let text = fit_cell(&span.content, &columns[i], w);
            Cell::from(Span::styled(text, span.style))
        });
        let row = Row::new(cells.collect::<Vec<_>>());
        if Some(n) == selected {
            row.style(selected_style)
        } else {
            row.style(r.style)
        }
    });
    Table::new(rows, shown.iter().map(|&(_, w)| Constraint::Length(w)))
        .header(header)
        .column_spacing(SPACING)
        .block(block)
        .render(area, buf);
}

/// A column title in its width: cut with `…` when that leaves a letter of it, else its first
/// letters (a one-column verdict mark is headed `V`, not `…`).
pub fn header_cell(title: &str, width: u16) -> String {
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
    use proptest::prelude::*;

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

    fn shown(widths: &[Option<u16>]) -> Vec<u16> {
        widths.iter().flatten().copied().collect()
    }

    #[test]
    fn the_flexible_column_takes_the_spare_width_and_the_id_only_what_it_needs() {
        let rows = [row(&["resnet-3f9a", "python train.py", "running"])];
        assert_eq!(
            widths(&COLUMNS, &rows, 78),
            vec![Some(11), Some(78 - 11 - 9 - 2), Some(9)]
        );
        assert_eq!(
            widths(&COLUMNS, &rows, 198),
            vec![Some(11), Some(198 - 11 - 9 - 2), Some(9)]
        );
        // An id longer than the cap is cut there; the title is never cut by the fit.
        let long = [row(&["a-very-long-run-name-indeed-3f9a", "x", "y"])];
        assert_eq!(widths(&COLUMNS, &long, 78)[0], Some(20));
        assert_eq!(widths(&COLUMNS, &[row(&["a", "b", "c"])], 78)[0], Some(4));
        // Where the minimums just fit, every column is at its minimum; one column less and the
        // rightmost of the equally needed drops out, whole.
        assert_eq!(
            widths(&COLUMNS, &rows, 32),
            vec![Some(11), Some(10), Some(9)]
        );
        assert_eq!(widths(&COLUMNS, &rows, 31), vec![Some(11), Some(19), None]);
        // A long id gives way down to the floor before a column drops; above it, it grows
        // before the command does.
        assert_eq!(shown(&widths(&COLUMNS, &long, 33)), vec![12, 10, 9]);
        assert_eq!(shown(&widths(&COLUMNS, &long, 40)), vec![19, 10, 9]);
    }

    #[test]
    fn flexible_columns_share_the_spare_width() {
        let columns = [
            Column::flex("NAME", 4),
            Column::flex("IMAGE", 4),
            Column::fixed("UP", 5),
        ];
        assert_eq!(shown(&widths(&columns, &[], 36)), vec![15, 14, 5]);
    }

    #[test]
    fn whole_columns_drop_out_least_needed_first_and_numbers_are_as_wide_as_their_widest() {
        let columns = [
            Column::fixed("PID", 7).number().keep(9),
            Column::fixed("USER", 8).keep(3),
            Column::fixed("MEM", 6).number().keep(8),
            Column::fixed("CPU%", 4).number().keep(2),
            Column::fixed("TYPE", 4).keep(2),
            Column::flex("COMMAND", 8).keep(5),
        ];
        let rows = [row(&["12", "alice", "143771MiB", "3%", "C", "python"])];
        // Memory is 9 wide although its column says 6: it is never cut.
        let all = 7 + 8 + 9 + 4 + 4 + 8 + 5;
        assert_eq!(
            widths(&columns, &rows, all),
            vec![Some(7), Some(8), Some(9), Some(4), Some(4), Some(8)]
        );
        // One column short: TYPE goes (the rightmost of the two least needed), then CPU%,
        // then USER, then COMMAND; PID and memory stay whole to the last.
        let w = widths(&columns, &rows, all - 1);
        assert_eq!(w[4], None);
        assert_eq!(w[5], Some(8 + 4), "the command takes what TYPE left");
        assert_eq!(
            widths(&columns, &rows, all - 6)[3..5],
            [None, None],
            "CPU% next"
        );
        let w = widths(&columns, &rows, 7 + 1 + 9 + 1 + 8);
        assert_eq!(w, vec![Some(7), None, Some(9), None, None, Some(8)]);
        let w = widths(&columns, &rows, 7 + 1 + 9);
        assert_eq!(w, vec![Some(7), None, Some(9), None, None, None]);
        assert_eq!(widths(&columns, &rows, 16)[2], None, "never 7MiB");
        assert_eq!(widths(&columns, &rows, 6), vec![None; 6]);
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

    #[test]
    fn a_text_cell_never_shows_part_of_a_figure_after_its_first_word() {
        assert_eq!(
            cut_text("driver 550.54.15 supports CUDA 12.4", 13),
            "driver …",
            "not driver 550.5…"
        );
        assert_eq!(
            cut("driver 550.54.15 supports CUDA 12.4", 13),
            "driver 550.5…"
        );
        assert_eq!(
            cut_text("python train.py --epochs 90", 26),
            "python train.py --epochs …"
        );
        assert_eq!(
            cut_text("python train.py --lr 0.0003", 26),
            "python train.py --lr …"
        );
        assert_eq!(
            cut_text("python -m ipykernel -f /home/carol/kernel-1.json", 28),
            "python -m ipykernel -f /hom…",
            "no digit kept: the path stays"
        );
        assert_eq!(cut_text("H100 is fine", 3), "H1…");
        assert_eq!(cut_text("svc-train01", 8), "svc-tra…");
        assert_eq!(cut_text("bert-00aa finetune", 14), "bert-00aa fin…");
        assert_eq!(cut_text("short", 9), "short");
    }

    #[test]
    fn identifiers_are_cut_in_the_middle_keeping_the_end_that_differs() {
        assert_eq!(
            cut_middle("gpudeck-20261128-085030-crun-3", 20),
            "gpudeck-2026…-crun-3"
        );
        assert_eq!(
            cut_middle("gpudeck-20261128-085030-crun-12", 20),
            "gpudeck-202…-crun-12"
        );
        assert_eq!(
            cut_middle("127.0.0.1:5072/pytorch:24.05-py3", 22),
            "127.0.0.1:5…:24.05-py3"
        );
        // The tag whole, though longer than half: what tells the images apart.
        assert_eq!(
            cut_middle("nvcr.io/nvidia/pytorch:24.05-py3", 16),
            "nvcr.…:24.05-py3"
        );
        // No separator in the end: about half of each side.
        assert_eq!(cut_middle("abcdefghijklmnop", 9), "abcd…mnop");
        assert_eq!(cut_middle("short", 5), "short");
        assert_eq!(cut_middle("short", 2), "s…");
        assert_eq!(cut_middle("short", 1), "…");
        assert_eq!(cut_middle("short", 0), "");
        assert_eq!(cut_middle("日本語のモデル名", 9), "日本…ル名");
    }

    proptest! {
        #[test]
        fn cuts_fit_their_width_and_show_a_true_start_and_end(
            text in "[a-z0-9:/._ -]{0,40}|[日本語a-z-]{0,20}",
            width in 0u16..45,
        ) {
            let cuts = [
                (cut(&text, width), false),
                (cut_text(&text, width), false),
                (cut_middle(&text, width), true),
            ];
            for (cutted, middle) in cuts {
                prop_assert!(Span::raw(&cutted).width() <= usize::from(width), "{cutted:?}");
                if Span::raw(&text).width() <= usize::from(width) {
                    prop_assert_eq!(&cutted, &text);
                    continue;
                }
                prop_assert_eq!(cutted.matches('…').count(), usize::from(width > 0));
                let (start, end) = cutted.split_once('…').unwrap_or(("", ""));
                prop_assert!(text.starts_with(start), "{cutted:?} of {text:?}");
                if middle {
                    prop_assert!(text.ends_with(end), "{cutted:?} of {text:?}");
                    prop_assert!(start.len() + end.len() < text.len());
                } else {
                    prop_assert_eq!(end, "");
                }
            }
        }
    }
}
