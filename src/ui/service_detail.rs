//! The selected service in the Services tab: its state and place, its URL and SSH line whole
//! (wrapped, never cut), its ports, a notebook's kernels and idle time, Triton's models with
//! their counts and mean latency, and why it does not answer.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::run_detail::state_style;
use super::style::Styles;
use crate::app::state::AppState;
use crate::runs::{RunState, ServiceKind};
use crate::services::{Health, ServiceRow};
use crate::units;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, r: &ServiceRow, s: &Styles) {
    let title = format!(" {} · {} ", r.id, r.kind);
    // The id in the title where it fits whole; else the kind there and the id on lines of its
    // own under its label, never cut.
    let id_fits = title.chars().count() <= usize::from(area.width.saturating_sub(2));
    let title = if id_fits {
        title
    } else {
        format!(" {} ", r.kind)
    };
    let block = Block::bordered()
        .title(Span::styled(title, s.title()))
        .border_style(s.border());
    let inner = block.inner(area);
    block.render(area, buf);
    let mut lines = Vec::new();
    if !id_fits {
        lines.extend(wrapped("id", &r.id, inner.width, s.text(), s));
    }
    lines.extend(detail_lines(r, state, inner.width, s));
    Paragraph::new(lines).render(inner, buf);
}

/// The label column of the detail.
const LABEL: usize = 9;

/// The detail's lines at `width`: long values (the URL with its token, the SSH line) go on as
/// many lines as they need under their label, whole.
pub fn detail_lines(
    r: &ServiceRow,
    state: &AppState,
    width: u16,
    s: &Styles,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    lines.push(labelled("state", status_spans(r, state, s), s));
    let place = crate::app::services::where_and_gpus(r);
    lines.extend(wrapped("where", &place, width, s.text(), s));
    if let (Some(error), Health::Ended) = (&r.error, r.health) {
        lines.extend(wrapped("why", error, width, s.error(), s));
    }
    if let Some(problem) = &r.problem {
        let what = format!("not answering: {problem}");
        lines.extend(wrapped("problem", &what, width, s.error(), s));
    }
    let live = r.health != Health::Ended;
    let url_style = if live { s.accent() } else { s.muted() };
    lines.extend(wrapped("open", &r.url, width, url_style, s));
    lines.extend(wrapped("ssh", &r.ssh, width, s.text(), s));
    if live {
        lines.push(labelled(
            "",
            vec![Span::styled(
                "then open the same address on the laptop (c/s copy them)",
                s.muted(),
            )],
            s,
        ));
    }
    let ports: Vec<String> = r
        .ports
        .iter()
        .map(|p| format!("{} {}", p.name, p.port))
        .collect();
    lines.push(labelled(
        "ports",
        vec![Span::styled(ports.join(" · "), s.text())],
        s,
    ));
    match r.kind {
        ServiceKind::Notebook => notebook_lines(r, state, width, s, &mut lines),
        ServiceKind::Triton => triton_lines(r, width, s, &mut lines),
        ServiceKind::Tensorboard => {}
    }
    if !live {
        lines.push(labelled(
            "",
            vec![Span::styled(
                "it has ended: R starts it again, l shows its output",
                s.muted(),
            )],
            s,
        ));
    }
    lines
}

fn notebook_lines(
    r: &ServiceRow,
    state: &AppState,
    width: u16,
    s: &Styles,
    out: &mut Vec<Line<'static>>,
) {
    if r.health == Health::Ready {
        let kernels = match r.kernels.is_empty() {
            true => "none open".to_string(),
            false => r
                .kernels
                .iter()
                .map(|k| {
                    let tabs = units::plural_or_no(k.connections as usize, "browser tab");
                    format!("{} {} ({tabs})", k.name, k.execution_state.as_str())
                })
                .collect::<Vec<_>>()
                .join(", "),
        };
        out.extend(wrapped("kernels", &kernels, width, s.text(), s));
    }
    if let Some(secs) = r.idle_seconds {
        let idle = units::run_duration(secs * 1000);
        let (text, style) = match (r.idle_alert, state.idle_alert) {
            (true, Some(limit)) => (
                format!(
                    "{idle}, past [notebook] idle_alert ({}) while holding GPUs: save your work and stop it (x)",
                    units::run_duration(limit.as_millis() as u64)
                ),
                s.warn(),
            ),
            _ => (format!("{idle} (every kernel idle)"), s.text()),
        };
        out.extend(wrapped("idle", &text, width, style, s));
    }
}

