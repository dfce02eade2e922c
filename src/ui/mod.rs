//! Pure renderers: the whole screen drawn from `&AppState` and the theme, plus mouse hit-testing on the same layout.

mod chrome;
mod compat;
mod containers;
mod docker_status;
mod doctor;
mod fastchart;
mod fastline;
mod gpu_detail;
mod gpu_error;
mod gpu_list;
mod images;
mod inspect;
mod layout;
mod logs;
mod messages;
mod overlays;
mod process_view;
mod processes;
mod pulls;
mod run_detail;
mod run_form;
mod runs;
mod scroll;
mod service_detail;
mod service_form;
mod services;
mod shell_dialog;
pub mod style;
pub mod table;
mod topology;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::app::action::{Action, Tab};
use crate::app::keymap::Binding;
use crate::app::state::{AppState, GpuStatus, Overlay};
use crate::config::Theme;
pub use layout::Screen;
use scroll::table_row_at;
use style::Styles;

/// The most the open help or messages view can be scrolled on a screen of this size.
pub fn overlay_scroll_limit(area: Rect, state: &AppState, keymap: &[Binding]) -> usize {
    let theme = crate::config::Theme::monochrome();
    let styles = Styles::new(&theme);
    match state.overlay {
        Overlay::Help => overlays::help_scroll_limit(area, state, keymap, &styles),
        Overlay::Messages => messages::scroll_limit(area, state, &styles),
        _ => 0,
    }
}

/// The furthest the Doctor tab's detail pane scrolls on a screen of `area`.
pub fn doctor_detail_scroll_limit(area: Rect, state: &AppState) -> usize {
    doctor::detail_scroll_limit(area, state)
}

/// The furthest the Topology tab's links pane scrolls on a screen of `area`.
pub fn links_scroll_limit(area: Rect, state: &AppState) -> usize {
    let body = Screen::for_state(area, state).body;
    state
        .data()
        .map_or(0, |data| topology::links_scroll_limit(body, state, data))
}

/// Draws one frame.
pub fn render(area: Rect, buf: &mut Buffer, state: &AppState, theme: &Theme, keymap: &[Binding]) {
    let styles = Styles::new(theme);
    let screen = Screen::for_state(area, state);
    chrome::header(screen.header, buf, state, &styles);
    chrome::tabs(screen.tabs, buf, state, &styles);
    match (&state.gpu, state.tab) {
        (_, Tab::Containers) => containers::render(screen.body, buf, state, &styles),
        (_, Tab::Images) => images::render(screen.body, buf, state, &styles),
        (_, Tab::Compat) => compat::render(screen.body, buf, state, &styles),
        (_, Tab::Doctor) => doctor::render(screen.body, buf, state, &styles),
        (_, Tab::Runs) => runs::render(screen.body, buf, state, &styles),
        (_, Tab::Services) => services::render(screen.body, buf, state, &styles),
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
    messages::line(screen.message, buf, state, &styles);
    chrome::footer(screen.footer, buf, state, keymap, &styles);
    match &state.overlay {
        Overlay::None => {}
        Overlay::Help => overlays::help(area, buf, state, keymap, &styles),
        Overlay::Messages => messages::view(area, buf, state, &styles),
        Overlay::Confirm(c) => overlays::confirm(area, buf, c, &styles),
        Overlay::RunForm(f) => {
            let verdict = state.local_assessment(&f.image);
            run_form::render(area, buf, f, verdict, &styles)
        }
        Overlay::ServiceForm(f) => service_form::render(area, buf, f, &styles),
        Overlay::Shell(d) => shell_dialog::render(area, buf, d, &state.compat, &styles),
        Overlay::Pull(p) => {
            pulls::picker(area, buf, p, &state.docker.catalog, &state.compat, &styles)
        }
    }
}

/// What a left click at (`column`, `row`) means on the current screen.
pub fn click(area: Rect, state: &AppState, column: u16, row: u16) -> Option<Action> {
    let screen = Screen::for_state(area, state);
    if row == screen.tabs.y {
        return chrome::tab_at(screen.tabs, column, state.tab).map(Action::SelectTab);
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
    if state.tab == Tab::Services {
        return services::row_at(screen.body, state, row).map(Action::SelectRow);
    }
    let data = match &state.gpu {
        GpuStatus::Ready(d) => d,
        _ => return None,
    };
    match state.tab {
        Tab::Containers | Tab::Images | Tab::Compat | Tab::Doctor | Tab::Runs | Tab::Services => {
            None
        }
        Tab::Gpus => gpu_list::row_at(screen.body, state, data, row).map(Action::SelectRow),
        Tab::Processes => processes::row_at(screen.body, state, row).map(Action::SelectRow),
        Tab::Topology => None,
    }
}

fn docker_click(body: Rect, state: &AppState, row: u16) -> Option<Action> {
    if state.docker.logs.is_some() || state.docker.inspecting.is_some() {
        return None;
    }
    let (selected, len) = match state.tab {
        Tab::Images => (
            state.docker.selected_image_shown(),
            state.docker.shown_images().len(),
        ),
        _ => (
            state.docker.selected_container_shown(),
            state.docker.shown_containers().len(),
        ),
    };
    let body = match state.tab {
        Tab::Images => images::table_area(body, state),
        _ => body,
    };
    table_row_at(body, selected, len, row).map(Action::SelectRow)
}
