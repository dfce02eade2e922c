//! Drawing what the GPUs tab redraws every second as ratatui's widgets draw it, cell for cell,
//! for less: a line of text (aligned as it says, or as the caller says, for the charts' labels)
//! without grapheme segmentation where no character needs it (the GPU rows are nearly all ASCII,
//! bars and sparklines, each character one cell; anything else is handed to `Line` itself) nor
//! restyling its row when its style is the default one, and a bordered box without restyling
//! every cell inside it.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::symbols::border;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthChar;

/// Draws `line` in the first row of `area`, cell for cell as `line.render(area, buf)` would.
pub fn render(line: &Line<'_>, area: Rect, buf: &mut Buffer) {
    if !simple(line) {
        line.render(area, buf);
        return;
    }
    render_simple(line, area, buf, line.alignment.unwrap_or_default());
}

/// Draws `line` in the first row of `area` aligned as `alignment` says, whatever its own
/// alignment, cell for cell as `line.clone().alignment(alignment).render(area, buf)` would (as
/// `Chart` draws its axis labels).
pub fn render_aligned(line: &Line<'_>, area: Rect, buf: &mut Buffer, alignment: Alignment) {
    if !simple(line) {
        line.clone().alignment(alignment).render(area, buf);
        return;
    }
    render_simple(line, area, buf, alignment);
}

/// Whether every character of the line takes a cell of its own (see `one_cell`), so that its
/// width is its number of characters and each is drawn with one `set_char`.
fn simple(line: &Line<'_>) -> bool {
    line.spans.iter().all(|s| s.content.chars().all(one_cell))
}

/// `Line::render` for a line of one-cell characters: the line's style over the whole row of the
/// area, then the characters, indented by the alignment where the line fits and cut on the left
/// by it where it does not (the right is cut by the area).
fn render_simple(line: &Line<'_>, area: Rect, buf: &mut Buffer, alignment: Alignment) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let width: usize = line.spans.iter().map(|s| s.content.chars().count()).sum();
    if width == 0 {
        return;
    }
    let area = Rect { height: 1, ..area };
    // A default style changes no cell: `set_style` would walk the row for nothing.
    if line.style != Style::default() {
        buf.set_style(area, line.style);
    }
    let room = usize::from(area.width);
    let (indent, mut skip) = match alignment {
        Alignment::Left => (0, 0),
        Alignment::Center if width <= room => ((room - width) / 2, 0),
        Alignment::Center => (0, (width - room) / 2),
        Alignment::Right if width <= room => (room - width, 0),
        Alignment::Right => (0, width - room),
    };
    // The indent is less than the area's width, a u16.
    let mut x = area.x + indent as u16;
    for span in &line.spans {
        for c in span.content.chars() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if x >= area.right() {
                return;
            }
            buf[(x, area.y)].set_char(c).set_style(span.style);
            x += 1;
        }
    }
}

/// Draws what `Block::bordered().title(title).border_style(style)` draws in `area` (plain
/// borders, the title on the top one from the left) and returns the area inside. The block's
/// own style is the default one, which changes no cell, so the cells inside are left alone
/// instead of being restyled one by one.
pub fn bordered(area: Rect, buf: &mut Buffer, title: &Line<'_>, style: Style) -> Rect {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return area;
    }
    let set = border::PLAIN;
    let (left, top) = (area.left(), area.top());
    let (right, bottom) = (area.right() - 1, area.bottom() - 1);
    let mut put = |x: u16, y: u16, symbol: &str| {
        buf[(x, y)].set_symbol(symbol).set_style(style);
    };
    for y in top.saturating_add(1)..=bottom.saturating_sub(1) {
        put(left, y, set.vertical_left);
    }
    for x in left.saturating_add(1)..=right.saturating_sub(1) {
        put(x, top, set.horizontal_top);
    }
    for y in top.saturating_add(1)..=bottom.saturating_sub(1) {
        put(right, y, set.vertical_right);
    }
    for x in left.saturating_add(1)..=right.saturating_sub(1) {
        put(x, bottom, set.horizontal_bottom);
    }
    put(right, bottom, set.bottom_right);
    put(right, top, set.top_right);
    put(left, bottom, set.bottom_left);
    put(left, top, set.top_left);
    let room = area.width.saturating_sub(2);
    if room > 0 {
        let width = u16::try_from(title.width()).unwrap_or(u16::MAX).min(room);
        render(title, Rect::new(left + 1, top, width, 1), buf);
    }
    Rect::new(
        left + 1,
        top + 1,
        area.width.saturating_sub(2),
        area.height.saturating_sub(2),
    )
}

