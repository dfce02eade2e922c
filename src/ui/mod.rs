//! Pure renderers: the whole screen drawn from `&AppState` and the theme, plus mouse hit-testing on the same layout.

mod chrome;
mod gpu_detail;
mod gpu_error;
mod gpu_list;
mod overlays;
mod processes;
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
        Overlay::Help => overlays::help(area, buf, keymap, &styles),
        Overlay::Confirm(c) => overlays::confirm(area, buf, c, &styles),
    }
}

/// What a left click at (`column`, `row`) means on the current screen.
pub fn click(area: Rect, state: &AppState, column: u16, row: u16) -> Option<Action> {
    let screen = Screen::new(area);
    if row == screen.tabs.y {
        return chrome::tab_at(screen.tabs, column).map(Action::SelectTab);
    }
    let data = match &state.gpu {
        GpuStatus::Ready(d) => d,
        _ => return None,
    };
    match state.tab {
        Tab::Gpus => gpu_list::row_at(screen.body, state, data, row).map(Action::SelectRow),
        Tab::Processes => processes::row_at(screen.body, state, row).map(Action::SelectRow),
        Tab::Topology => None,
    }
}
