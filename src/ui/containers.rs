//! The Containers tab: every container with its state, GPUs, live CPU/memory and the GPU memory its processes hold.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::scroll::table_offset;
use super::style::Styles;
use super::table::{self, Column, TableRow};
use super::{docker_status, inspect, logs};
use crate::app::state::AppState;
use crate::docker::{ContainerInfo, ContainerState};
use crate::gpu::container_use::container_gpu_use;
use crate::units;

pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, s: &Styles) {
    let d = &state.docker;
    if docker_status::render(area, buf, &d.host, &d.status, s) {
        return;
    }
    if let Some(view) = &d.logs {
        logs::render(area, buf, view, state.page_size, s);
        return;
    }
    if d.inspecting.is_some() {
        inspect::render(area, buf, d.details.as_ref(), s);
        return;
    }
    let shown = d.shown_containers();
    let title = match d.container_filter.title(shown.len(), d.containers.len()) {
        Some(filter) => format!(
            " Containers · {} · {filter} · {} ",
            d.containers.len(),
            d.host
        ),
        None => format!(" Containers · {} · {} ", d.containers.len(), d.host),
    };
    let block = Block::bordered()
        .title(Span::styled(title, s.title()))
        .border_style(s.border());
    if d.containers.is_empty() {
        let text = if d.containers_listed {
            "no containers"
        } else {
            "listing containers…"
        };
        Paragraph::new(Line::styled(text, s.muted()))
            .block(block)
            .render(area, buf);
        return;
    }
    let selected = d.selected_container_shown();
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    let rows = shown
        .iter()
        .skip(first)
        .take(visible)
        .map(|&i| container_row(&d.containers[i], state, s))
        .collect();
    let selected = selected.and_then(|row| row.checked_sub(first));
    table::render(area, buf, block, &COLUMNS, rows, selected, s);
    if shown.is_empty() && !d.container_filter.is_empty() {
        table::no_match(area, buf, &d.container_filter.text, s);
    }
}

/// The name as wide as the names shown, the image reference gets what is left (both cut in the
/// middle, keeping their ends); figures are never cut. Narrower than every column, they drop
/// out in this order: MEM, CPU, GPU, UP, GPU MEM, GPUS, IMAGE, STATE; the name stays.
const COLUMNS: [Column; 9] = [
    Column::fit("NAME", 4, 30).ident().keep(9),
    Column::flex("IMAGE", 10).ident().keep(7),
    Column::fixed("STATE", 10).keep(8),
    Column::fixed("UP", 8).number().keep(4),
    Column::fixed("GPUS", 9).number().keep(6),
    Column::fixed("GPU MEM", 8).number().keep(5),
    Column::fixed("GPU", 5).number().keep(3),
    Column::fixed("CPU", 6).number().keep(2),
    Column::fixed("MEM", 7).number().keep(1),
];

fn container_row(c: &ContainerInfo, state: &AppState, s: &Styles) -> TableRow {
    let stats = state.docker.stats.get(&c.id);
    let up = match (c.state, c.started_at) {
        (ContainerState::Running, Some(t)) if state.now > 0 => units::age(state.now - t),
        (ContainerState::Exited, _) => c
            .exit_code
            .map_or_else(|| "-".into(), |e| format!("exit {e}")),
        _ => "-".into(),
    };
    let (gpu_mem, gpu_util, gpus_used) = gpu_use(c, state);
    TableRow::new(
        vec![
            Span::raw(c.name.clone()),
            Span::raw(c.image.clone()),
            Span::styled(c.state.to_string(), state_style(c.state, s)),
            Span::raw(up),
            Span::raw(crate::docker::gpus_summary(&c.gpus, &gpus_used)),
            Span::raw(gpu_mem),
            Span::raw(gpu_util),
            Span::raw(stats.map_or_else(|| "-".into(), |st| format!("{:.0}%", st.cpu_pct))),
            Span::raw(
                stats.map_or_else(|| "-".into(), |st| units::human_bytes(st.memory_used_bytes)),
            ),
        ],
        s.text(),
    )
}

fn state_style(state: ContainerState, s: &Styles) -> Style {
    match state {
        ContainerState::Running => s.ok(),
        ContainerState::Restarting | ContainerState::Paused | ContainerState::Removing => s.warn(),
        ContainerState::Dead => s.error(),
        _ => s.muted(),
    }
}

/// GPU memory held by the container's processes (from the GPU view, read as `gpudeck
/// containers` reads it), the mean utilisation of the GPUs they run on (per-process utilisation
/// costs milliseconds per GPU in NVML, so it is not sampled), and which GPUs those are.
fn gpu_use(c: &ContainerInfo, state: &AppState) -> (String, String, Vec<u32>) {
    let Some(data) = state.data() else {
        return ("-".into(), "-".into(), Vec::new());
    };
    let Some(used) = container_gpu_use(&data.samples, &c.id) else {
        return ("-".into(), "-".into(), Vec::new());
    };
    let utils: Vec<u32> = used
        .gpus
        .iter()
        .filter_map(|&g| data.samples.get(g as usize)?.util_gpu_pct)
        .collect();
    let util = if utils.is_empty() {
        "-".into()
    } else {
        format!("{}%", utils.iter().sum::<u32>() / utils.len() as u32)
    };
    (units::human_bytes(used.memory_bytes), util, used.gpus)
}
