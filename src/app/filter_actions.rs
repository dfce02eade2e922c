//! What the `/` filter's keys do on the list on screen, and which list's filter that is.

use super::action::{Action, Command, Tab};
use super::filter::ListFilter;
use super::state::AppState;

impl AppState {
    /// The filter of the list on screen, if a list is on screen.
    pub fn list_filter(&self) -> Option<&ListFilter> {
        match self.tab {
            Tab::Processes => Some(&self.processes.filter),
            Tab::Containers if self.docker.logs.is_none() && self.docker.inspecting.is_none() => {
                Some(&self.docker.container_filter)
            }
            Tab::Images => Some(&self.docker.image_filter),
            Tab::Compat => Some(&self.compat.filter),
            Tab::Runs if !self.runs.log_open => Some(&self.runs.filter),
            _ => None,
        }
    }

    /// Applies a filter action to the list on screen (not Processes, which keeps its own
    /// selection rule) and keeps its selection on a shown row; `None` when the action is not
    /// the filter's here.
    pub(super) fn update_list_filter(&mut self, action: &Action) -> Option<Vec<Command>> {
        let filter = match self.tab {
            Tab::Containers if self.docker.logs.is_none() && self.docker.inspecting.is_none() => {
                &mut self.docker.container_filter
            }
            Tab::Images => &mut self.docker.image_filter,
            Tab::Compat => &mut self.compat.filter,
            Tab::Runs if !self.runs.log_open => &mut self.runs.filter,
            _ => return None,
        };
        if !filter.apply(action) {
            return None;
        }
        Some(match self.tab {
            Tab::Containers | Tab::Images => {
                self.docker.keep_selection();
                Vec::new()
            }
            Tab::Compat => {
                self.compat.keep_selection();
                Vec::new()
            }
            _ => self.keep_run_selection(),
        })
    }
}
