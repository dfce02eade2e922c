//! Pulls on screen: the image picker over the Images tab, and the running and finished pulls below it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::compat::{host_problem, level_mark};
use super::style::{bar, Styles};
use super::table;
use crate::app::compat::CompatView;
use crate::app::pulls::{PullOutcome, PullPicker, PullView};
use crate::pull::{CatalogEntry, LayerStatus, PullProgress};
use crate::units;

/// Lines the pulls panel wants: one per pull, plus the layers of the newest running one.
pub fn panel_height(pulls: &[PullView]) -> u16 {
    if pulls.is_empty() {
        return 0;
    }
    let layers = newest_running(pulls)
        .and_then(|p| p.progress.as_ref())
        .map_or(0, |p| p.layers.len().min(8));
    (pulls.len() + layers + 2) as u16
}

fn newest_running(pulls: &[PullView]) -> Option<&PullView> {
    pulls.iter().rev().find(|p| p.running())
}

/// What a pull line's progress part takes besides its bar: " 1.2GiB/4.5GiB 12MiB/s ETA 3m".
const PROGRESS_TEXT: u16 = 36;
/// The progress bar at 80 columns, and the most it grows to.
const BAR_MIN: u16 = 12;
const BAR_MAX: u16 = 40;

/// Widths of a pull line's reference and progress bar on a panel `inner` columns wide: the
/// reference as long as the longest one (cut with `…` when the panel is narrow), the bar
/// growing into what is left.
fn pull_widths(pulls: &[PullView], inner: u16) -> (u16, u16) {
    let longest = pulls
        .iter()
        .map(|p| Span::raw(p.reference.as_str()).width() as u16)
        .max()
        .unwrap_or(0);
    // What the progress part leaves; on a narrow panel the reference keeps its 16 columns.
    let progress = BAR_MIN + PROGRESS_TEXT + table::SPACING;
    let room = inner
        .saturating_sub(progress)
        .max(16.min(inner.saturating_sub(table::SPACING)));
    let name = longest.clamp(16, room.max(16));
    let bar = (BAR_MIN + room.saturating_sub(name)).min(BAR_MAX);
    (name, bar)
}

pub fn panel(area: Rect, buf: &mut Buffer, pulls: &[PullView], s: &Styles) {
    let mut lines = Vec::new();
    let detailed = newest_running(pulls).map(|p| p.id);
    let widths = pull_widths(pulls, area.width.saturating_sub(2));
    for p in pulls.iter().rev() {
        lines.push(pull_line(p, widths, area.width.saturating_sub(2), s));
        if Some(p.id) == detailed {
            if let Some(progress) = &p.progress {
                lines.extend(progress.layers.iter().take(8).map(|l| layer_line(l, s)));
            }
        }
    }
    let title = if pulls.iter().any(PullView::retryable) {
        " Pulls (c cancels the newest · r retries what the engine cut) "
    } else {
        " Pulls (c cancels the newest) "
    };
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .title(Span::styled(title, s.title()))
                .border_style(s.border()),
        )
        .render(area, buf);
}

/// One pull's line on a panel `inner` columns wide; a failure's fix that does not fit ends with
/// `…` (the message line and `M` have it whole).
fn pull_line<'a>(p: &PullView, (name_w, bar_w): (u16, u16), inner: u16, s: &Styles) -> Line<'a> {
    let cut = table::cut_middle(&p.reference, name_w);
    let name = Span::styled(format!("{cut:<w$} ", w = usize::from(name_w)), s.text());
    match (&p.outcome, &p.progress) {
        (Some(PullOutcome::Done { digest, secs }), _) => Line::from(vec![
            name,
            Span::styled(format!("done in {secs:.1}s "), s.ok()),
            Span::styled(digest.clone().unwrap_or_default(), s.muted()),
        ]),
        (Some(PullOutcome::Failed { title, retry, .. }), _) if *retry => Line::from(vec![
            name,
            Span::styled(format!("{title}: "), s.error()),
            Span::styled("r retries", s.accent()),
        ]),
        (Some(PullOutcome::Failed { title, fix, .. }), _) => {
            let title = format!("{title}: ");
            let used = name.width() + Span::raw(title.as_str()).width();
            let room = usize::from(inner).saturating_sub(used);
            Line::from(vec![
                name,
                Span::styled(title, s.error()),
                Span::styled(table::cut(fix, room as u16), s.text()),
            ])
        }
        (None, Some(progress)) => {
            Line::from([vec![name], totals(progress, usize::from(bar_w), s)].concat())
        }
        (None, None) => Line::from(vec![name, Span::styled("starting…", s.muted())]),
    }
}

