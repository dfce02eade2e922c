//! Drawing a line of text as ratatui's `Line` widget does, without its grapheme segmentation
//! where no character needs it: the GPU rows, redrawn every second, are nearly all ASCII, bars
//! and sparklines, each character one cell. Anything else is handed to `Line` itself.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthChar;

/// Draws `line` in the first row of `area`, cell for cell as `line.render(area, buf)` would.
pub fn render(line: &Line<'_>, area: Rect, buf: &mut Buffer) {
    let simple = matches!(line.alignment, None | Some(Alignment::Left))
        && line.spans.iter().all(|s| s.content.chars().all(one_cell));
    if !simple {
        line.render(area, buf);
        return;
    }
    let area = area.intersection(buf.area);
    if area.is_empty() || line.spans.iter().all(|s| s.content.is_empty()) {
        return;
    }
    let area = Rect { height: 1, ..area };
    buf.set_style(area, line.style);
    let mut x = area.x;
    for span in &line.spans {
        for c in span.content.chars() {
            if x >= area.right() {
                return;
            }
            buf[(x, area.y)].set_char(c).set_style(span.style);
            x += 1;
        }
    }
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

    /// Both ways of drawing, on a buffer that already has content and styles.
    fn both(line: &Line<'_>, area: Rect) -> (Buffer, Buffer) {
        let full = Rect::new(0, 0, 12, 2);
        let mut base = Buffer::empty(full);
        base.set_string(0, 0, "abcdefghijkl", Style::default().bg(Color::Blue));
        base.set_string(
            0,
            1,
            "mnopqrstuvwx",
            Style::default().add_modifier(Modifier::BOLD),
        );
        let mut slow = base.clone();
        line.render(area, &mut slow);
        let mut fast = base;
        render(line, area, &mut fast);
        (slow, fast)
    }

    #[test]
    fn draws_what_the_line_widget_draws() {
        let lines = [
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
            Line::from("wide 世界 and e\u{301}"),
            Line::from(""),
        ];
        for line in &lines {
            for area in [
                Rect::new(0, 0, 12, 1),
                Rect::new(3, 1, 5, 1),
                Rect::new(10, 0, 8, 2),
                Rect::new(0, 0, 0, 1),
            ] {
                let (slow, fast) = both(line, area);
                assert_eq!(slow, fast, "{line:?} in {area:?}");
            }
        }
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
