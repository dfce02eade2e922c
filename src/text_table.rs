//! Plain-text tables for the command line (`containers`, `images`, `shell --list`,
//! `services`): each column as wide as its widest cell in terminal columns, not characters, so
//! a cell with CJK text or an emoji (two columns each) keeps the columns after it in line.

use unicode_width::UnicodeWidthStr;

/// The terminal columns `text` takes (`日本` takes 4, `🚀` 2, `é` 1).
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// Each column's width: the widest of its header and its cells.
pub fn column_widths<R, S>(header: &[&str], rows: &[R]) -> Vec<usize>
where
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(width(cell.as_ref()));
        }
    }
    widths
}

/// The header and the rows, one line each: the columns `shown` (in that order), each cell
/// padded to its column's width (from [`column_widths`]) and `gap` spaces between columns; no
/// line ends in spaces.
pub fn render<R, S>(
    header: &[&str],
    rows: &[R],
    widths: &[usize],
    shown: &[usize],
    gap: usize,
) -> String
where
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    let mut out = String::new();
    line(&mut out, header, widths, shown, gap);
    for row in rows {
        let cells: Vec<&str> = row.as_ref().iter().map(AsRef::as_ref).collect();
        line(&mut out, &cells, widths, shown, gap);
    }
    out
}

/// One line of [`render`].
fn line(out: &mut String, cells: &[&str], widths: &[usize], shown: &[usize], gap: usize) {
    let mut text = String::new();
    for (at, &c) in shown.iter().enumerate() {
        let cell = cells.get(c).copied().unwrap_or("");
        text.push_str(cell);
        if at + 1 < shown.len() {
            let pad = widths[c].saturating_sub(width(cell)) + gap;
            text.extend(std::iter::repeat_n(' ', pad));
        }
    }
    out.push_str(text.trim_end());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell of CJK text or emoji is as wide as it looks: the next column starts where it
    /// starts on the other lines (with `chars().count()` it started two columns early per
    /// wide character).
    #[test]
    fn columns_line_up_after_cjk_and_emoji_cells() {
        let header = ["NAME", "GPUS", "STATE"];
        let rows = vec![
            vec!["训练任务".to_string(), "0,1".into(), "running".into()],
            vec!["🚀launch".into(), "2".into(), "exited".into()],
            vec!["plain".into(), "3".into(), "created".into()],
        ];
        let widths = column_widths(&header, &rows);
        assert_eq!(widths, [8, 4, 7]);
        let text = render(&header, &rows, &widths, &[0, 1, 2], 2);
        let starts: Vec<usize> = text
            .lines()
            .map(|l| {
                let at = l.find(['0', '2', '3', 'G']).expect("the GPUS column");
                width(&l[..at])
            })
            .collect();
        assert_eq!(starts, [10, 10, 10, 10], "\n{text}");
        assert_eq!(
            text,
            "NAME      GPUS  STATE\n训练任务  0,1   running\n🚀launch  2     exited\nplain     3     created\n"
        );
    }

    #[test]
    fn only_the_shown_columns_are_drawn_in_their_order() {
        let header = ["A", "B", "C"];
        let rows = [["x", "yy", "z"]];
        let widths = column_widths(&header, &rows);
        assert_eq!(
            render(&header, &rows, &widths, &[0, 2], 3),
            "A   C\nx   z\n"
        );
    }
}
