//! The Images tab: local images with size, age and the CUDA, cuDNN and framework versions they carry.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Widget};

use super::style::Styles;
use super::{docker_status, pulls, table_offset};
use crate::app::state::AppState;
use crate::docker::ImageInfo;
use crate::units;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let d = &state.docker;
    if docker_status::render(area, buf, &d.host, &d.status, s) {
        return;
    }
    let pulls_h = pulls::panel_height(&d.pulls).min(area.height / 2);
    let (area, pulls_area) = (
        Rect {
            height: area.height - pulls_h,
            ..area
        },
        Rect {
            y: area.y + area.height - pulls_h,
            height: pulls_h,
            ..area
        },
    );
    if pulls_h > 0 {
        pulls::panel(pulls_area, buf, &d.pulls, s);
    }
    let block = Block::bordered()
        .title(Span::styled(
            format!(" Images · {} ", d.images.len()),
            s.title(),
        ))
        .border_style(s.border());
    if d.images.is_empty() {
        let text = if d.images_listed {
            "no local images"
        } else {
            "listing images…"
        };
        Paragraph::new(Line::styled(text, s.muted()))
            .block(block)
            .render(area, buf);
        return;
    }
    let selected = d.selected_image_row();
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    let rows = d
        .images
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, img)| {
            let row = image_row(img, state.now);
            if Some(i) == selected {
                row.style(s.selected())
            } else {
                row.style(s.text())
            }
        });
    let header =
        Row::new(["IMAGE", "ID", "SIZE", "AGE", "CUDA", "CUDNN", "FRAMEWORK"]).style(s.header());
    let widths = [
        Constraint::Min(20),
        Constraint::Length(12),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(18),
    ];
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .block(block)
        .render(area, buf);
}

fn image_row<'a>(img: &ImageInfo, now: i64) -> Row<'a> {
    let name = img.tags.first().cloned().unwrap_or_else(|| "<none>".into());
    let id = img
        .id
        .trim_start_matches("sha256:")
        .chars()
        .take(12)
        .collect::<String>();
    let f = &img.facts;
    let framework = match (&f.tensorflow, &f.pytorch) {
        (Some(tf), _) => format!("TensorFlow {tf}"),
        (None, Some(pt)) => format!("PyTorch {pt}"),
        _ => "-".into(),
    };
    Row::new(vec![
        Cell::from(name),
        Cell::from(id),
        Cell::from(units::human_bytes(img.size_bytes)),
        Cell::from(if now > 0 {
            units::age(now - img.created)
        } else {
            "-".into()
        }),
        Cell::from(f.cuda.clone().unwrap_or_else(|| "-".into())),
        Cell::from(f.cudnn.clone().unwrap_or_else(|| "-".into())),
        Cell::from(framework),
    ])
}
