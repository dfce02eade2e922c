//! What the Processes tab's keys do: sort, filter, open a process's view, and kill with a
//! question first; and how a signal's outcome comes back.

use super::action::{Action, Command, Tab};
use super::gpus::offset;
use super::state::{AppState, Confirmation, Overlay};
use crate::gpu::GpuProcess;
use crate::host::{KillSignal, ProcessTarget};

impl AppState {
    /// All processes on all GPUs as the processes tab lists them.
    pub fn visible_processes(&self) -> Vec<&GpuProcess> {
        match self.data() {
            Some(d) => self
                .processes
                .visible(d.samples.iter().flat_map(|s| s.processes.iter())),
            None => Vec::new(),
        }
    }

    /// The selected row of the processes list.
    pub fn selected_process_row(&self) -> Option<usize> {
        let pid = self.processes.selected_pid?;
        self.visible_processes().iter().position(|p| p.pid == pid)
    }

    /// Records the outcome of a signal sent on the user's behalf.
    pub fn apply_signal_result(
        &mut self,
        target: ProcessTarget,
        signal: KillSignal,
        result: Result<(), String>,
    ) {
        let pid = target.pid;
        match result {
            Ok(()) => {
                if signal == KillSignal::Term {
                    self.terminated.mark(target);
                }
                let name = signal_name(signal);
                self.set_status(format!("sent {name} to process {pid}"), false);
            }
            Err(e) => self.set_status(e, true),
        }
    }

    /// The processes list and a process's view; sorting, filtering and killing work from the
    /// GPUs tabs too (they come here from there).
    pub(super) fn update_processes(&mut self, action: Action) -> Vec<Command> {
        let on_tab = self.tab == Tab::Processes;
        match action {
            Action::OpenProcess if on_tab => {
                self.processes.view_pid = self.processes.selected_pid;
            }
            // The view stays on its process: moving would select another behind it.
            Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom
            | Action::SelectRow(_)
                if self.processes.view_pid.is_some() && on_tab => {}
            Action::CloseView if on_tab => self.processes.view_pid = None,
            Action::CycleSort => self.processes.next_sort(),
            Action::ReverseSort => self.processes.descending = !self.processes.descending,
            Action::StartFilter
            | Action::FilterInput(_)
            | Action::FilterBackspace
            | Action::FilterDone
            | Action::FilterClear => {
                self.processes.filter.apply(&action);
            }
            Action::KillSelected => self.ask_to_kill(),
            Action::Up => self.move_process_selection(-1),
            Action::Down => self.move_process_selection(1),
            Action::PageUp => self.move_process_selection(-(self.page_size as isize)),
            Action::PageDown => self.move_process_selection(self.page_size as isize),
            Action::Top => self.move_process_selection(isize::MIN / 2),
            Action::Bottom => self.move_process_selection(isize::MAX / 2),
            Action::SelectRow(row) => self.select_process_row(row),
            Action::Confirm | Action::Cancel => self.status = None,
            // Container and image actions only mean something on their tabs.
            _ => {}
        }
        // Filtering or re-sorting may have hidden the selected process: select one that is shown.
        self.keep_process_selection();
        Vec::new()
    }

    fn ask_to_kill(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: killing processes is disabled", true);
            return;
        }
        if let Some(pid) = self
            .processes
            .view_pid
            .filter(|_| self.tab == Tab::Processes)
        {
            // The view's process, never whichever row the list selected after it exited.
            if !self.visible_processes().iter().any(|p| p.pid == pid) {
                let why = format!("process {pid} has exited; nothing to kill (Esc: the list)");
                self.set_status(why, true);
                return;
            }
        }
        let target = match self.tab {
            Tab::Processes => self
                .selected_process_row()
                .and_then(|row| self.visible_processes().get(row).map(|p| (*p).clone())),
            _ => None,
        };
        let Some(p) = target else {
            self.set_status("select a process in the Processes tab first", true);
            return;
        };
        if p.identity.is_none() {
            // Without its start time a PID reused by another process could not be told apart.
            let why = format!(
                "process {}'s start time cannot be read; not signalling it",
                p.pid
            );
            self.set_status(why, true);
            return;
        }
        let signal = if self.terminated.contains(&p) {
            KillSignal::Kill
        } else {
            KillSignal::Term
        };
        let effect = match signal {
            KillSignal::Term => "SIGTERM asks it to stop; it may clean up first.",
            KillSignal::Kill => "SIGKILL ends it at once; unsaved work is lost.",
        };
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Kill process".into(),
            question: format!("Send {} to process {}?", signal_name(signal), p.pid),
            details: vec![
                p.command.unwrap_or_else(|| "unknown command".into()),
                effect.into(),
            ],
            command: Command::SignalProcess {
                pid: p.pid,
                start_ticks: p.identity.map(|i| i.start_ticks),
                signal,
            },
        });
    }

    fn move_process_selection(&mut self, delta: isize) {
        let n = self.visible_processes().len();
        let current = self.selected_process_row().unwrap_or(0);
        let row = if self.processes.selected_pid.is_none() && delta > 0 {
            0
        } else {
            offset(current, delta, n)
        };
        self.select_process_row(row);
    }

    fn select_process_row(&mut self, row: usize) {
        if let Some(p) = self.visible_processes().get(row) {
            self.processes.selected_pid = Some(p.pid);
        }
    }

    /// After new samples, keep the selected PID if it still runs, else the first row.
    pub(super) fn keep_process_selection(&mut self) {
        let visible = self.visible_processes();
        let still_there = self
            .processes
            .selected_pid
            .is_some_and(|pid| visible.iter().any(|p| p.pid == pid));
        if !still_there {
            self.processes.selected_pid = visible.first().map(|p| p.pid);
        }
    }
}

pub fn signal_name(signal: KillSignal) -> &'static str {
    match signal {
        KillSignal::Term => "SIGTERM",
        KillSignal::Kill => "SIGKILL",
    }
}
