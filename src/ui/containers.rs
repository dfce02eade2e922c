//! The Containers tab: every container with its state, GPUs, live CPU/memory and the GPU memory its processes hold.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, Widget};

use super::style::Styles;
use super::{docker_status, inspect, logs, table_offset};
use crate::app::state::AppState;
use crate::docker::{ContainerInfo, ContainerState, GpuGrant, GpuSelection};
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
    let block = Block::bordered()
        .title(Span::styled(
            format!(" Containers · {} · {} ", d.containers.len(), d.host),
            s.title(),
        ))
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
    let selected = d.selected_container_row();
    let visible = area.height.saturating_sub(3) as usize;
    let first = table_offset(selected, visible);
    let rows = d
        .containers
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .map(|(i, c)| {
            let row = container_row(c, state, s);
            if Some(i) == selected {
                row.style(s.selected())
            } else {
                row
            }
        });
    let header = Row::new([
        "NAME", "IMAGE", "STATE", "UP", "GPUS", "GPU MEM", "CPU", "MEM",
    ])
    .style(s.header());
    let widths = [
        Constraint::Min(12),
        Constraint::Min(14),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(5),
        Constraint::Length(6),
        Constraint::Length(7),
    ];
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .block(block)
        .render(area, buf);
}

fn container_row<'a>(c: &ContainerInfo, state: &AppState, s: &Styles) -> Row<'a> {
    let stats = state.docker.stats.get(&c.id);
    let up = match (c.state, c.started_at) {
        (ContainerState::Running, Some(t)) if state.now > 0 => units::age(state.now - t),
        (ContainerState::Exited, _) => c
            .exit_code
            .map_or_else(|| "-".into(), |e| format!("exit {e}")),
        _ => "-".into(),
    };
    let (gpu_mem, gpu_util, gpus_used) = gpu_use(c, state);
    Row::new(vec![
        Cell::from(c.name.clone()),
        Cell::from(c.image.clone()),
        Cell::from(Span::styled(c.state.to_string(), state_style(c.state, s))),
        Cell::from(up),
        Cell::from(grant_summary(&c.gpus, &gpus_used)),
        Cell::from(gpu_mem),
        Cell::from(gpu_util),
        Cell::from(stats.map_or_else(|| "-".into(), |st| format!("{:.0}%", st.cpu_pct))),
        Cell::from(stats.map_or_else(|| "-".into(), |st| units::human_bytes(st.memory_used_bytes))),
    ])
    .style(s.text())
}

fn state_style(state: ContainerState, s: &Styles) -> Style {
    match state {
        ContainerState::Running => s.ok(),
        ContainerState::Restarting | ContainerState::Paused | ContainerState::Removing => s.warn(),
        ContainerState::Dead => s.error(),
        _ => s.muted(),
    }
}

/// GPU memory held by the container's processes (from the GPU view), the mean utilisation of the
/// GPUs they run on (per-process utilisation costs milliseconds per GPU in NVML, so it is not
/// sampled), and which GPUs those are.
fn gpu_use(c: &ContainerInfo, state: &AppState) -> (String, String, Vec<u32>) {
    let Some(data) = state.data() else {
        return ("-".into(), "-".into(), Vec::new());
    };
    let procs: Vec<_> = data
        .samples
        .iter()
        .flat_map(|s| s.processes.iter())
        .filter(|p| p.container.as_ref().is_some_and(|r| r.id == c.id))
        .collect();
    if procs.is_empty() {
        return ("-".into(), "-".into(), Vec::new());
    }
    let bytes: u64 = procs.iter().filter_map(|p| p.used_memory_bytes).sum();
    let mut gpus: Vec<u32> = procs.iter().map(|p| p.gpu_index).collect();
    gpus.sort_unstable();
    gpus.dedup();
    let utils: Vec<u32> = gpus
        .iter()
        .filter_map(|&g| data.samples.get(g as usize)?.util_gpu_pct)
        .collect();
    let util = if utils.is_empty() {
        "-".into()
    } else {
        format!("{}%", utils.iter().sum::<u32>() / utils.len() as u32)
    };
    (units::human_bytes(bytes), util, gpus)
}

/// What GPUs a container was given, shortly; the GPUs its processes are on when nothing was granted.
pub fn grant_summary(grants: &[GpuGrant], in_use: &[u32]) -> String {
    let selection = |sel: &GpuSelection| match sel {
        GpuSelection::All => "all".to_string(),
        GpuSelection::Count(n) => format!("{n} any"),
        GpuSelection::Devices(d) => d.join(","),
        GpuSelection::None => "none".to_string(),
    };
    let parts: Vec<String> = grants
        .iter()
        .map(|g| match g {
            GpuGrant::DeviceRequest { devices } => selection(devices),
            GpuGrant::Cdi { devices } => format!("cdi:{}", devices.len()),
            GpuGrant::Env { devices } => format!("env:{}", selection(devices)),
        })
        .collect();
    if parts.is_empty() && !in_use.is_empty() {
        let list: Vec<String> = in_use.iter().map(u32::to_string).collect();
        return format!("uses {}", list.join(","));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}
