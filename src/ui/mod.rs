//! Pure renderers: the whole screen drawn from `&AppState` and the theme, plus mouse hit-testing on the same layout.

mod chrome;
mod compat;
mod containers;
mod docker_status;
mod doctor;
mod gpu_detail;
mod gpu_error;
mod gpu_list;
mod images;
mod inspect;
mod logs;
mod overlays;
mod process_view;
mod processes;
mod pulls;
mod run_detail;
mod run_form;
mod runs;
mod shell_dialog;
pub mod style;
mod topology;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::app::action::{Action, Tab};
use crate::app::keymap::Binding;
use crate::app::state::{AppState, GpuStatus, Overlay};
use crate::config::Theme;
use style::Styles;

/// The fixed regions of the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Screen {
    pub header: Rect,
    pub tabs: Rect,
    pub body: Rect,
    pub footer: Rect,
}

impl Screen {
    pub fn new(area: Rect) -> Self {
        let line = |y: u16| Rect::new(area.x, y, area.width, 1.min(area.height));
        let body_height = area.height.saturating_sub(3);
        Self {
            header: line(area.y),
            tabs: line(area.y + 1.min(area.height)),
            body: Rect::new(area.x, area.y + 2.min(area.height), area.width, body_height),
            footer: line(area.y + area.height.saturating_sub(1)),
        }
    }
}

/// Draws one frame.
pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, theme: &Theme, keymap: &[Binding]) {
    let styles = Styles::new(theme);
    let screen = Screen::new(area);
    chrome::header(screen.header, buf, state, &styles);
    chrome::tabs(screen.tabs, buf, state, &styles);
    match (&state.gpu, state.tab) {
        (_, Tab::Containers) => containers::render(screen.body, buf, state, &styles),
        (_, Tab::Images) => images::render(screen.body, buf, state, &styles),
        (_, Tab::Compat) => compat::render(screen.body, buf, state, &styles),
        (_, Tab::Doctor) => doctor::render(screen.body, buf, state, &styles),
        (_, Tab::Runs) => runs::render(screen.body, buf, state, &styles),
        (GpuStatus::Loading, _) => gpu_error::loading(screen.body, buf, &styles),
        (GpuStatus::Failed(e), _) => gpu_error::render(screen.body, buf, e, &styles),
        (GpuStatus::Ready(data), Tab::Gpus) => {
            gpu_list::render_tab(screen.body, buf, state, data, &styles)
        }
        (GpuStatus::Ready(_), Tab::Processes) => {
            processes::render(screen.body, buf, state, &styles)
        }
        (GpuStatus::Ready(data), Tab::Topology) => {
            topology::render(screen.body, buf, state, data, &styles)
        }
    }
    chrome::footer(screen.footer, buf, state, keymap, &styles);
    match &state.overlay {
        Overlay::None => {}
        Overlay::Help => overlays::help(area, buf, state, keymap, &styles),
        Overlay::Confirm(c) => overlays::confirm(area, buf, c, &styles),
        Overlay::RunForm(f) => run_form::render(area, buf, f, &styles),
        Overlay::Shell(d) => shell_dialog::render(area, buf, d, &state.compat, &styles),
        Overlay::Pull(p) => {
            pulls::picker(area, buf, p, &state.docker.catalog, &state.compat, &styles)
        }
    }
}

/// What a left click at (`column`, `row`) means on the current screen.
pub fn click(area: Rect, state: &AppState, column: u16, row: u16) -> Option<Action> {
    let screen = Screen::new(area);
    if row == screen.tabs.y {
        return chrome::tab_at(screen.tabs, column).map(Action::SelectTab);
    }
    if matches!(state.tab, Tab::Containers | Tab::Images) {
        return docker_click(screen.body, state, row);
    }
    if state.tab == Tab::Compat {
        return compat::row_at(screen.body, state, row).map(Action::SelectRow);
    }
    if state.tab == Tab::Doctor {
        return doctor::row_at(screen.body, state, row).map(Action::SelectRow);
    }
    if state.tab == Tab::Runs {
        return runs::row_at(screen.body, state, row).map(Action::SelectRow);
    }
    let data = match &state.gpu {
        GpuStatus::Ready(d) => d,
        _ => return None,
    };
    match state.tab {
        Tab::Containers | Tab::Images | Tab::Compat | Tab::Doctor | Tab::Runs => None,
        Tab::Gpus => gpu_list::row_at(screen.body, state, data, row).map(Action::SelectRow),
        Tab::Processes => processes::row_at(screen.body, state, row).map(Action::SelectRow),
        Tab::Topology => None,
    }
}

fn docker_click(body: Rect, state: &AppState, row: u16) -> Option<Action> {
    if state.docker.logs.is_some() || state.docker.inspecting.is_some() {
        return None;
    }
    let selected = match state.tab {
        Tab::Images => state.docker.selected_image_row(),
        _ => state.docker.selected_container_row(),
    };
    let len = match state.tab {
        Tab::Images => state.docker.images.len(),
        _ => state.docker.containers.len(),
    };
    table_row_at(body, selected, len, row).map(Action::SelectRow)
}

/// The row of a bordered table with a header line under a click, given the scroll rule of
/// `table_offset`.
pub(crate) fn table_row_at(
    area: Rect,
    selected: Option<usize>,
    len: usize,
    row: u16,
) -> Option<usize> {
    let first = area.y + 2;
    if row < first || row >= area.y + area.height.saturating_sub(1) {
        return None;
    }
    let visible = area.height.saturating_sub(3) as usize;
    let index = table_offset(selected, visible) + (row - first) as usize;
    (index < len).then_some(index)
}

/// First row shown so that the selected row is on screen.
pub(crate) fn table_offset(selected: Option<usize>, visible: usize) -> usize {
    selected.map_or(0, |s| s.saturating_sub(visible.saturating_sub(1)))
}
