//! What the new-run form's keys do: open it from the Runs tab, move between fields, type, and
//! start the run on Enter.

use std::path::PathBuf;

use super::action::{Action, Command};
use super::run_form::{Field, RunForm};
use super::state::{AppState, Overlay};

impl AppState {
    /// `n` on the Runs tab: a form for a new run, its first free GPU chosen.
    pub(super) fn open_run_form(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: starting runs is disabled", true);
            return;
        }
        let workdir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        self.overlay = Overlay::RunForm(RunForm::new(self.gpu_choices(), workdir, &self.slurm));
    }

    pub(super) fn update_run_form(&mut self, action: Action) -> Vec<Command> {
        let Overlay::RunForm(form) = &mut self.overlay else {
            return Vec::new();
        };
        let last = form.gpus.len().saturating_sub(1);
        match action {
            Action::NextTab => form.move_field(true),
            Action::PrevTab => form.move_field(false),
            Action::Up if form.field == Field::Gpus && form.backend.uses_this_machines_gpus() => {
                form.gpu_row = form.gpu_row.saturating_sub(1)
            }
            Action::Down if form.field == Field::Gpus && form.backend.uses_this_machines_gpus() => {
                form.gpu_row = (form.gpu_row + 1).min(last)
            }
            Action::Up => form.move_field(false),
            Action::Down => form.move_field(true),
            Action::FilterInput(c) => form.input(c),
            Action::FilterBackspace => {
                if let Some(text) = form.text_mut() {
                    text.pop();
                }
            }
            Action::Confirm => match form.spec() {
                Ok(spec) => {
                    self.overlay = Overlay::None;
                    self.set_status("starting the run…", false);
                    return vec![Command::StartRun(Box::new(spec))];
                }
                Err(e) => form.error = Some(e),
            },
            Action::Cancel => self.overlay = Overlay::None,
            _ => {}
        }
        Vec::new()
    }
}
