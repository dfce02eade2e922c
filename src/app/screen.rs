//! The screen the dashboard draws on: the frame on screen and the one being drawn, and what goes
//! to the terminal between them, as ratatui's `Terminal` does it, with a cheaper diff.
//!
//! `Terminal::draw` compares every cell of the new frame with the last one through
//! `Buffer::diff`, which works out the display width of every cell's symbol first, a Unicode
//! table walk for each box-drawing, bar, braille or dot character; at 160x50 that was the
//! largest cost of a frame. [`diff`] yields the same updates, in the same order, and looks up a
//! width only where ratatui's rules need one, with a short cut for the one-cell characters the
//! screens are made of. [`Screen`] is the rest of `Terminal`'s full-screen drawing around it:
//! resizing with a clear and a full redraw, a hidden cursor, one flush per frame. The updates
//! reach the backend through [`Output`]: a crossterm terminal gets them as the bytes of
//! [`ansi::Encoder`](super::ansi::Encoder), the same bytes `CrosstermBackend::draw` would write,
//! made without `core::fmt`.

use std::io::Write;

use ratatui::backend::{Backend, ClearType, CrosstermBackend, TestBackend};
use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::layout::{Rect, Size};
use ratatui::style::{Color, Modifier};

use super::ansi::Encoder;

/// A backend a frame's updates are written to. `draw_updates` writes what `Backend::draw` would
/// for them; a backend may write them its own, cheaper way. The screen lends it an [`Encoder`],
/// kept from frame to frame, for a backend that writes bytes.
pub trait Output: Backend {
    fn draw_updates<'a>(
        &mut self,
        updates: impl Iterator<Item = (u16, u16, &'a Cell)>,
        encoder: &mut Encoder,
    ) -> Result<(), Self::Error>;
}

/// The dashboard's terminal: the encoder's bytes, in one write to the backend's writer (the
/// dashboard's `BufWriter`, which reaches the terminal when the frame ends, as before).
impl<W: Write> Output for CrosstermBackend<W> {
    fn draw_updates<'a>(
        &mut self,
        updates: impl Iterator<Item = (u16, u16, &'a Cell)>,
        encoder: &mut Encoder,
    ) -> std::io::Result<()> {
        self.write_all(encoder.encode(updates))
    }
}

/// The tests' backend: its own `draw`, which keeps the cells it is given.
impl Output for TestBackend {
    fn draw_updates<'a>(
        &mut self,
        updates: impl Iterator<Item = (u16, u16, &'a Cell)>,
        _: &mut Encoder,
    ) -> Result<(), Self::Error> {
        self.draw(updates)
    }
}

/// A terminal drawn in full screen, frame by frame.
pub struct Screen<B: Backend> {
    backend: B,
    /// What the crossterm backend's frames are encoded into, kept between frames.
    encoder: Encoder,
    /// The frame being drawn; empty between frames.
    next: Buffer,
    /// The frame on screen.
    shown: Buffer,
    /// The terminal's size when the last frame was drawn.
    area: Rect,
}

impl<B: Backend> Screen<B> {
    /// A screen of the backend's size, taken to be blank: the first frame is drawn in full.
    pub fn new(backend: B) -> Result<Self, B::Error> {
        let area = Rect::from(backend.size()?);
        Ok(Self {
            backend,
            encoder: Encoder::new(),
            next: Buffer::empty(area),
            shown: Buffer::empty(area),
            area,
        })
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// The terminal's size now (asked of the terminal, not remembered).
    pub fn size(&self) -> Result<Size, B::Error> {
        self.backend.size()
    }
}

impl<B: Output> Screen<B> {
    /// Draws one frame: `render` fills the whole area, given empty, and only the cells that
    /// changed since the last frame are written; the cursor stays hidden. A terminal whose size
    /// changed is cleared first and drawn in full, as `Terminal::draw` does.
    pub fn draw(&mut self, render: impl FnOnce(Rect, &mut Buffer)) -> Result<(), B::Error> {
        self.fit()?;
        render(self.area, &mut self.next);
        self.backend
            .draw_updates(diff(&self.shown, &self.next), &mut self.encoder)?;
        self.backend.hide_cursor()?;
        std::mem::swap(&mut self.next, &mut self.shown);
        self.next.reset();
        self.backend.flush()
    }

