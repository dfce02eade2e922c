//! How actions on the Runs tab change the state and what they ask of the runs collector and the
//! outside world: follow the selected run, stop it, run it again, kill what it left on its GPUs.

use super::action::{Action, Command};
use super::cursor::moved;
use super::logs_view::LogsView;
use super::logs_view_actions::LogsOutcome;
use super::state::{AppState, Confirmation, Overlay};
use crate::gpu::GpuProcess;
use crate::host::{KillSignal, ProcessTarget};
use crate::runs::watch::{RunsCommand, RunsUpdate};
use crate::runs::RunState;
use crate::units;

impl AppState {
    /// Folds a runs collector update in; returns what to ask of the collector next.
    pub fn apply_runs(&mut self, update: RunsUpdate) -> Vec<Command> {
        // One output is followed at a time: a service's, when the Services tab opened it.
        let update = match update {
            RunsUpdate::Log(chunk) if self.services.logs_of() == Some(chunk.id.as_str()) => {
                self.services.push_log(chunk);
                return Vec::new();
            }
            other => other,
        };
        let newly_selected = self.runs.apply(update);
        if newly_selected && self.tab == super::action::Tab::Runs {
            return self.follow_selected();
        }
        Vec::new()
    }

    /// Opening the tab follows the selected run.
    pub(super) fn runs_on_show(&mut self) -> Vec<Command> {
        let mut commands = vec![Command::Runs(RunsCommand::Refresh)];
        commands.extend(self.follow_selected());
        commands
    }

    /// Leaving it stops reading the selected run's files.
    pub(super) fn runs_on_hide(&mut self) -> Vec<Command> {
        vec![Command::Runs(RunsCommand::Focus(None))]
    }

    pub(super) fn follow_selected(&mut self) -> Vec<Command> {
        let Some(id) = self.runs.selected.clone() else {
            return vec![Command::Runs(RunsCommand::Focus(None))];
        };
        vec![
            Command::Runs(RunsCommand::Focus(Some(id.clone()))),
            Command::Runs(RunsCommand::FollowLogs {
                id,
                rank: self.runs.log_rank,
            }),
        ]
    }

    /// After the filter changed: the first shown run when it hid the selected one (none when
    /// it hides them all), and the commands to follow the new selection.
    pub(super) fn keep_run_selection(&mut self) -> Vec<Command> {
        self.runs.refilter();
        if self.runs.selected_shown().is_some() {
            return Vec::new();
        }
        let first = self.runs.shown().first().copied();
        let id = first.map(|i| self.runs.runs[i].id.clone());
        if id == self.runs.selected {
            return Vec::new();
        }
        self.runs.select(id);
        self.follow_selected()
    }

    pub(super) fn update_runs(&mut self, action: Action) -> Vec<Command> {
        if self.runs.log_open {
            return self.update_run_logs(action);
        }
        let shown = self.runs.shown();
        let current = self.runs.selected_shown().unwrap_or(0);
        if let Some(row) = moved(current, &action, shown.len(), self.page_size) {
            let id = (shown.get(row)).map(|&i| self.runs.runs[i].id.clone());
            if id.is_none() || id == self.runs.selected {
                return Vec::new();
            }
            self.runs.select(id);
            return self.follow_selected();
        }
        match action {
            Action::OpenLogs if self.runs.selected.is_some() => self.runs.log_open = true,
            Action::CycleGraph => self.runs.chart = self.runs.chart.next(),
            Action::StopRun => self.ask_to_stop_run(),
            Action::NewRun => self.open_run_form(),
            Action::RerunRun => self.ask_to_rerun(),
            Action::KillLeftovers => self.ask_to_kill_leftovers(),
            Action::PrevRank | Action::NextRank => return self.switch_rank(&action),
            _ => {}
        }
        Vec::new()
    }

    fn update_run_logs(&mut self, action: Action) -> Vec<Command> {
        if matches!(action, Action::PrevRank | Action::NextRank) {
            return self.switch_rank(&action);
        }
        let page = self.page_size;
        let Some(logs) = self.runs.logs.as_mut() else {
            self.runs.log_open = false;
            return Vec::new();
        };
        match logs.apply(action, page) {
            LogsOutcome::Stay => Vec::new(),
            LogsOutcome::Save(command) => vec![command],
            LogsOutcome::Close => {
                self.runs.log_open = false;
                // Back under the detail, the tail follows again.
                if let Some(logs) = self.runs.logs.as_mut() {
                    logs.follow = true;
                    logs.scroll = 0;
                    logs.search.clear();
                }
                Vec::new()
            }
        }
    }

    fn switch_rank(&mut self, action: &Action) -> Vec<Command> {
        let Some(run) = self.runs.selected_run() else {
            return Vec::new();
        };
        let ranks = run.ranks.max(1);
        let id = run.id.clone();
        let rank = match action {
            Action::NextRank => (self.runs.log_rank + 1) % ranks,
            _ => (self.runs.log_rank + ranks - 1) % ranks,
        };
        if rank == self.runs.log_rank {
            return Vec::new();
        }
        self.runs.log_rank = rank;
        // An empty view at once, so the logs stay open while the rank's lines are read.
        self.runs.logs = Some(LogsView::new(id.clone(), format!("{id} · rank {rank}")));
        self.runs.skipped_bytes = 0;
        vec![Command::Runs(RunsCommand::FollowLogs { id, rank })]
    }

