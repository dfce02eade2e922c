//! How actions on the Services tab change the state and what they ask of the collectors and the
//! outside world: follow a service's output, stop it, restart it, copy its URL or SSH line.

use super::action::{Action, Command};
use super::cursor::moved;
use super::logs_view::LogsView;
use super::logs_view_actions::LogsOutcome;
use super::services::{is_live, where_and_gpus};
use super::state::{AppState, Confirmation, Overlay};
use crate::runs::watch::RunsCommand;
use crate::runs::{RunState, ServiceKind};
use crate::services::{ServiceRow, ServicesCommand, ServicesUpdate};

impl AppState {
    /// Folds a services collector update in.
    pub fn apply_services(&mut self, update: ServicesUpdate) {
        for idle in self.services.apply(update) {
            let secs = idle.idle_seconds.unwrap_or(0);
            self.set_status(
                format!(
                    "{} has been idle {}, {}: save your work and stop it (9, then x)",
                    idle.id,
                    crate::units::run_duration(secs * 1000),
                    where_and_gpus(&idle)
                ),
                false,
            );
        }
    }

    /// Opening the tab makes the collector look at once and every few seconds, and follows the
    /// output that was open.
    pub(super) fn services_on_show(&mut self) -> Vec<Command> {
        let mut commands = vec![Command::Services(ServicesCommand::Shown(true))];
        if let (true, Some(id)) = (self.services.log_open, self.services.logs_of()) {
            commands.push(Command::Runs(RunsCommand::FollowLogs {
                id: id.to_string(),
                rank: 0,
            }));
        }
        commands
    }

    /// Leaving it: the collector looks only now and then.
    pub(super) fn services_on_hide(&mut self) -> Vec<Command> {
        vec![Command::Services(ServicesCommand::Shown(false))]
    }

    pub(super) fn update_services(&mut self, action: Action) -> Vec<Command> {
        if self.services.log_open {
            return self.update_service_logs(action);
        }
        let rows = self.services.rows.len();
        let current = self.services.selected_row().unwrap_or(0);
        if let Some(row) = moved(current, &action, rows, self.page_size) {
            self.services.selected = self.services.rows.get(row).map(|r| r.id.clone());
            return Vec::new();
        }
        if action == Action::NewRun {
            self.open_service_form();
            return Vec::new();
        }
        let Some(service) = self.services.selected_service().cloned() else {
            return Vec::new();
        };
        match action {
            Action::OpenLogs => return self.open_service_logs(&service),
            Action::StopRun => self.ask_to_stop_service(&service),
            Action::RerunRun => self.ask_to_restart_service(&service),
            Action::CopyUrl => return copy("URL", &service, &service.url),
            Action::CopySsh => return copy("SSH line", &service, &service.ssh),
            _ => {}
        }
        Vec::new()
    }

    /// The run logs view on the service's output, rank 0 (a service has one process).
    fn open_service_logs(&mut self, service: &ServiceRow) -> Vec<Command> {
        let id = service.id.clone();
        if self.services.logs_of() != Some(id.as_str()) {
            let name = format!("{id} · {}", service.kind);
            self.services.logs = Some(LogsView::new(id.clone(), name));
        }
        self.services.log_open = true;
        vec![Command::Runs(RunsCommand::FollowLogs { id, rank: 0 })]
    }

    fn update_service_logs(&mut self, action: Action) -> Vec<Command> {
        let page = self.page_size;
        let Some(logs) = self.services.logs.as_mut() else {
            self.services.log_open = false;
            return Vec::new();
        };
        match logs.apply(action, page) {
            LogsOutcome::Stay => Vec::new(),
            LogsOutcome::Save(command) => vec![command],
            LogsOutcome::Close => {
                self.services.log_open = false;
                self.services.logs = None;
                // The runs collector follows one output at a time: the Runs tab's again.
                self.follow_selected()
            }
        }
    }

    fn ask_to_stop_service(&mut self, service: &ServiceRow) {
        if self.refuse_read_only("stopping services") {
            return;
        }
        if !(is_live(service.state) || service.state == RunState::Lost) {
            self.set_status(
                format!("{} has already ended ({})", service.id, service.state),
                false,
            );
            return;
        }
        let mut details = vec![
            format!("{}, {}", service.kind.what(), where_and_gpus(service)),
            "SIGINT first, SIGTERM after 10 s, then SIGKILL".into(),
        ];
        if service.kind == ServiceKind::Notebook {
            details.push("save your notebooks first: unsaved work in its kernels is lost".into());
        }
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Stop service".into(),
            question: format!("Stop {}?", service.id),
            details,
            command: Command::StopRun {
                id: service.id.clone(),
            },
        });
    }

    fn ask_to_restart_service(&mut self, service: &ServiceRow) {
        if self.refuse_read_only("restarting services") {
            return;
        }
        let first = match is_live(service.state) || service.state == RunState::Lost {
            true => "stops it, then starts it again with the same spec: same port",
            false => "starts it again with the same spec: same port",
        };
        let mut details = vec![
            first.to_string(),
            format!("{}, {}", service.kind.what(), where_and_gpus(service)),
        ];
        if service.kind == ServiceKind::Notebook {
            details.push("the same token: the URL stays the same; its kernels do not".into());
        }
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Restart service".into(),
            question: format!("Restart {}?", service.id),
            details,
            command: Command::RestartService {
                id: service.id.clone(),
            },
        });
    }
}

/// The terminal is asked to put `text` on the clipboard; a dead service's address is still
/// worth copying (to restart and reopen it), so nothing is refused.
fn copy(what: &str, service: &ServiceRow, text: &str) -> Vec<Command> {
    vec![Command::Copy {
        what: format!("the {what} of {}", service.id),
        text: text.to_string(),
    }]
}
