//! The Images tab: local images with size, age and the CUDA, cuDNN and framework versions they carry.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::scroll::table_offset;
use super::style::Styles;
use super::table::{self, Column, TableRow};
use super::{docker_status, pulls};
use crate::app::docker::{image_framework, short_image_id};
use crate::app::state::AppState;
use crate::docker::ImageInfo;
use crate::units;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let d = &state.docker;
    if docker_status::render(area, buf, &d.host, &d.status, s) {
        return;
    }
    let table_area = table_area(area, state);
    let pulls_area = Rect {
        y: table_area.y + table_area.height,
        height: area.height - table_area.height,
        ..area
    };
    if pulls_area.height > 0 {
        pulls::panel(pulls_area, buf, &d.pulls, s);
    }
    let area = table_area;
    let shown = d.shown_images();
    let mut title = format!(" Images · {} ", d.images.len());
    if let Some(filter) = d.image_filter.title(shown.len(), d.images.len()) {
        title.push_str(&format!("· {filter} "));
    }
    let block = Block::bordered()
        .title(Span::styled(title, s.title()))
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
    let selected = d.selected_image_shown();
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    let rows = shown
        .iter()
        .skip(first)
        .take(visible)
        .map(|&i| image_row(&d.images[i], state.now, s))
        .collect();
    let selected = selected.and_then(|row| row.checked_sub(first));
    table::render(area, buf, block, &COLUMNS, rows, selected, s);
    if shown.is_empty() && !d.image_filter.is_empty() {
        table::no_match(area, buf, &d.image_filter.text, s);
    }
}

/// The images table's part of the tab: all of it but the pulls panel below.
pub fn table_area(area: Rect, state: &AppState) -> Rect {
    let pulls_h = pulls::panel_height(&state.docker.pulls).min(area.height / 2);
    Rect {
        height: area.height - pulls_h,
        ..area
    }
}

/// The image reference gets what the facts leave (cut in the middle, keeping its tag); the
/// facts are never cut. Narrower than every column, they drop out in this order: AGE, ID,
/// CUDNN, SIZE, FRAMEWORK, CUDA; the reference stays.
const COLUMNS: [Column; 7] = [
    Column::flex("IMAGE", 16).ident().keep(9),
    Column::fixed("ID", 12).number().keep(3),
    Column::fixed("SIZE", 8).number().keep(6),
    Column::fixed("AGE", 7).number().keep(2),
    Column::fixed("CUDA", 7).number().keep(8),
    Column::fixed("CUDNN", 9).number().keep(5),
    Column::fit("FRAMEWORK", 9, 18).number().keep(7),
];

fn image_row(img: &ImageInfo, now: i64, s: &Styles) -> TableRow {
    let name = img.tags.first().cloned().unwrap_or_else(|| "<none>".into());
    let f = &img.facts;
    TableRow::new(
        vec![
            Span::raw(name),
            Span::raw(short_image_id(&img.id)),
            Span::raw(units::human_bytes(img.size_bytes)),
            Span::raw(if now > 0 {
                units::age(now - img.created)
            } else {
                "-".into()
            }),
            Span::raw(f.cuda.clone().unwrap_or_else(|| "-".into())),
            Span::raw(f.cudnn.clone().unwrap_or_else(|| "-".into())),
            Span::raw(image_framework(img).unwrap_or_else(|| "-".into())),
        ],
        s.text(),
    )
}