    fn ask_to_stop_run(&mut self) {
        if self.refuse_read_only("stopping runs") {
            return;
        }
        let Some(run) = self.runs.selected_run() else {
            return;
        };
        if !matches!(
            run.state,
            RunState::Running | RunState::Starting | RunState::Lost
        ) {
            self.set_status(
                format!("{} has already ended ({})", run.id, run.state),
                false,
            );
            return;
        }
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Stop run".into(),
            question: format!("Stop {}?", run.id),
            details: vec![
                format!(
                    "{} on GPU {}",
                    units::plural(run.ranks, "rank"),
                    gpu_list(&run.gpus)
                ),
                "SIGINT first (training loops save a checkpoint), SIGTERM after 10 s, then SIGKILL"
                    .into(),
            ],
            command: Command::StopRun { id: run.id.clone() },
        });
    }

    fn ask_to_rerun(&mut self) {
        if self.refuse_read_only("starting runs") {
            return;
        }
        let Some(run) = self.runs.selected_run() else {
            return;
        };
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Run again".into(),
            question: format!("Start {} again with the same spec?", run.name),
            details: vec![
                format!("a new run on GPU selection of {}", run.id),
                "pre-flight checks the GPUs again; busy GPUs are reported".into(),
            ],
            command: Command::RerunRun { id: run.id.clone() },
        });
    }

    /// Offers to kill the selected run's own processes still on the GPUs it ended on: in its
    /// process group or session or its user's, started within its lifetime; another user's job
    /// sharing the GPU is named but never offered.
    fn ask_to_kill_leftovers(&mut self) {
        if self.refuse_read_only("killing processes") {
            return;
        }
        let (Some(alert), Some(owner)) = (
            self.runs.held.clone(),
            self.runs.selected_run().map(|r| r.owner),
        ) else {
            self.set_status("no GPU memory is held after the selected run ended", false);
            return;
        };
        let on_gpus: Vec<GpuProcess> = self.data().map_or_else(Vec::new, |d| {
            d.samples
                .iter()
                .flat_map(|s| s.processes.iter())
                .filter(|p| alert.gpus.contains(&p.gpu_index))
                .cloned()
                .collect()
        });
        let (procs, others): (Vec<_>, Vec<_>) = on_gpus
            .into_iter()
            .partition(|p| owner.owns(p.identity.as_ref()));
        if procs.is_empty() {
            let text = if others.is_empty() {
                "no processes are left on those GPUs".to_string()
            } else {
                format!(
                    "GPU {}: not this run's, left alone: {}",
                    gpu_list(&alert.gpus),
                    describe_others(&others)
                )
            };
            self.set_status(text, !others.is_empty());
            return;
        }
        let targets: Vec<ProcessTarget> = procs.iter().map(GpuProcess::target).collect();
        let signal = if procs.iter().all(|p| self.terminated.contains(p)) {
            KillSignal::Kill
        } else {
            KillSignal::Term
        };
        let mut details: Vec<String> = procs.iter().map(describe_leftover).collect();
        if !others.is_empty() {
            details.push(format!(
                "not offered, not this run's: {}",
                describe_others(&others)
            ));
        }
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Kill leftover processes".into(),
            question: format!(
                "Send {} to {} of this run still on GPU {}?",
                if signal == KillSignal::Kill {
                    "SIGKILL"
                } else {
                    "SIGTERM"
                },
                units::plural(targets.len(), "process"),
                gpu_list(&alert.gpus)
            ),
            details,
            command: Command::SignalProcesses { targets, signal },
        });
    }

    pub(super) fn refuse_read_only(&mut self, what: &str) -> bool {
        if self.read_only {
            self.set_status(format!("read-only mode: {what} is disabled"), true);
        }
        self.read_only
    }
}

fn gpu_list(gpus: &[u32]) -> String {
    let list: Vec<String> = gpus.iter().map(u32::to_string).collect();
    list.join(",")
}

fn describe_leftover(p: &GpuProcess) -> String {
    format!(
        "GPU {} · pid {} · {} · {} · {}",
        p.gpu_index,
        p.pid,
        p.user.as_deref().unwrap_or("?"),
        p.used_memory_bytes.map_or("-".into(), units::human_bytes),
        p.command.as_deref().unwrap_or("?")
    )
}

/// "pid 812 (alice)" for the first two processes left alone, and how many more.
fn describe_others(others: &[GpuProcess]) -> String {
    let mut list: Vec<String> = others
        .iter()
        .take(2)
        .map(|p| format!("pid {} ({})", p.pid, p.user.as_deref().unwrap_or("?")))
        .collect();
    if others.len() > 2 {
        list.push(format!("{} more", others.len() - 2));
    }
    list.join(", ")
}