fn totals<'a>(p: &PullProgress, bar_w: usize, s: &Styles) -> Vec<Span<'a>> {
    let frac = if p.bytes_total > 0 {
        p.bytes_done as f64 / p.bytes_total as f64
    } else {
        0.0
    };
    let (fill, rest) = bar(frac, bar_w);
    let eta = p.eta.map_or_else(
        || "".into(),
        |e| format!(" ETA {}", units::age(e.as_secs() as i64)),
    );
    vec![
        Span::styled(fill, s.accent()),
        Span::styled(rest, s.gauge_bg()),
        Span::styled(
            format!(
                " {}/{} {}/s{eta}",
                units::human_bytes(p.bytes_done),
                units::human_bytes(p.bytes_total),
                units::human_bytes(p.rate_bytes_per_sec as u64)
            ),
            s.text(),
        ),
    ]
}

fn layer_line<'a>(l: &crate::pull::LayerProgress, s: &Styles) -> Line<'a> {
    let frac = match l.total {
        Some(t) if t > 0 => l.current as f64 / t as f64,
        _ if l.status.is_finished() => 1.0,
        _ => 0.0,
    };
    let (fill, rest) = bar(frac, 10);
    let style = if l.status.is_finished() {
        s.ok()
    } else {
        s.muted()
    };
    Line::from(vec![
        Span::styled(
            format!("   {:<12} {:<14} ", l.id, format!("{:?}", l.status)),
            style,
        ),
        Span::styled(fill, s.accent()),
        Span::styled(rest, s.gauge_bg()),
        Span::styled(
            match (l.status, l.total) {
                (LayerStatus::AlreadyExists, _) => " already here".to_string(),
                (_, Some(t)) => format!(
                    " {}/{}",
                    units::human_bytes(l.current),
                    units::human_bytes(t)
                ),
                _ => String::new(),
            },
            s.muted(),
        ),
    ])
}

pub fn picker(
    area: Rect,
    buf: &mut Buffer,
    picker: &PullPicker,
    catalog: &[CatalogEntry],
    compat: &CompatView,
    s: &Styles,
) {
    let w = area.width.min(100);
    let h = area.height.saturating_sub(4).min(24);
    let popup = Rect::new(area.x + (area.width - w) / 2, area.y + 2, w, h);
    Clear.render(popup, buf);
    let mut lines = vec![
        Line::from(vec![
            Span::styled("Image: ", s.accent()),
            Span::styled(format!("{}▏", picker.query), s.text()),
        ]),
        match &picker.error {
            Some(e) => Line::styled(e.clone(), s.error()),
            None => Line::styled(
                "type words to narrow the catalog, or a full reference to pull any image",
                s.muted(),
            ),
        },
    ];
    // A host that can give no container a GPU marks every row; say why once, with the fix.
    if let Some(r) = compat.board.as_ref().and_then(host_problem) {
        let fix = r
            .fix
            .as_deref()
            .map(|f| format!("; fix: {f}"))
            .unwrap_or_default();
        let width = w.saturating_sub(2).max(20) as usize;
        let options = textwrap::Options::new(width).break_words(false);
        for part in textwrap::wrap(&format!("{}{fix}", r.text), options) {
            lines.push(Line::styled(part.into_owned(), s.error()));
        }
    }
    let matches = picker.matches(catalog);
    let rows = h.saturating_sub(2 + lines.len() as u16) as usize;
    let first = picker.selected.saturating_sub(rows.saturating_sub(1));
    let shown: Vec<&CatalogEntry> = matches.iter().skip(first).take(rows).copied().collect();
    let columns = PickerColumns::fit(&shown, w.saturating_sub(2));
    for (i, e) in shown.into_iter().enumerate().map(|(i, e)| (i + first, e)) {
        // The verdict here, before a multi-gigabyte download rather than after.
        let (mark, mark_style, word) = match compat.assessment_of(&e.reference) {
            Some(a) => {
                let (mark, style) = level_mark(a.verdict.level, s);
                (mark, style, a.verdict.level.word())
            }
            None => (" ", s.muted(), ""),
        };
        let style = if i == picker.selected {
            s.selected()
        } else {
            s.text()
        };
        lines.push(Line::from(vec![
            Span::styled(
                mark,
                if i == picker.selected {
                    style
                } else {
                    mark_style
                },
            ),
            Span::styled(columns.row(e, word), style),
        ]));
    }
    if matches.is_empty() && !picker.query.trim().is_empty() {
        lines.push(Line::styled(
            format!("Enter pulls {} as typed", picker.query.trim()),
            s.accent(),
        ));
    }
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .title(Span::styled(
                    format!(
                        " Pull an image · {} in the catalog · Enter pull · Esc close ",
                        matches.len()
                    ),
                    s.title(),
                ))
                .border_style(s.accent()),
        )
        .render(popup, buf);
}

