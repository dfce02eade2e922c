//! How actions on the Containers and Images tabs change the state and what they ask of Docker.

use super::action::{Action, Command, DockerCommand, Tab};
use super::docker::EngineStatus;
use super::logs_view_actions::LogsOutcome;
use super::state::{AppState, Confirmation, Overlay};
use crate::docker::update::DockerUpdate;
use crate::docker::ContainerState;

/// Rows around the selection whose live stats are streamed.
const STATS_WINDOW: usize = 40;

impl AppState {
    /// Applies a Docker action; returns the commands for the Docker collector.
    pub(super) fn update_docker(&mut self, action: Action) -> Vec<Command> {
        if self.docker.logs.is_some() && self.tab == Tab::Containers {
            return self.update_logs(action);
        }
        match action {
            Action::Up => self.move_docker_selection(-1),
            Action::Down => self.move_docker_selection(1),
            Action::PageUp => self.move_docker_selection(-(self.page_size as isize)),
            Action::PageDown => self.move_docker_selection(self.page_size as isize),
            Action::Top => self.move_docker_selection(isize::MIN / 2),
            Action::Bottom => self.move_docker_selection(isize::MAX / 2),
            Action::SelectRow(row) => {
                match self.tab {
                    Tab::Images => self.docker.select_image_row(row),
                    _ => self.docker.select_container_row(row),
                }
                Vec::new()
            }
            Action::StartContainer => self.container_command(DockerCommand::Start, false),
            Action::StopContainer => self.container_command(DockerCommand::Stop, true),
            Action::RestartContainer => self.container_command(DockerCommand::Restart, true),
            Action::RemoveSelected => {
                self.ask_to_remove();
                Vec::new()
            }
            Action::OpenLogs => self.open_logs(),
            Action::OpenPullPicker => {
                self.open_pull_picker();
                Vec::new()
            }
            Action::CancelPull => self.cancel_pull(),
            Action::RetryPull => self.retry_pull(),
            Action::OpenShell => {
                self.open_shell_dialog();
                Vec::new()
            }
            Action::ReenterShell => {
                self.reenter_selected_shell();
                Vec::new()
            }
            Action::OpenInspect => self.open_inspect(),
            // Esc clears the filter when there is no inspect view to close.
            Action::CloseView | Action::Cancel
                if self.docker.inspecting.is_none() && self.tab == Tab::Containers =>
            {
                self.docker.container_filter.apply(&Action::FilterClear);
                self.docker.keep_selection();
                Vec::new()
            }
            Action::CloseView | Action::Cancel => {
                self.docker.details = None;
                self.docker.inspecting = None;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn update_logs(&mut self, action: Action) -> Vec<Command> {
        let page = self.page_size;
        let Some(logs) = self.docker.logs.as_mut() else {
            return Vec::new();
        };
        match logs.apply(action, page) {
            LogsOutcome::Stay => Vec::new(),
            LogsOutcome::Save(command) => vec![command],
            LogsOutcome::Close => {
                self.docker.logs = None;
                vec![Command::Docker(DockerCommand::CloseLogs)]
            }
        }
    }

    fn move_docker_selection(&mut self, delta: isize) -> Vec<Command> {
        let (row, len) = match self.tab {
            Tab::Images => (
                self.docker.selected_image_shown(),
                self.docker.shown_images().len(),
            ),
            _ => (
                self.docker.selected_container_shown(),
                self.docker.shown_containers().len(),
            ),
        };
        if len == 0 {
            return Vec::new();
        }
        let target = (row.unwrap_or(0) as isize + delta).clamp(0, len as isize - 1) as usize;
        match self.tab {
            Tab::Images => self.docker.select_image_row(target),
            _ => self.docker.select_container_row(target),
        }
        Vec::new()
    }

    fn container_command(
        &mut self,
        make: fn(String) -> DockerCommand,
        confirm: bool,
    ) -> Vec<Command> {
        if self.read_only {
            self.set_status("read-only mode: container actions are disabled", true);
            return Vec::new();
        }
        let Some(c) = self.docker.selected_container_info().cloned() else {
            self.set_status("no container selected", true);
            return Vec::new();
        };
        let command = make(c.id.clone());
        let verb = match command {
            DockerCommand::Start(_) => "Start",
            DockerCommand::Stop(_) => "Stop",
            _ => "Restart",
        };
        if !confirm {
            self.set_status(format!("starting {}…", c.name), false);
            return vec![Command::Docker(command)];
        }
        self.overlay = Overlay::Confirm(Confirmation {
            title: format!("{verb} container"),
            question: format!("{verb} container {}?", c.name),
            details: vec![
                format!("image {} · {}", c.image, c.state),
                "Processes in it get SIGTERM, then SIGKILL after 10 seconds.".into(),
            ],
            command: Command::Docker(command),
        });
        Vec::new()
    }

    fn ask_to_remove(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: removing is disabled", true);
            return;
        }
        let confirmation = match self.tab {
            Tab::Images => self.docker.selected_image_info().map(|i| Confirmation {
                title: "Remove image".into(),
                question: format!(
                    "Remove image {}?",
                    i.tags.first().cloned().unwrap_or_else(|| i.id.clone())
                ),
                details: vec![format!(
                    "{} · all its tags: {}",
                    crate::units::human_bytes(i.size_bytes),
                    if i.tags.is_empty() {
                        "none".to_string()
                    } else {
                        i.tags.join(", ")
                    }
                )],
                command: Command::Docker(DockerCommand::RemoveImage(i.id.clone())),
            }),
            _ => self.docker.selected_container_info().map(|c| Confirmation {
                title: "Remove container".into(),
                question: format!("Remove container {}?", c.name),
                details: vec![
                    format!("image {} · {}", c.image, c.state),
                    if c.state == ContainerState::Running {
                        "It is running: it will be killed first. Its writable layer is lost.".into()
                    } else {
                        "Its writable layer (files not in a volume) is lost.".into()
                    },
                ],
                command: Command::Docker(DockerCommand::RemoveContainer(c.id.clone())),
            }),
        };
        match confirmation {
            Some(c) => self.overlay = Overlay::Confirm(c),
            None => self.set_status("nothing selected", true),
        }
    }

    fn open_logs(&mut self) -> Vec<Command> {
        if self.tab != Tab::Containers {
            return Vec::new();
        }
        let Some(c) = self.docker.selected_container_info() else {
            return Vec::new();
        };
        let (id, name) = (c.id.clone(), c.name.clone());
        self.docker.logs = Some(super::docker::LogsView::new(id.clone(), name));
        vec![Command::Docker(DockerCommand::OpenLogs(id))]
    }

    fn open_inspect(&mut self) -> Vec<Command> {
        let Some(id) = self.docker.selected_container_info().map(|c| c.id.clone()) else {
            return Vec::new();
        };
        self.docker.details = None;
        self.docker.inspecting = Some(id.clone());
        vec![Command::Docker(DockerCommand::Inspect(id))]
    }

    /// Asks for stats of the running containers near the selection when that set changed, and
    /// for none while the Containers tab is not shown (streams cost CPU here and in the engine).
    pub(super) fn watch_stats(&mut self) -> Vec<Command> {
        let shown = self.tab == Tab::Containers && self.docker.is_ready();
        let targets = if shown {
            self.docker.stats_targets(STATS_WINDOW)
        } else {
            Vec::new()
        };
        if targets == self.docker.watched {
            return Vec::new();
        }
        self.docker.watched = targets.clone();
        vec![Command::Docker(DockerCommand::WatchStats(targets))]
    }

    /// Folds a Docker collector update into the state; may ask for stats of newly shown rows.
    pub fn apply_docker(&mut self, update: DockerUpdate) -> Vec<Command> {
        if self.apply_pull(&update) {
            return Vec::new();
        }
        // The verdicts depend on the engine's runtimes and the local images.
        let refresh_compat = matches!(
            update,
            DockerUpdate::Connected { .. }
                | DockerUpdate::Unavailable { .. }
                | DockerUpdate::Images(_)
        );
        let d = &mut self.docker;
        match update {
            DockerUpdate::Connecting { host } => {
                d.host = host;
                d.status = EngineStatus::Connecting;
                d.containers_listed = false;
                d.images_listed = false;
            }
            DockerUpdate::Unavailable {
                host,
                title,
                message,
                fix,
            } => {
                d.host = host;
                d.status = EngineStatus::Unavailable {
                    title,
                    message,
                    fix,
                };
                d.containers.clear();
                d.images.clear();
                d.stats.clear();
                d.watched.clear();
                d.containers_listed = false;
                d.images_listed = false;
            }
            DockerUpdate::Connected { host, info } => {
                d.host = host;
                d.status = EngineStatus::Ready(info);
            }
            DockerUpdate::Containers(list) => d.set_containers(list),
            DockerUpdate::ContainerChanged(info) => d.upsert_container(*info),
            DockerUpdate::ContainerRemoved(id) => {
                if let Some(logs) = d.logs.as_mut().filter(|l| l.container == id) {
                    logs.ended = Some("the container was removed".into());
                }
                d.remove_container(&id);
            }
            DockerUpdate::Images(list) => d.set_images(list),
            DockerUpdate::Stats(id, stats) => {
                d.stats.insert(id, stats);
            }
            DockerUpdate::LogLines { container, lines } => {
                if let Some(logs) = d.logs.as_mut().filter(|l| l.container == container) {
                    logs.push(lines);
                }
            }
            DockerUpdate::LogsEnded { container, reason } => {
                if let Some(logs) = d.logs.as_mut().filter(|l| l.container == container) {
                    logs.ended = Some(reason);
                }
            }
            DockerUpdate::Details(details) => {
                if d.inspecting.as_deref() == Some(details.info.id.as_str()) {
                    let mut details = *details;
                    // Hidden before it is kept, so no renderer can show a secret by mistake.
                    details.env = details
                        .env
                        .iter()
                        .map(|line| self.secrets.redact_assignment(line))
                        .collect();
                    d.details = Some(details);
                }
            }
            DockerUpdate::PullStarted { .. }
            | DockerUpdate::PullProgress { .. }
            | DockerUpdate::PullFinished { .. } => {}
            DockerUpdate::ActionDone { what, result } => match result {
                Ok(()) => self.set_status(what, false),
                Err(e) => self.set_status(format!("{what}: {e}"), true),
            },
        }
        if refresh_compat {
            self.refresh_compat();
        }
        self.watch_stats()
    }
}
