//! What the Doctor tab's keys do (diagnose again, move between checks), and how a finished
//! diagnosis lands in the state.

use super::action::{Action, Command};
use super::cursor::moved;
use super::state::{AppState, GpuStatus};
use crate::doctor::DoctorReport;
use crate::gpu::report::{self, GpuReport};

impl AppState {
    /// The GPU part of a diagnosis from what the collector already read: the doctor never
    /// opens NVML a second time.
    pub fn gpu_report(&self) -> Option<GpuReport> {
        match &self.gpu {
            GpuStatus::Loading => None,
            GpuStatus::Failed(e) => Some(report::failed(self.host.clone(), e)),
            GpuStatus::Ready(data) => Some(report::from_samples(
                self.host.clone(),
                &data.inventory,
                &data.samples,
            )),
        }
    }

    /// Starts a diagnosis unless one is running or the GPUs have not been read yet.
    pub(super) fn start_doctor(&mut self) -> Vec<Command> {
        if self.doctor.running {
            return Vec::new();
        }
        if matches!(self.gpu, GpuStatus::Loading) {
            self.set_status("the doctor waits for the first GPU reading", false);
            return Vec::new();
        }
        self.doctor.running = true;
        vec![Command::RunDoctor]
    }

    /// Opening the tab runs the first diagnosis; later ones are asked for with `r`.
    pub(super) fn doctor_on_show(&mut self) -> Vec<Command> {
        if self.doctor.report.is_none() {
            self.start_doctor()
        } else {
            Vec::new()
        }
    }

    pub(super) fn update_doctor(&mut self, action: Action) -> Vec<Command> {
        let len = self.doctor.len();
        if let Some(row) = moved(self.doctor.selected, &action, len, self.page_size) {
            if row != self.doctor.selected {
                self.doctor.detail_scroll = 0;
            }
            self.doctor.selected = row;
        } else if action == Action::DetailDown {
            self.doctor.detail_scroll = self.doctor.detail_scroll.saturating_add(1);
        } else if action == Action::DetailUp {
            self.doctor.detail_scroll = self.doctor.detail_scroll.saturating_sub(1);
        } else if action == Action::RunDoctor {
            return self.start_doctor();
        }
        Vec::new()
    }

    /// A finished diagnosis; the selection stays on the same check where it still exists.
    pub fn apply_doctor(&mut self, report: DoctorReport) {
        let keep = self.doctor.selected_check().map(|c| c.id);
        self.doctor.selected = keep
            .and_then(|id| report.checks.iter().position(|c| c.id == id))
            .unwrap_or(0);
        self.doctor.detail_scroll = 0;
        // The diagnosis finished: a result, not an error of gpudeck's, whatever it found (its
        // failures are the checks', shown in red on the tab). The counts read as the CLI's.
        self.set_status(format!("doctor: {}", report.summary().counts()), false);
        self.doctor.report = Some(report);
        self.doctor.running = false;
        self.doctor.made_at = Some(self.now);
    }
}
