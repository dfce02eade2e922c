//! What the shell dialog's keys do: open it on the selected image, choose GPUs and options,
//! hand the shell to the run loop; and re-entering a kept shell container.

use std::path::PathBuf;

use super::action::{Action, Command};
use super::shell_dialog::{GpuChoice, ShellDialog, ShellLaunch, BUSY_MEMORY_FRACTION, SHELL_LABEL};
use super::state::{AppState, GpuStatus, Overlay};
use crate::claims::owner_of;

impl AppState {
    pub(super) fn open_shell_dialog(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: starting shells is disabled", true);
            return;
        }
        if !self.docker.is_ready() {
            self.set_status("the Docker Engine is not reachable", true);
            return;
        }
        let Some(image) = self.docker.selected_image_info() else {
            self.set_status("select an image first", true);
            return;
        };
        let name = image
            .tags
            .first()
            .cloned()
            .unwrap_or_else(|| image.id.clone());
        let gpus = self.gpu_choices();
        self.overlay = Overlay::Shell(ShellDialog {
            image: name,
            gpus,
            selected: 0,
            network_none: false,
            keep: false,
            workdir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        });
    }

    /// Every GPU, the first free one chosen: one GPU is what a shell usually wants. A GPU a
    /// live run or shell claims is busy, even before its processes show.
    pub(super) fn gpu_choices(&self) -> Vec<GpuChoice> {
        let GpuStatus::Ready(data) = &self.gpu else {
            return Vec::new();
        };
        let mut choices: Vec<GpuChoice> = data
            .inventory
            .gpus
            .iter()
            .zip(&data.samples)
            .map(|(gpu, sample)| {
                let procs = sample.processes.len();
                let used = match (sample.memory_used_bytes, gpu.memory_total_bytes) {
                    (Some(u), Some(t)) if t > 0 => u as f64 / t as f64,
                    _ => 0.0,
                };
                let claimed = owner_of(&self.runs.claimed, &gpu.uuid);
                let busy = match claimed {
                    Some(owner) => Some(format!("claimed by {owner}")),
                    None => (procs > 0 || used > BUSY_MEMORY_FRACTION).then(|| {
                        format!(
                            "{}, memory {:.0}% used",
                            crate::units::plural_or_no(procs, "process"),
                            used * 100.0
                        )
                    }),
                };
                GpuChoice {
                    index: gpu.index,
                    name: gpu.name.clone(),
                    chosen: false,
                    busy,
                }
            })
            .collect();
        if let Some(free) = choices.iter_mut().find(|c| c.busy.is_none()) {
            free.chosen = true;
        }
        choices
    }

    pub(super) fn update_shell_dialog(&mut self, action: Action) -> Vec<Command> {
        let Overlay::Shell(dialog) = &mut self.overlay else {
            return Vec::new();
        };
        let last = dialog.gpus.len().saturating_sub(1);
        match action {
            Action::Quit => self.quit = true,
            Action::Up => dialog.selected = dialog.selected.saturating_sub(1),
            Action::Down => dialog.selected = (dialog.selected + 1).min(last),
            Action::FilterInput(' ') => {
                if let Some(gpu) = dialog.gpus.get_mut(dialog.selected) {
                    gpu.chosen = !gpu.chosen;
                }
            }
            Action::FilterInput('a') => {
                let all = dialog.gpus.iter().all(|g| g.chosen);
                dialog.gpus.iter_mut().for_each(|g| g.chosen = !all);
            }
            Action::FilterInput('n') => dialog.network_none = !dialog.network_none,
            Action::FilterInput('k') => dialog.keep = !dialog.keep,
            Action::Confirm => {
                let launch = ShellLaunch::New {
                    image: dialog.image.clone(),
                    gpus: dialog
                        .gpus
                        .iter()
                        .filter(|g| g.chosen)
                        .map(|g| g.index)
                        .collect(),
                    network_none: dialog.network_none,
                    keep: dialog.keep,
                    workdir: dialog.workdir.clone(),
                };
                self.overlay = Overlay::None;
                self.pending_shell = Some(launch);
            }
            Action::Cancel => self.overlay = Overlay::None,
            _ => {}
        }
        Vec::new()
    }

    /// Re-enters the selected container when it is a kept gpudeck shell.
    pub(super) fn reenter_selected_shell(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: entering shells is disabled", true);
            return;
        }
        let Some(c) = self.docker.selected_container_info() else {
            return;
        };
        if !c.labels.contains_key(SHELL_LABEL) {
            self.set_status(format!("{} is not a gpudeck shell", c.name), true);
            return;
        }
        self.pending_shell = Some(ShellLaunch::Reenter {
            container: c.id.clone(),
            name: c.name.clone(),
        });
    }
}