fn triton_lines(r: &ServiceRow, width: u16, s: &Styles, out: &mut Vec<Line<'static>>) {
    if r.health == Health::Ready && r.models.is_empty() {
        out.push(labelled(
            "models",
            vec![Span::styled("none in the repository", s.muted())],
            s,
        ));
    }
    for (i, m) in r.models.iter().enumerate() {
        let state = m.state.as_deref().unwrap_or("not loaded");
        let latency = m
            .mean_latency_us
            .map_or_else(|| "-".into(), |us| format!("{:.1} ms", us / 1000.0));
        let version = m
            .version
            .as_deref()
            .map(|v| format!(" v{v}"))
            .unwrap_or_default();
        let mut text = format!(
            "{}{version} {state} · {} inferences · {} ok, {} failed · mean {latency}",
            m.name, m.inferences, m.successes, m.failures
        );
        if let Some(reason) = &m.reason {
            text.push_str(&format!(" · {reason}"));
        }
        let style = if state == "READY" { s.text() } else { s.warn() };
        out.extend(wrapped(
            if i == 0 { "models" } else { "" },
            &text,
            width,
            style,
            s,
        ));
    }
}

fn labelled(label: &str, mut value: Vec<Span<'static>>, s: &Styles) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("{label:<LABEL$}"), s.muted())];
    spans.append(&mut value);
    Line::from(spans)
}

/// `text` after its label, on as many lines of the width left as it needs, each under the
/// first: broken between words, and a word longer than a line (a URL) by characters.
fn wrapped(label: &str, text: &str, width: u16, style: Style, s: &Styles) -> Vec<Line<'static>> {
    let room = usize::from(width).saturating_sub(LABEL).max(8);
    fill(text, room)
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let label = if i == 0 { label } else { "" };
            labelled(label, vec![Span::styled(line, style)], s)
        })
        .collect()
}

/// `text` in lines of at most `room` characters, nothing dropped but the spaces broken at.
pub fn fill(text: &str, room: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut used = 0;
    for word in text.split(' ') {
        let len = word.chars().count();
        if used > 0 && used + 1 + len <= room {
            line.push(' ');
            line.push_str(word);
            used += 1 + len;
            continue;
        }
        if used > 0 {
            lines.push(std::mem::take(&mut line));
        }
        let chars: Vec<char> = word.chars().collect();
        let mut pieces = chars.chunks(room.max(1)).peekable();
        used = 0;
        while let Some(piece) = pieces.next() {
            let piece: String = piece.iter().collect();
            if pieces.peek().is_some() {
                lines.push(piece);
            } else {
                used = piece.chars().count();
                line = piece;
            }
        }
    }
    if used > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// The run's state and the service's health as `gpudeck services` has them (`running · ready`),
/// then when it started, or for one that ended, when it ended and how long it ran: "stopped ·
/// ended 2m ago · ran 24s", never a start time alone that reads as if it still ran.
fn status_spans(r: &ServiceRow, state: &AppState, s: &Styles) -> Vec<Span<'static>> {
    let (_, style) = shown_state(r, s);
    let mut status = vec![Span::styled(r.state.to_string(), style)];
    if r.health != Health::Ended {
        status.push(Span::styled(format!(" · {}", r.health.as_str()), style));
    }
    let now_ms = state.now.max(0) as u64 * 1000;
    let ago = |ms: u64| units::age((now_ms.saturating_sub(ms) / 1000) as i64);
    let when = match (r.started_ms, r.ended_ms, state.now > 0) {
        (Some(start), Some(end), true) => format!(
            " · ended {} ago · ran {}",
            ago(end),
            units::run_duration(end.saturating_sub(start))
        ),
        (_, Some(end), true) => format!(" · ended {} ago", ago(end)),
        (Some(start), None, true) if r.health != Health::Ended => {
            format!(" · started {} ago", ago(start))
        }
        _ => String::new(),
    };
    status.push(Span::styled(when, s.muted()));
    status
}

/// What the Services tab says in its STATUS column: a running service's health (`gpudeck
/// services` has it under HEALTH), else the run's state (under STATE).
pub(super) fn shown_state(r: &ServiceRow, s: &Styles) -> (String, Style) {
    match (r.state, r.health) {
        (RunState::Running, Health::Ready) => ("ready".into(), s.ok()),
        (RunState::Running, Health::Starting) => ("starting".into(), s.warn()),
        (RunState::Running, Health::Down) => ("down".into(), s.error()),
        (RunState::Running, Health::Ended) => ("ended".into(), s.muted()),
        (state, _) => (state.to_string(), state_style(state, s)),
    }
}

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn fill_breaks_between_words_and_a_long_word_by_characters_dropping_nothing() {
        assert_eq!(
            fill("save your work and stop it", 10),
            ["save your", "work and", "stop it"]
        );
        let url = "http://127.0.0.1:8888/lab?token=0123456789abcdef";
        let lines = fill(&format!("open {url}"), 20);
        assert_eq!(lines.concat(), format!("open{url}"));
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert_eq!(fill("", 10), [""]);
    }
}
