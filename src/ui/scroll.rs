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

/// What a list too short for its rows says in its title: which rows it shows, of how many, and
/// an arrow to each side that hides more: `1-3 of 8 ↓`, `4-6 of 8 ↑↓`, `8 of 8 ↑`, or
/// `none of 8 shown ↓` when no row fits. `None` when every row is shown.
pub(crate) fn range_marker(first: usize, shown: usize, total: usize) -> Option<String> {
    if shown >= total {
        return None;
    }
    let above = if first > 0 { "↑" } else { "" };
    let below = if first + shown < total { "↓" } else { "" };
    let range = match shown {
        0 => "none".to_string(),
        1 => (first + 1).to_string(),
        _ => format!("{}-{}", first + 1, first + shown),
    };
    let shown_word = if shown == 0 { " shown" } else { "" };
    Some(format!("{range} of {total}{shown_word} {above}{below}"))
}

#[cfg(test)]
mod tests {
    use super::range_marker;

    #[test]
    fn the_marker_names_the_rows_shown_the_total_and_where_the_rest_are() {
        assert_eq!(range_marker(0, 8, 8), None);
        assert_eq!(range_marker(0, 3, 8).as_deref(), Some("1-3 of 8 ↓"));
        assert_eq!(range_marker(3, 3, 8).as_deref(), Some("4-6 of 8 ↑↓"));
        assert_eq!(range_marker(7, 1, 8).as_deref(), Some("8 of 8 ↑"));
        assert_eq!(range_marker(0, 0, 8).as_deref(), Some("none of 8 shown ↓"));
    }
}