    /// Follows the terminal's size: on a change, both frames take the new size and the screen is
    /// cleared, so that nothing of the old layout stays and the next frame is drawn in full.
    fn fit(&mut self) -> Result<(), B::Error> {
        let area = Rect::from(self.backend.size()?);
        if area != self.area {
            self.next.resize(area);
            self.shown.resize(area);
            self.area = area;
            self.backend.clear_region(ClearType::All)?;
            self.shown.reset();
        }
        Ok(())
    }
}

/// The cells of `next` to write over a screen showing `prev`, with their positions: exactly the
/// updates of `prev.diff(next)` (ratatui's `Buffer::diff`), in the same order.
///
/// # Panics
///
/// If the buffers differ in `x`, `y` or width, as `Buffer::diff` does.
pub fn diff<'prev, 'next>(prev: &'prev Buffer, next: &'next Buffer) -> Diff<'prev, 'next> {
    assert!(
        prev.area.x == next.area.x
            && prev.area.y == next.area.y
            && prev.area.width == next.area.width,
        "buffer areas must have the same x, y, and width: prev={:?}, next={:?}",
        prev.area,
        next.area,
    );
    Diff {
        next: &next.content,
        prev: &prev.content,
        len: next.content.len().min(prev.content.len()),
        area: prev.area,
        pos: 0,
        trailing: None,
    }
}

/// The updates from one frame to the next, in screen order; see [`diff`].
///
/// The walk is ratatui's `BufferDiff`, rule for rule: a wide character covers the columns after
/// it, a wide character replaced by narrower content whose style shows on blanks has its old
/// columns written again, an emoji with VS16 has its trailing columns checked, skipped cells are
/// never written. What differs is when widths are found: only for cells that matter (a changed
/// cell, and an unchanged one when it might be wide), and without the Unicode tables for a
/// symbol of one byte or one character known to take one cell.
#[derive(Debug)]
pub struct Diff<'prev, 'next> {
    next: &'next [Cell],
    prev: &'prev [Cell],
    len: usize,
    area: Rect,
    pos: usize,
    trailing: Option<Trailing>,
}

/// Cells after a wide character still to be looked at before the walk goes on.
#[derive(Debug)]
struct Trailing {
    next_index: usize,
    end: usize,
    /// Write every one of them (the old wide character's style showed on blanks), rather than
    /// only those whose symbol changed (behind an emoji with VS16).
    force: bool,
}

/// Modifiers that show on a blank cell (ratatui's list).
const VISIBLE_ON_BLANK: Modifier = Modifier::REVERSED
    .union(Modifier::UNDERLINED)
    .union(Modifier::SLOW_BLINK)
    .union(Modifier::RAPID_BLINK)
    .union(Modifier::CROSSED_OUT);

impl Diff<'_, '_> {
    fn pos_of(&self, index: usize) -> (u16, u16) {
        let w = usize::from(self.area.width);
        // Both fit in u16: the index is inside a buffer whose area does.
        let x = index % w + usize::from(self.area.x);
        let y = index / w + usize::from(self.area.y);
        (x as u16, y as u16)
    }
}

impl<'next> Iterator for Diff<'_, 'next> {
    type Item = (u16, u16, &'next Cell);

    fn next(&mut self) -> Option<Self::Item> {
        let (next, prev, len) = (self.next, self.prev, self.len);
        if let Some(t) = &mut self.trailing {
            while t.next_index < t.end {
                let j = t.next_index;
                // Past the end only after a wide character in the last column, where ratatui's
                // diff indexes out of bounds: nothing is left to write there.
                if j >= next.len() {
                    t.end = j;
                    break;
                }
                t.next_index += width(&next[j]).max(1);
                t.end = t.end.max(t.next_index).min(len);
                if !is_skip(&next[j]) && (t.force || prev[j].symbol() != next[j].symbol()) {
                    let (x, y) = self.pos_of(j);
                    return Some((x, y, &next[j]));
                }
            }
            self.pos = t.end;
            self.trailing = None;
        }
        while self.pos < len {
            let i = unchanged_until(&next[..len], &prev[..len], self.pos);
            if i >= len {
                self.pos = i;
                break;
            }
            self.pos = i + 1;
            let current = &next[i];
            let previous = &prev[i];
            match current.diff_option {
                CellDiffOption::Skip => {}
                _ if is_skip(current) => {}
                CellDiffOption::ForcedWidth(w) => {
                    self.pos = self.pos.saturating_add(usize::from(w.get() - 1));
                    if current != previous {
                        let (x, y) = self.pos_of(i);
                        return Some((x, y, current));
                    }
                }
                // An unchanged cell without an option was passed over above: this one changed,
                // or is to be written whether it changed or not.
                CellDiffOption::None | CellDiffOption::AlwaysUpdate => {
                    let cell_width = width(current);
                    if cell_width > 1 && current.symbol().contains('\u{FE0F}') {
                        self.trailing = Some(Trailing {
                            next_index: i + 1,
                            end: (i + cell_width).min(len),
                            force: false,
                        });
                    } else if cell_width > 1 {
                        self.pos += cell_width - 1;
                    } else if (previous.bg != Color::Reset
                        || previous.modifier.intersects(VISIBLE_ON_BLANK))
                        && width(previous) > cell_width
                    {
                        self.trailing = Some(Trailing {
                            next_index: i + 1,
                            end: i + width(previous),
                            force: true,
                        });
                    }
                    let (x, y) = self.pos_of(i);
                    return Some((x, y, current));
                }
            }
        }
        None
    }
}

/// The first cell from `from` on that the walk must look at. The cells before it are unchanged
/// and have no diff option, and the walk passes over each of them and over the columns an
/// unchanged wide character covers: most of a frame, so this is the loop that costs.
fn unchanged_until(next: &[Cell], prev: &[Cell], from: usize) -> usize {
    let len = next.len().min(prev.len());
    let (next, prev) = (&next[..len], &prev[..len]);
    let mut i = from;
    while i < len {
        let (current, previous) = (&next[i], &prev[i]);
        #[allow(deprecated)]
        if current.diff_option != CellDiffOption::None || current.skip {
            return i;
        }
        let symbol = current.symbol();
        if !same(current, symbol, previous) {
            return i;
        }
        i += match symbol.as_bytes() {
            [_] => 1,
            // One character of two bytes (up to U+07FF) is never wide.
            [0xC2..=0xDF, _] => 1,
            _ => symbol_width(symbol).max(1),
        };
    }
    i
}

/// `a == b`, `Cell`'s own equality, field by field (the symbols as ratatui compares them: no
/// symbol is a space), given `a`'s symbol; the short symbols of the screens are compared
/// without a call to `memcmp`.
#[allow(deprecated)]
#[inline(always)]
fn same(a: &Cell, a_symbol: &str, b: &Cell) -> bool {
    a.fg == b.fg
        && a.bg == b.bg
        && a.modifier == b.modifier
        && a.underline_color == b.underline_color
        && a.diff_option == b.diff_option
        && a.skip == b.skip
        && same_symbol(a_symbol.as_bytes(), b.symbol().as_bytes())
}

#[inline(always)]
fn same_symbol(a: &[u8], b: &[u8]) -> bool {
    match (a, b) {
        ([a], [b]) => a == b,
        ([a0, a1, a2], [b0, b1, b2]) => a0 == b0 && a1 == b1 && a2 == b2,
        _ => a == b,
    }
}

/// Whether the diff passes over a cell (ratatui's rule, the deprecated `skip` flag included).
#[allow(deprecated)]
fn is_skip(cell: &Cell) -> bool {
    matches!(cell.diff_option, CellDiffOption::Skip)
        || (cell.skip && matches!(cell.diff_option, CellDiffOption::None))
}

/// The columns a cell takes, as `Cell::cell_width` says.
fn width(cell: &Cell) -> usize {
    match cell.diff_option {
        CellDiffOption::ForcedWidth(w) => usize::from(w.get()),
        _ => symbol_width(cell.symbol()),
    }
}

/// The columns a symbol takes, as `str::cell_width` says: one byte is one column there too, and
/// a lone character of [`one_column`] needs no table.
fn symbol_width(symbol: &str) -> usize {
    if symbol.len() == 1 {
        return 1;
    }
    let mut chars = symbol.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        if one_column(c) {
            return 1;
        }
    }
    usize::from(symbol.cell_width())
}

