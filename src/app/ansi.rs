//! The bytes of a frame's updates for an ANSI terminal: exactly what ratatui's
//! `CrosstermBackend::draw` writes for them, pushed byte by byte into a reusable buffer instead of
//! through crossterm's commands and `core::fmt`.
//!
//! `CrosstermBackend::draw` writes every cursor move, colour change, attribute and symbol as a
//! crossterm command, each formatted through `core::fmt` (`write!` with `Display` arguments,
//! down to a `Display` for every colour): on the dashboard that was most of what a frame cost
//! after the diff. [`Encoder`] follows the same walk, in the same order and with the same state
//! (the last position written, the colours and modifiers in force), and writes the same escape
//! sequences with plain pushes and `itoa`; a property test holds it to crossterm's bytes.

use ratatui::buffer::Cell;
use ratatui::style::{Color, Modifier};

/// Turns a frame's updates into the bytes `CrosstermBackend::draw` writes for them. It keeps its
/// buffer between frames, so that a frame costs no allocation once the first has been written.
#[derive(Debug, Default)]
pub struct Encoder {
    bytes: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes for these updates (`(x, y, cell)` in the order they are to be written, as
    /// `Backend::draw` takes them), valid until the next call. As crossterm does, no colour is
    /// written when `NO_COLOR` is set (crossterm's `Colored::ansi_color_disabled_memoized`).
    pub fn encode<'a>(&mut self, updates: impl IntoIterator<Item = (u16, u16, &'a Cell)>) -> &[u8] {
        let colors = !crossterm::style::Colored::ansi_color_disabled_memoized();
        encode_into(&mut self.bytes, updates, colors);
        &self.bytes
    }
}

/// Control Sequence Introducer: every sequence here starts with it.
const CSI: &[u8] = b"\x1b[";

/// The SGR parameters of crossterm's attributes that `ModifierDiff` sets.
mod sgr {
    pub const RESET: &[u8] = b"0";
    pub const BOLD: &[u8] = b"1";
    pub const DIM: &[u8] = b"2";
    pub const ITALIC: &[u8] = b"3";
    pub const UNDERLINED: &[u8] = b"4";
    pub const SLOW_BLINK: &[u8] = b"5";
    pub const RAPID_BLINK: &[u8] = b"6";
    pub const REVERSE: &[u8] = b"7";
    pub const HIDDEN: &[u8] = b"8";
    pub const CROSSED_OUT: &[u8] = b"9";
    pub const NORMAL_INTENSITY: &[u8] = b"22";
    pub const NO_ITALIC: &[u8] = b"23";
    pub const NO_UNDERLINE: &[u8] = b"24";
    pub const NO_BLINK: &[u8] = b"25";
    pub const NO_REVERSE: &[u8] = b"27";
    pub const NO_HIDDEN: &[u8] = b"28";
    pub const NOT_CROSSED_OUT: &[u8] = b"29";
}

/// Which colour a colour parameter sets: the first digit of crossterm's `38;…`/`39` (foreground),
/// `48;…`/`49` (background) and `58;…`/`59` (underline).
#[derive(Clone, Copy)]
#[repr(u8)]
enum Layer {
    Fore = b'3',
    Back = b'4',
    Under = b'5',
}

/// `CrosstermBackend::draw` on `updates`, into `out` (cleared first); `colors` false writes the
/// colour parameters empty, as crossterm does under `NO_COLOR`.
fn encode_into<'a>(
    out: &mut Vec<u8>,
    updates: impl IntoIterator<Item = (u16, u16, &'a Cell)>,
    colors: bool,
) {
    out.clear();
    let mut fg = Color::Reset;
    let mut bg = Color::Reset;
    let mut underline = Color::Reset;
    let mut modifier = Modifier::empty();
    let mut last: Option<(u16, u16)> = None;
    for (x, y, cell) in updates {
        // `MoveTo` unless this cell is right after the last one written.
        if !matches!(last, Some((lx, ly)) if ly == y && lx.checked_add(1) == Some(x)) {
            out.extend_from_slice(CSI);
            push_number(out, u32::from(y) + 1);
            out.push(b';');
            push_number(out, u32::from(x) + 1);
            out.push(b'H');
        }
        last = Some((x, y));
        if cell.modifier != modifier {
            push_modifier_diff(out, modifier, cell.modifier);
            modifier = cell.modifier;
        }
        if cell.fg != fg || cell.bg != bg {
            // `SetColors`, both at once.
            out.extend_from_slice(CSI);
            push_color(out, Layer::Fore, cell.fg, colors);
            out.push(b';');
            push_color(out, Layer::Back, cell.bg, colors);
            out.push(b'm');
            fg = cell.fg;
            bg = cell.bg;
        }
        if cell.underline_color != underline {
            push_color_command(out, Layer::Under, cell.underline_color, colors);
            underline = cell.underline_color;
        }
        // `Print`: the symbol as it is; most are one byte (digits, letters) or three (box
        // drawing, bars, braille), copied without a call to `memcpy`. A symbol that may hold a
        // character the terminal would act on (a control, a bidi control from an image's or a
        // process's text: all are in U+0000-U+009F, U+061C or U+2000-U+207F) is cleaned first.
        match *cell.symbol().as_bytes() {
            [b] if !b.is_ascii_control() => out.push(b),
            [b0, b1, b2] if b0 != 0xE2 || b1 > 0x81 => out.extend_from_slice(&[b0, b1, b2]),
            _ => push_symbol(out, cell.symbol()),
        }
    }
    // The resets `draw` ends with, whatever the frame left in force.
    push_color_command(out, Layer::Fore, Color::Reset, colors);
    push_color_command(out, Layer::Back, Color::Reset, colors);
    push_color_command(out, Layer::Under, Color::Reset, colors);
    push_attribute(out, sgr::RESET);
}