/// The picker's columns after the verdict's mark: the verdict in words, the reference, its CUDA
/// and its cuDNN. Narrower than all of them, cuDNN goes first, then the verdict in words (the
/// mark stays), then CUDA; the reference is never cut from the right: it is an identifier, so
/// what does not fit goes from its middle and its tag stays (`nvcr.io/…/pytorch:24.05-py3`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PickerColumns {
    word: bool,
    reference: u16,
    cuda: bool,
    cudnn: u16,
}

/// The verdict in words: `will not run` and `runs via compat` with a space after.
const WORD_WIDTH: u16 = 16;
/// ` CUDA 12.4.1`.
const CUDA_WIDTH: u16 = 12;
/// The reference's column at most, and what it keeps before the other columns give way.
const REFERENCE_MAX: u16 = 48;
const REFERENCE_MIN: u16 = 30;

impl PickerColumns {
    /// The columns for `entries` in `inner` columns (the mark's included).
    fn fit(entries: &[&CatalogEntry], inner: u16) -> PickerColumns {
        let widest = |f: &dyn Fn(&CatalogEntry) -> usize| {
            entries.iter().map(|e| f(e)).max().unwrap_or(0) as u16
        };
        let reference =
            widest(&|e: &CatalogEntry| Span::raw(e.reference.as_str()).width()).min(REFERENCE_MAX);
        // ` cuDNN 9.1.0`
        let cudnn =
            widest(&|e: &CatalogEntry| e.cudnn.as_ref().map_or(0, |c| c.chars().count() + 7));
        // The mark and the space after it.
        let room = inner.saturating_sub(2);
        // The whole reference with as many other columns as fit; else a part of it.
        for wanted in [reference, reference.min(REFERENCE_MIN)] {
            for (word, cuda, cudnn) in [(true, true, cudnn), (true, true, 0), (false, true, 0)] {
                let others = u16::from(word) * WORD_WIDTH + u16::from(cuda) * CUDA_WIDTH + cudnn;
                if others + wanted <= room {
                    return PickerColumns {
                        word,
                        reference: reference.min(room - others),
                        cuda,
                        cudnn,
                    };
                }
            }
        }
        PickerColumns {
            word: false,
            reference: room,
            cuda: false,
            cudnn: 0,
        }
    }

    /// One entry's row after its mark.
    fn row(&self, e: &CatalogEntry, word: &str) -> String {
        let mut row = String::from(" ");
        if self.word {
            row.push_str(&format!("{word:<w$}", w = usize::from(WORD_WIDTH)));
        }
        let reference = table::cut_middle(&e.reference, self.reference);
        row.push_str(&format!("{reference:<w$}", w = usize::from(self.reference)));
        if self.cuda {
            row.push_str(&format!(" CUDA {:<6}", e.cuda));
        }
        if self.cudnn > 0 {
            if let Some(cudnn) = &e.cudnn {
                row.push_str(&format!(" cuDNN {cudnn}"));
            }
        }
        row
    }
}
