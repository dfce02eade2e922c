//! Drawing the whole screen into a buffer and reading it back, for panel tests.

use gpudeck::app::keymap::bindings;
use gpudeck::app::state::AppState;
use gpudeck::config::Theme;
use gpudeck::ui;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The screen `state` draws at `w`x`h` with the dark theme.
pub fn render(state: &AppState, w: u16, h: u16) -> Buffer {
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    let theme = Theme::builtin("dark").expect("theme");
    ui::render(area, &mut buf, state, &theme, &bindings());
    buf
}

/// The buffer's text, one line per row, trailing spaces trimmed.
pub fn text(buf: &Buffer) -> String {
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The cell where `needle` first appears; panics with the screen when it does not.
pub fn find(buf: &Buffer, needle: &str) -> (u16, u16) {
    for y in 0..buf.area.height {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        if let Some(byte) = line.find(needle) {
            return (line[..byte].chars().count() as u16, y);
        }
    }
    panic!("{needle:?} not on screen:\n{}", text(buf));
}