/// `symbol` without the characters a terminal would act on
/// ([`sanitise::is_unsafe`](crate::sanitise::is_unsafe)); a symbol of nothing else is written
/// as a space, so that the terminal's cursor stays on the cell the next one is drawn after.
fn push_symbol(out: &mut Vec<u8>, symbol: &str) {
    if !symbol.chars().any(crate::sanitise::is_unsafe) {
        out.extend_from_slice(symbol.as_bytes());
        return;
    }
    let start = out.len();
    for c in symbol.chars().filter(|&c| !crate::sanitise::is_unsafe(c)) {
        let mut utf8 = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
    }
    if out.len() == start {
        out.push(b' ');
    }
}

/// `SetAttribute`: `ESC [ {sgr} m`.
fn push_attribute(out: &mut Vec<u8>, sgr: &[u8]) {
    out.extend_from_slice(CSI);
    out.extend_from_slice(sgr);
    out.push(b'm');
}

/// `SetForegroundColor`, `SetBackgroundColor` or `SetUnderlineColor`: `ESC [ {colour} m`.
fn push_color_command(out: &mut Vec<u8>, layer: Layer, color: Color, colors: bool) {
    out.extend_from_slice(CSI);
    push_color(out, layer, color, colors);
    out.push(b'm');
}

/// crossterm's `Colored` as `Display` writes it, for ratatui's colour as
/// `IntoCrossterm` maps it: `39` for the default, `38;5;{n}` for the sixteen named colours
/// (ratatui's `Red` is crossterm's `DarkRed`, index 1; `LightRed` is its `Red`, index 9) and the
/// indexed ones, `38;2;{r};{g};{b}` for RGB (with `4` or `5` first for the background and the
/// underline). Nothing at all when colours are off.
fn push_color(out: &mut Vec<u8>, layer: Layer, color: Color, colors: bool) {
    if !colors {
        return;
    }
    let first = layer as u8;
    let index = match color {
        Color::Reset => {
            out.extend_from_slice(&[first, b'9']);
            return;
        }
        Color::Rgb(r, g, b) => {
            out.extend_from_slice(&[first, b'8', b';', b'2', b';']);
            push_number(out, u32::from(r));
            out.push(b';');
            push_number(out, u32::from(g));
            out.push(b';');
            push_number(out, u32::from(b));
            return;
        }
        Color::Indexed(i) => i,
        Color::Black => 0,
        Color::Red => 1,
        Color::Green => 2,
        Color::Yellow => 3,
        Color::Blue => 4,
        Color::Magenta => 5,
        Color::Cyan => 6,
        Color::Gray => 7,
        Color::DarkGray => 8,
        Color::LightRed => 9,
        Color::LightGreen => 10,
        Color::LightYellow => 11,
        Color::LightBlue => 12,
        Color::LightMagenta => 13,
        Color::LightCyan => 14,
        Color::White => 15,
    };
    out.extend_from_slice(&[first, b'8', b';', b'5', b';']);
    push_number(out, u32::from(index));
}

/// A number in decimal, as `Display` writes it. Those of the screen (rows, columns, colour
/// components) are below 1000: their digits go in as one short array each.
fn push_number(out: &mut Vec<u8>, n: u32) {
    let digit = |d: u32| b'0' + (d % 10) as u8;
    match n {
        0..=9 => out.push(digit(n)),
        10..=99 => out.extend_from_slice(&[digit(n / 10), digit(n)]),
        100..=999 => out.extend_from_slice(&[digit(n / 100), digit(n / 10), digit(n)]),
        _ => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
    }
}

