//! Where a list's selection goes for a movement action, shared by the list tabs.

use super::action::Action;

/// The new selected row for `action` in a list of `len` rows, or `None` when the action does
/// not move a selection. A page is `page` rows; clicks on rows past the end are ignored.
pub fn moved(selected: usize, action: &Action, len: usize, page: usize) -> Option<usize> {
    let last = len.saturating_sub(1);
    let page = page.max(1);
    Some(match action {
        Action::Up => selected.saturating_sub(1),
        Action::Down => (selected + 1).min(last),
        Action::PageUp => selected.saturating_sub(page),
        Action::PageDown => (selected + page).min(last),
        Action::Top => 0,
        Action::Bottom => last,
        Action::SelectRow(row) if *row < len => *row,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn movements_stay_inside_the_list() {
        assert_eq!(moved(0, &Action::Up, 5, 3), Some(0));
        assert_eq!(moved(4, &Action::Down, 5, 3), Some(4));
        assert_eq!(moved(1, &Action::PageDown, 5, 3), Some(4));
        assert_eq!(moved(4, &Action::PageUp, 5, 3), Some(1));
        assert_eq!(moved(2, &Action::Bottom, 5, 3), Some(4));
        assert_eq!(moved(2, &Action::SelectRow(7), 5, 3), None);
        assert_eq!(moved(2, &Action::Quit, 5, 3), None);
        assert_eq!(moved(0, &Action::Bottom, 0, 3), Some(0));
    }
}
