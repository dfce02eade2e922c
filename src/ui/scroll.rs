//! Which rows of a bordered list table are on screen, and which row a click lands on: the one
//! scroll rule every list panel and the mouse share.

use ratatui::layout::Rect;

/// The row of a bordered table with a header line under a click, given the scroll rule of
/// `table_offset`.
pub(crate) fn table_row_at(
    area: Rect,
    selected: Option<usize>,
    len: usize,
    row: u16,
) -> Option<usize> {
    let first = area.y + 2;
    if row < first || row >= area.y + area.height.saturating_sub(1) {
        return None;
    }
    let visible = area.height.saturating_sub(3) as usize;
    let index = table_offset(selected, visible) + (row - first) as usize;
    (index < len).then_some(index)
}

/// First row shown so that the selected row is on screen.
pub(crate) fn table_offset(selected: Option<usize>, visible: usize) -> usize {
    selected.map_or(0, |s| s.saturating_sub(visible.saturating_sub(1)))
}