/// A character that is a grapheme of its own and takes one cell, whatever follows it: printable
/// ASCII, and the single-width letters, punctuation, arrows, box drawing, blocks, shapes and
/// braille the screens use. Combining marks, joiners, selectors, emoji and wide characters are
/// not, and send the line the slow way.
fn one_cell(c: char) -> bool {
    if c.is_ascii() {
        return !c.is_ascii_control();
    }
    matches!(u32::from(c), 0xA0..=0x2FF | 0x2010..=0x25FF | 0x2800..=0x28FF) && c.width() == Some(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier, Style};
    use ratatui::text::Span;

    /// A buffer that already has content and styles.
    fn base() -> Buffer {
        let mut base = Buffer::empty(Rect::new(0, 0, 12, 2));
        base.set_string(0, 0, "abcdefghijkl", Style::default().bg(Color::Blue));
        base.set_string(
            0,
            1,
            "mnopqrstuvwx",
            Style::default().add_modifier(Modifier::BOLD),
        );
        base
    }

    fn lines() -> Vec<Line<'static>> {
        vec![
            Line::from(vec![
                Span::styled("▶ 3  ", Style::default().fg(Color::Yellow)),
                Span::styled("███▍", Style::default().fg(Color::Green)),
                Span::styled("··", Style::default().fg(Color::DarkGray)),
            ]),
            Line::styled(
                "a line too long for its area",
                Style::default().bg(Color::Red),
            ),
            Line::from(vec![
                Span::raw("x"),
                Span::styled("", Style::default().fg(Color::Red)),
                Span::styled(
                    "⣿⡀ PCIe↓ ·…",
                    Style::default().add_modifier(Modifier::REVERSED),
                ),
            ])
            .style(Style::default().fg(Color::White).bg(Color::Black)),
            Line::from("right").alignment(Alignment::Right),
            Line::from(vec![Span::raw("cen"), Span::raw("tred")]).alignment(Alignment::Center),
            Line::from("wide 世界 and e\u{301}"),
            Line::from(""),
            Line::from(vec![Span::raw(""), Span::raw("")]).style(Style::default().bg(Color::Red)),
        ]
    }

    const AREAS: [Rect; 8] = [
        Rect::new(0, 0, 12, 1),
        Rect::new(3, 1, 5, 1),
        Rect::new(3, 1, 4, 1),
        Rect::new(10, 0, 8, 2),
        Rect::new(0, 0, 0, 1),
        Rect::new(5, 0, 1, 1),
        Rect::new(5, 1, 2, 1),
        Rect::new(12, 0, 3, 1),
    ];

    #[test]
    fn draws_what_the_line_widget_draws() {
        for line in &lines() {
            for area in AREAS {
                let mut slow = base();
                line.render(area, &mut slow);
                let mut fast = base();
                render(line, area, &mut fast);
                assert_eq!(slow, fast, "{line:?} in {area:?}");
            }
        }
    }

    #[test]
    fn draws_what_the_line_widget_draws_aligned_as_told() {
        for line in &lines() {
            for area in AREAS {
                for alignment in [Alignment::Left, Alignment::Center, Alignment::Right] {
                    let mut slow = base();
                    line.clone().alignment(alignment).render(area, &mut slow);
                    let mut fast = base();
                    render_aligned(line, area, &mut fast, alignment);
                    assert_eq!(slow, fast, "{line:?} {alignment:?} in {area:?}");
                }
            }
        }
    }

    #[test]
    fn boxes_are_drawn_as_the_block_widget_draws_them() {
        let style = Style::default().fg(Color::DarkGray);
        let titles = [
            Line::from(Span::styled(
                " GPUs (compact) ",
                Style::default().fg(Color::Cyan),
            )),
            Line::from(vec![
                Span::styled(" util ", Style::default().fg(Color::Green)),
                Span::raw("47%  "),
                Span::styled("memory ", Style::default().fg(Color::Blue)),
            ]),
            Line::from(" GPU 2 · NVIDIA H100 80GB HBM3 with a long name "),
            Line::from(""),
        ];
        for title in &titles {
            for area in [
                Rect::new(0, 0, 12, 2),
                Rect::new(1, 0, 10, 2),
                Rect::new(0, 0, 1, 1),
                Rect::new(0, 0, 2, 1),
                Rect::new(3, 1, 1, 1),
                Rect::new(8, 0, 10, 2),
                Rect::new(0, 0, 0, 0),
            ] {
                let full = Rect::new(0, 0, 12, 2);
                let mut slow = Buffer::empty(full);
                slow.set_string(0, 0, "abcdefghijkl", Style::default().bg(Color::Blue));
                let mut fast = slow.clone();
                let block = ratatui::widgets::Block::bordered()
                    .title(title.clone())
                    .border_style(style);
                let inner = block.inner(area.intersection(full));
                block.render(area, &mut slow);
                let fast_inner = bordered(area, &mut fast, title, style);
                assert_eq!(slow, fast, "{title:?} in {area:?}");
                if !area.intersection(full).is_empty() {
                    assert_eq!(inner, fast_inner, "{area:?}");
                }
            }
        }
        // And a box of the screen's size, inside a bigger buffer.
        let mut slow = Buffer::empty(Rect::new(0, 0, 160, 50));
        let mut fast = slow.clone();
        let block = ratatui::widgets::Block::bordered()
            .title(titles[0].clone())
            .border_style(style);
        block.render(Rect::new(0, 2, 160, 11), &mut slow);
        bordered(Rect::new(0, 2, 160, 11), &mut fast, &titles[0], style);
        assert_eq!(slow, fast);
    }

    #[test]
    fn only_lone_single_cell_characters_take_the_fast_way() {
        for c in [
            'a', ' ', '~', '·', '…', '▶', '↓', '█', '▏', '▁', '⣿', '─', 'é',
        ] {
            assert!(one_cell(c), "{c:?}");
        }
        for c in [
            '\n',
            '\t',
            '\u{301}',
            '\u{200d}',
            '\u{fe0f}',
            '世',
            '⌚',
            '🙂',
            '\u{1f1e9}',
        ] {
            assert!(!one_cell(c), "{c:?}");
        }
    }
}
