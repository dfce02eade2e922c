//! A container's logs: follow or scroll, search with highlights, stderr told apart from stdout.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::style::Styles;
use crate::app::docker::LogsView;
use crate::docker::LogStream;

pub fn render(area: Rect, buf: &mut Buffer, view: &LogsView, _page: usize, s: &Styles) {
    let height = area.height.saturating_sub(2) as usize;
    let end = view.lines.len().saturating_sub(view.scroll);
    let start = end.saturating_sub(height);
    let needle = view.search.to_lowercase();
    let lines: Vec<Line> = view
        .lines
        .range(start..end)
        .map(|l| {
            let base = match l.stream {
                LogStream::Stdout => s.text(),
                LogStream::Stderr => s.warn().remove_modifier(Modifier::BOLD),
            };
            let marker = match l.stream {
                LogStream::Stdout => Span::styled("  ", s.muted()),
                LogStream::Stderr => Span::styled("E ", s.error()),
            };
            let hit = !needle.is_empty() && l.text.to_lowercase().contains(&needle);
            let text = Span::styled(l.text.clone(), if hit { s.selected() } else { base });
            Line::from(vec![marker, text])
        })
        .collect();
    let mode = if view.follow {
        "following".to_string()
    } else {
        format!("{} lines up", view.scroll)
    };
    let mut title = vec![Span::styled(
        format!(
            " Logs · {} · {} lines · {mode} ",
            view.name,
            view.lines.len()
        ),
        s.title(),
    )];
    if view.editing_search || !view.search.is_empty() {
        let cursor = if view.editing_search { "▏" } else { "" };
        title.push(Span::styled(
            format!("· search: {}{cursor} ", view.search),
            s.accent(),
        ));
    }
    if let Some(reason) = &view.ended {
        title.push(Span::styled(format!("· ended: {reason} "), s.warn()));
    }
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .title(Line::from(title))
                .border_style(s.border()),
        )
        .render(area, buf);
}