/// Characters that take one column on their own, by ratatui's measure (a test checks each one
/// against it): Latin-1 letters and signs, Latin extensions, dashes, quotes, bullets and
/// ellipses, arrows, box drawing, blocks, the geometric shapes but the two emoji among them,
/// and braille: what borders, bars, sparklines and charts are drawn with.
fn one_column(c: char) -> bool {
    matches!(
        u32::from(c),
        0xA0..=0xAC
            | 0xAE..=0x2FF
            | 0x2010..=0x2027
            | 0x2030..=0x205E
            | 0x2190..=0x21FF
            | 0x2500..=0x25FC
            | 0x25FF
            | 0x2800..=0x28FF
    )
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU16;

    use proptest::collection::vec;
    use proptest::prelude::*;
    use ratatui::backend::TestBackend;
    use ratatui::style::Style;

    use super::*;

    #[test]
    fn one_column_characters_take_one_column_by_ratatuis_measure() {
        let mut checked = 0;
        for c in (0..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|&c| one_column(c))
        {
            let s = c.to_string();
            assert_eq!(s.as_str().cell_width(), 1, "{c:?} (U+{:04X})", u32::from(c));
            assert_eq!(symbol_width(&s), 1);
            checked += 1;
        }
        assert_eq!(checked, 1300, "every character of the ranges");
        for s in [
            "世",
            "🙂",
            "e\u{301}",
            "\u{301}",
            "",
            "⌚",
            "\u{2764}\u{fe0f}",
            "ｶﾞ",
            "◽",
        ] {
            assert_eq!(symbol_width(s), usize::from(s.cell_width()), "{s:?}");
        }
    }

    /// Symbols of every kind the diff treats apart: one byte, one character of one column
    /// (with and without the short cut), wide, emoji with VS16, combining marks alone and after
    /// a letter, empty, halfwidth sound marks, more than one grapheme.
    const SYMBOLS: &[&str] = &[
        " ",
        "a",
        "Z",
        "0",
        "·",
        "…",
        "─",
        "│",
        "┌",
        "█",
        "▍",
        "⣿",
        "⡀",
        "▶",
        "↓",
        "é",
        "世",
        "界",
        "コ",
        "🙂",
        "❤\u{fe0f}",
        "👍\u{fe0f}",
        "e\u{301}",
        "\u{301}",
        "",
        "ｶ",
        "ﾞ",
        "⌚",
        "◽",
        "ab",
    ];

    const COLORS: &[Color] = &[
        Color::Reset,
        Color::Red,
        Color::Blue,
        Color::Indexed(8),
        Color::Rgb(10, 20, 30),
    ];

    const MODIFIERS: &[Modifier] = &[
        Modifier::empty(),
        Modifier::BOLD,
        Modifier::REVERSED,
        Modifier::UNDERLINED,
        Modifier::DIM,
        Modifier::CROSSED_OUT,
    ];

    /// One thing drawn on a buffer.
    #[derive(Clone, Debug)]
    struct Stroke {
        x: u16,
        y: u16,
        symbols: Vec<usize>,
        fg: usize,
        bg: usize,
        modifier: usize,
        /// 0..=6: a string, as widgets draw (a wide character blanks the columns it covers);
        /// 7..=8: one cell set to one symbol, as a chart or fastline does; 9: a diff option or
        /// the `skip` flag on a cell.
        kind: u8,
    }

    fn stroke() -> impl Strategy<Value = Stroke> {
        (
            (0u16..20, 0u16..8),
            vec(0..SYMBOLS.len(), 0..6),
            (0..COLORS.len(), 0..COLORS.len(), 0..MODIFIERS.len()),
            0u8..10,
        )
            .prop_map(|((x, y), symbols, (fg, bg, modifier), kind)| Stroke {
                x,
                y,
                symbols,
                fg,
                bg,
                modifier,
                kind,
            })
    }

    /// Draws the strokes as ratatui expects of a buffer (its diff indexes out of bounds on a
    /// character wider than the room left in its row: no widget draws one there; see
    /// `a_wide_character_in_the_last_column_ends_the_diff`).
    fn paint(buf: &mut Buffer, strokes: &[Stroke]) {
        let area = buf.area;
        for s in strokes {
            let x = area.x + s.x % area.width;
            let room = usize::from(area.right() - x);
            let y = area.y + s.y % area.height;
            let style = Style::default()
                .fg(COLORS[s.fg])
                .bg(COLORS[s.bg])
                .add_modifier(MODIFIERS[s.modifier]);
            let first = s.symbols.first().copied().unwrap_or(0);
            match s.kind {
                0..=6 => {
                    let text: String = s.symbols.iter().map(|&i| SYMBOLS[i]).collect();
                    buf.set_string(x, y, text, style);
                }
                7 | 8 if SYMBOLS[first].cell_width() as usize <= room => {
                    buf[(x, y)].set_symbol(SYMBOLS[first]).set_style(style);
                }
                7 | 8 => {}
                _ => {
                    let option = match first % 5 {
                        0 => CellDiffOption::Skip,
                        1 => CellDiffOption::AlwaysUpdate,
                        2 if room >= 2 => {
                            CellDiffOption::ForcedWidth(NonZeroU16::new(2).expect("2"))
                        }
                        3 => CellDiffOption::ForcedWidth(NonZeroU16::new(1).expect("1")),
                        _ => CellDiffOption::None,
                    };
                    #[allow(deprecated)]
                    if s.fg == 0 {
                        buf[(x, y)].set_skip(true);
                    } else {
                        buf[(x, y)].set_diff_option(option);
                    }
                }
            }
        }
    }

    fn owned<'a>(updates: impl Iterator<Item = (u16, u16, &'a Cell)>) -> Vec<(u16, u16, Cell)> {
        updates.map(|(x, y, c)| (x, y, c.clone())).collect()
    }

    fn same_updates(prev: &Buffer, next: &Buffer) -> Result<(), TestCaseError> {
        let theirs = owned(prev.diff(next).into_iter());
        let ours = owned(diff(prev, next));
        prop_assert_eq!(ours, theirs, "\nprev: {:?}\nnext: {:?}", prev, next);
        Ok(())
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Two frames of the same width: the second drawn from scratch or over the first (most
        /// frames change a little), with the same number of rows or not; each way round, and
        /// each against itself and a blank screen.
        #[test]
        fn the_updates_are_those_of_ratatuis_diff(
            (x, y, width, height) in (0u16..3, 0u16..3, 1u16..16, 1u16..6),
            next_height in prop_oneof![3 => Just(None), 1 => (1u16..7).prop_map(Some)],
            over in any::<bool>(),
            before in vec(stroke(), 0..24),
            after in vec(stroke(), 0..24),
        ) {
            let area = Rect::new(x, y, width, height);
            let mut prev = Buffer::empty(area);
            paint(&mut prev, &before);
            let next_area = Rect { height: next_height.unwrap_or(height), ..area };
            let mut next = if over { prev.clone() } else { Buffer::empty(next_area) };
            next.resize(next_area);
            paint(&mut next, &after);
            for (a, b) in next.content.iter().zip(&prev.content) {
                prop_assert_eq!(same(a, a.symbol(), b), a == b, "{:?} and {:?}", a, b);
            }
            same_updates(&prev, &next)?;
            same_updates(&next, &prev)?;
            same_updates(&prev, &prev)?;
            same_updates(&Buffer::empty(next_area), &next)?;
        }
    }

    #[test]
    fn wide_characters_follow_ratatuis_rules() {
        let cases: &[(&[&str], &[&str], Style, Style)] = &[
            // A wide character replaced by narrow ones, and the other way.
            (&["コ", ""], &["a", "a"], Style::default(), Style::default()),
            (&["a", " "], &["コ", ""], Style::default(), Style::default()),
            // Its style showed on blanks: the column it covered is written again.
            (
                &["コ", " ", "x"],
                &["a", " ", "x"],
                Style::default().bg(Color::Red),
                Style::default(),
            ),
            (
                &["コ", " ", "x"],
                &["a", " ", "x"],
                Style::default().add_modifier(Modifier::UNDERLINED),
                Style::default(),
            ),
            // An emoji with VS16: its trailing column is checked.
            (
                &["a", "b", "c"],
                &["❤\u{fe0f}", "", "c"],
                Style::default(),
                Style::default(),
            ),
            (
                &["a", "b", "c"],
                &["❤\u{fe0f}", "b", "c"],
                Style::default(),
                Style::default(),
            ),
            // Unchanged wide characters cover what follows them.
            (
                &["世", "x", "y"],
                &["世", "z", "y"],
                Style::default(),
                Style::default(),
            ),
        ];
        for (before, after, old, new) in cases {
            let area = Rect::new(0, 0, before.len() as u16, 1);
            let mut prev = Buffer::empty(area);
            let mut next = Buffer::empty(area);
            for (x, (b, a)) in before.iter().zip(after.iter()).enumerate() {
                prev[(x as u16, 0)].set_symbol(b).set_style(*old);
                next[(x as u16, 0)].set_symbol(a).set_style(*new);
            }
            let theirs = owned(prev.diff(&next).into_iter());
            assert_eq!(owned(diff(&prev, &next)), theirs, "{before:?} -> {after:?}");
        }
    }

    #[test]
    fn a_wide_character_in_the_last_column_ends_the_diff() {
        // Drawn one cell at a time, a wide character can end up in the last column; replaced
        // by a narrow one, ratatui's diff looks for the column after it and indexes past the
        // end of the buffer. This one writes the new character and stops.
        let area = Rect::new(0, 0, 3, 1);
        let mut prev = Buffer::empty(area);
        prev[(2, 0)].set_symbol("世").set_bg(Color::Blue);
        let mut next = Buffer::empty(area);
        next[(0, 0)].set_symbol("a");
        next[(2, 0)].set_symbol("b");
        let updates: Vec<_> = diff(&prev, &next)
            .map(|(x, y, c)| (x, y, c.symbol()))
            .collect();
        assert_eq!(updates, [(0, 0, "a"), (2, 0, "b")]);
    }

    fn screen_text(backend: &TestBackend) -> String {
        let buf = backend.buffer();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What a `Terminal` on the same backend shows after the same frames.
    #[test]
    fn frames_reach_the_terminal_as_through_ratatuis_terminal() {
        let frames: [(&str, Style); 3] = [
            ("GPU 0 ▕████▍  ▏ 47%", Style::default().fg(Color::Green)),
            ("GPU 0 ▕██▍    ▏ 23% 世界", Style::default().bg(Color::Blue)),
            ("", Style::default()),
        ];
        let mut ours = Screen::new(TestBackend::new(24, 3)).expect("screen");
        let mut theirs = ratatui::Terminal::new(TestBackend::new(24, 3)).expect("terminal");
        for (i, (text, style)) in frames.iter().enumerate() {
            let paint = |area: Rect, buf: &mut Buffer| {
                buf.set_string(area.x, area.y + (i as u16 % area.height), text, *style);
                buf.set_string(
                    area.x,
                    area.bottom() - 1,
                    format!("frame {i}"),
                    Style::default(),
                );
            };
            ours.draw(paint).expect("draw");
            theirs
                .draw(|f| paint(f.area(), f.buffer_mut()))
                .expect("draw");
            assert_eq!(
                ours.backend().buffer(),
                theirs.backend().buffer(),
                "frame {i}"
            );
            if i == 1 {
                // A resize between frames: cleared and drawn in full at the new size.
                ours.backend_mut().resize(30, 4);
                theirs.backend_mut().resize(30, 4);
            }
        }
        assert_eq!(ours.size().expect("size"), Size::new(30, 4));
        assert_eq!(screen_text(ours.backend()), screen_text(theirs.backend()));
        assert!(!ours.backend().cursor_visible(), "the cursor is hidden");
    }
}
