//! A container inspected: command, image, GPUs, mounts, ports, environment and runtime settings.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget, Wrap};

use super::style::Styles;
use crate::docker::ContainerDetails;

pub fn render(area: Rect, buf: &mut Buffer, details: Option<&ContainerDetails>, s: &Styles) {
    let block = Block::bordered()
        .title(Span::styled(" Inspect (Esc to close) ", s.title()))
        .border_style(s.border());
    let Some(d) = details else {
        Paragraph::new(Line::styled(
            "reading the container's configuration…",
            s.muted(),
        ))
        .block(block)
        .render(area, buf);
        return;
    };
    let field = |label: &str, value: String| {
        Line::from(vec![
            Span::styled(format!("{label:<12}"), s.muted()),
            Span::styled(value, s.text()),
        ])
    };
    let mut lines = vec![
        field("Name", d.info.name.clone()),
        field("Id", d.info.id.clone()),
        field("Image", d.info.image.clone()),
        field("Status", d.info.status.clone()),
        field("Entrypoint", d.entrypoint.join(" ")),
        field("Command", d.cmd.join(" ")),
        field("Working dir", d.working_dir.clone()),
        field(
            "User",
            if d.user.is_empty() {
                "(image default)".into()
            } else {
                d.user.clone()
            },
        ),
        field("GPUs", crate::docker::gpus_summary(&d.info.gpus, &[])),
        field("Runtime", d.runtime.clone()),
        field("Network", d.network_mode.clone()),
        field("Restart", d.restart_policy.clone()),
    ];
    let mut section = |title: &str, items: &[String]| {
        lines.push(Line::styled(title.to_string(), s.header()));
        if items.is_empty() {
            lines.push(Line::styled("  none", s.muted()));
        }
        lines.extend(
            items
                .iter()
                .map(|i| Line::styled(format!("  {i}"), s.text())),
        );
    };
    section("Mounts", &d.mounts);
    section("Ports", &d.ports);
    section("Environment", &d.env);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(block)
        .render(area, buf);
}