/// ratatui-crossterm's `ModifierDiff::queue`, attribute for attribute and in its order: what
/// was removed is turned off (bold and dim together, by normal intensity, then the one of them
/// that stays is set again), then what was added is turned on.
fn push_modifier_diff(out: &mut Vec<u8>, from: Modifier, to: Modifier) {
    let removed = from - to;
    if removed.contains(Modifier::REVERSED) {
        push_attribute(out, sgr::NO_REVERSE);
    }
    let reset_intensity = removed.intersects(Modifier::BOLD | Modifier::DIM);
    if reset_intensity {
        push_attribute(out, sgr::NORMAL_INTENSITY);
        if to.contains(Modifier::DIM) {
            push_attribute(out, sgr::DIM);
        }
        if to.contains(Modifier::BOLD) {
            push_attribute(out, sgr::BOLD);
        }
    }
    if removed.contains(Modifier::ITALIC) {
        push_attribute(out, sgr::NO_ITALIC);
    }
    if removed.contains(Modifier::UNDERLINED) {
        push_attribute(out, sgr::NO_UNDERLINE);
    }
    if removed.contains(Modifier::CROSSED_OUT) {
        push_attribute(out, sgr::NOT_CROSSED_OUT);
    }
    if removed.contains(Modifier::HIDDEN) {
        push_attribute(out, sgr::NO_HIDDEN);
    }
    if removed.intersects(Modifier::SLOW_BLINK | Modifier::RAPID_BLINK) {
        push_attribute(out, sgr::NO_BLINK);
    }

    let added = to - from;
    if added.contains(Modifier::REVERSED) {
        push_attribute(out, sgr::REVERSE);
    }
    if added.contains(Modifier::BOLD) && !reset_intensity {
        push_attribute(out, sgr::BOLD);
    }
    if added.contains(Modifier::ITALIC) {
        push_attribute(out, sgr::ITALIC);
    }
    if added.contains(Modifier::UNDERLINED) {
        push_attribute(out, sgr::UNDERLINED);
    }
    if added.contains(Modifier::DIM) && !reset_intensity {
        push_attribute(out, sgr::DIM);
    }
    if added.contains(Modifier::CROSSED_OUT) {
        push_attribute(out, sgr::CROSSED_OUT);
    }
    if added.contains(Modifier::HIDDEN) {
        push_attribute(out, sgr::HIDDEN);
    }
    if added.contains(Modifier::SLOW_BLINK) {
        push_attribute(out, sgr::SLOW_BLINK);
    }
    if added.contains(Modifier::RAPID_BLINK) {
        push_attribute(out, sgr::RAPID_BLINK);
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;
    use ratatui::backend::{Backend, CrosstermBackend};
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;

    use super::*;
    use crate::app::screen::{diff, Output};

    /// What `CrosstermBackend::draw` writes for the updates.
    fn crossterms(updates: &[(u16, u16, Cell)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        CrosstermBackend::new(&mut bytes)
            .draw(updates.iter().map(|(x, y, c)| (*x, *y, c)))
            .expect("a Vec takes every write");
        bytes
    }

    /// What the screen's output writes for them on the same backend: the encoder's bytes.
    fn ours(updates: &[(u16, u16, Cell)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        CrosstermBackend::new(&mut bytes)
            .draw_updates(
                updates.iter().map(|(x, y, c)| (*x, *y, c)),
                &mut Encoder::new(),
            )
            .expect("a Vec takes every write");
        bytes
    }

    /// Both, shown as text when they differ.
    fn assert_same(updates: &[(u16, u16, Cell)]) -> Result<(), TestCaseError> {
        let (ours, theirs) = (ours(updates), crossterms(updates));
        prop_assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "\nupdates: {:?}",
            updates
        );
        prop_assert_eq!(ours, theirs);
        Ok(())
    }

    /// Symbols of one byte, box drawing, bars, braille, wide characters, an emoji with VS16, a
    /// combining mark, the empty symbol after a wide character.
    const SYMBOLS: &[&str] = &[
        " ",
        "a",
        "7",
        "%",
        "·",
        "─",
        "│",
        "█",
        "▍",
        "⣿",
        "⡀",
        "⠁",
        "世",
        "コ",
        "🙂",
        "❤\u{fe0f}",
        "e\u{301}",
        "",
    ];

    /// Every variant of ratatui's colour, from a random number: the default most often, as on
    /// screen, so that runs of one style occur; then the sixteen named, indexed, RGB.
    fn color(n: u32) -> Color {
        const NAMED: [Color; 16] = [
            Color::Black,
            Color::Red,
            Color::Green,
            Color::Yellow,
            Color::Blue,
            Color::Magenta,
            Color::Cyan,
            Color::Gray,
            Color::DarkGray,
            Color::LightRed,
            Color::LightGreen,
            Color::LightYellow,
            Color::LightBlue,
            Color::LightMagenta,
            Color::LightCyan,
            Color::White,
        ];
        let [kind, r, g, b] = n.to_le_bytes();
        match kind % 10 {
            0..=3 => Color::Reset,
            4..=7 => NAMED[usize::from(r % 16)],
            8 => Color::Indexed(r),
            _ => Color::Rgb(r, g, b),
        }
    }

    /// A cell of any symbol, colours and modifiers (none most often), from random numbers:
    /// plain numbers keep a thousand frames of cells quick to make.
    fn cell() -> impl Strategy<Value = Cell> {
        (any::<u8>(), any::<(u32, u32, u32)>(), any::<u16>()).prop_map(
            |(symbol, (fg, bg, underline), modifier)| {
                let mut cell = Cell::new(SYMBOLS[usize::from(symbol) % SYMBOLS.len()]);
                cell.fg = color(fg);
                cell.bg = color(bg);
                cell.underline_color = color(underline);
                cell.modifier = if modifier % 3 == 0 {
                    Modifier::empty()
                } else {
                    Modifier::from_bits_truncate(modifier)
                };
                cell
            },
        )
    }

    fn owned<'a>(updates: impl Iterator<Item = (u16, u16, &'a Cell)>) -> Vec<(u16, u16, Cell)> {
        updates.map(|(x, y, c)| (x, y, c.clone())).collect()
    }

    proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Two frames: the second the first with some cells changed (runs of changed cells, gaps,
        /// new rows), and the updates of the diff between them, from scratch and from the first.
        #[test]
        fn the_bytes_are_crossterms_for_a_frames_updates(
            (area, before, after) in (1u16..20, 1u16..5).prop_flat_map(|(width, height)| {
                let cells = usize::from(width * height);
                (
                    Just(Rect::new(0, 0, width, height)),
                    vec(cell(), cells),
                    vec((any::<bool>(), cell()), cells),
                )
            }),
        ) {
            let mut prev = Buffer::empty(area);
            for (slot, cell) in prev.content.iter_mut().zip(&before) {
                *slot = cell.clone();
            }
            let mut next = prev.clone();
            for (slot, (change, cell)) in next.content.iter_mut().zip(&after) {
                if *change {
                    *slot = cell.clone();
                }
            }
            assert_same(&owned(diff(&prev, &next)))?;
            assert_same(&owned(diff(&Buffer::empty(area), &next)))?;
        }

        /// Updates in any order at any position, the same one twice, the last column of a
        /// row and the first of the next, positions past 255 and 9999.
        #[test]
        fn the_bytes_are_crossterms_for_any_updates(
            updates in vec(
                (prop_oneof![0u16..4, 250u16..260, 9998u16..10001, Just(u16::MAX - 1)], 0u16..4, cell()),
                0..40,
            ),
        ) {
            assert_same(&updates)?;
        }
    }

    /// A symbol carrying a control or bidi control (set on a cell directly, or a zero-width
    /// bidi control ratatui added to the cell before it) reaches the terminal without it.
    #[test]
    fn controls_in_symbols_never_reach_the_terminal() {
        for (symbol, shown) in [
            ("a\u{202e}", "a"),
            ("\u{2066}", " "),
            ("\x1b", " "),
            ("\u{9b}", " "),
            ("x\u{200f}\u{61c}", "x"),
            ("\u{2013}", "\u{2013}"),
            ("\u{2581}", "\u{2581}"),
        ] {
            let bytes = ours(&[(0, 0, Cell::new(symbol))]);
            let text = String::from_utf8(bytes).unwrap();
            let printed = text
                .strip_prefix("\x1b[1;1H")
                .and_then(|t| t.strip_suffix(END))
                .unwrap_or_else(|| panic!("{text:?}"));
            assert_eq!(printed, shown, "{symbol:?}");
        }
    }

    fn styled(symbol: &'static str, fg: Color, bg: Color, modifier: Modifier) -> Cell {
        let mut cell = Cell::new(symbol);
        cell.fg = fg;
        cell.bg = bg;
        cell.modifier = modifier;
        cell
    }

    /// The resets every frame ends with.
    const END: &str = "\x1b[39m\x1b[49m\x1b[59m\x1b[0m";

    /// Fixed cases, spelled out, and checked against crossterm as well.
    fn check(updates: &[(u16, u16, Cell)], expected: &str) {
        let expected = format!("{expected}{END}");
        assert_eq!(String::from_utf8_lossy(&ours(updates)), expected);
        assert_eq!(String::from_utf8_lossy(&crossterms(updates)), expected);
    }

    #[test]
    fn adjacent_cells_need_no_move() {
        let plain = |s| styled(s, Color::Reset, Color::Reset, Modifier::empty());
        check(
            &[(3, 1, plain("a")), (4, 1, plain("b")), (5, 1, plain("⣿"))],
            "\x1b[2;4Hab⣿",
        );
    }

    #[test]
    fn a_gap_or_a_new_line_moves_the_cursor() {
        let plain = |s| styled(s, Color::Reset, Color::Reset, Modifier::empty());
        check(
            &[
                (158, 0, plain("a")),
                (159, 0, plain("b")),
                (0, 1, plain("c")),
                (2, 1, plain("d")),
                (3, 0, plain("e")),
            ],
            "\x1b[1;159Hab\x1b[2;1Hc\x1b[2;3Hd\x1b[1;4He",
        );
    }

    #[test]
    fn a_colour_back_to_the_default_is_reset() {
        check(
            &[
                (
                    0,
                    0,
                    styled("a", Color::Red, Color::Reset, Modifier::empty()),
                ),
                (
                    1,
                    0,
                    styled("b", Color::Reset, Color::Reset, Modifier::empty()),
                ),
                (
                    2,
                    0,
                    styled("c", Color::Reset, Color::Rgb(1, 20, 255), Modifier::empty()),
                ),
                (
                    3,
                    0,
                    styled(
                        "d",
                        Color::LightCyan,
                        Color::Indexed(208),
                        Modifier::empty(),
                    ),
                ),
            ],
            "\x1b[1;1H\x1b[38;5;1;49ma\x1b[39;49mb\x1b[39;48;2;1;20;255mc\x1b[38;5;14;48;5;208md",
        );
        let mut underlined = styled("u", Color::Reset, Color::Reset, Modifier::UNDERLINED);
        underlined.underline_color = Color::Yellow;
        check(
            &[
                (0, 0, underlined),
                (
                    1,
                    0,
                    styled("v", Color::Reset, Color::Reset, Modifier::empty()),
                ),
            ],
            "\x1b[1;1H\x1b[4m\x1b[58;5;3mu\x1b[24m\x1b[59mv",
        );
    }

    #[test]
    fn a_modifier_removed_is_turned_off() {
        let bold_italic = Modifier::BOLD | Modifier::ITALIC;
        check(
            &[
                (0, 0, styled("a", Color::Reset, Color::Reset, bold_italic)),
                (
                    1,
                    0,
                    styled("b", Color::Reset, Color::Reset, Modifier::ITALIC),
                ),
                (2, 0, styled("c", Color::Reset, Color::Reset, Modifier::DIM)),
                (
                    3,
                    0,
                    styled("d", Color::Reset, Color::Reset, Modifier::REVERSED),
                ),
                (
                    4,
                    0,
                    styled("e", Color::Reset, Color::Reset, Modifier::empty()),
                ),
            ],
            // Bold off is normal intensity; dim added after it is set again there.
            "\x1b[1;1H\x1b[1m\x1b[3ma\x1b[22mb\x1b[23m\x1b[2mc\x1b[22m\x1b[7md\x1b[27me",
        );
    }

    /// Under `NO_COLOR` crossterm writes every colour parameter empty (not checked against
    /// crossterm here: that is a process-wide switch, and other tests run beside this one).
    #[test]
    fn no_colour_writes_empty_colour_parameters() {
        let updates = [(0, 0, styled("a", Color::Red, Color::Blue, Modifier::BOLD))];
        let mut bytes = Vec::new();
        encode_into(
            &mut bytes,
            updates.iter().map(|(x, y, c)| (*x, *y, c)),
            false,
        );
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            "\x1b[1;1H\x1b[1m\x1b[;ma\x1b[m\x1b[m\x1b[m\x1b[0m"
        );
    }

    #[test]
    fn the_encoder_keeps_nothing_from_the_last_frame() {
        let mut encoder = Encoder::new();
        let red = styled("a", Color::Red, Color::Reset, Modifier::BOLD);
        let first = encoder.encode([(0, 0, &red)]).to_vec();
        assert_eq!(encoder.encode([(0, 0, &red)]), first);
        assert_eq!(encoder.encode(std::iter::empty()), END.as_bytes());
    }
}
