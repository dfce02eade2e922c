//! What the GPUs and Topology tabs' keys do, and how the GPU collector's updates land in the state.

use super::action::{Action, Command, Tab};
use super::filter::ListFilter;
use super::gpus::{next_graph, offset, GpuData, GpuStatus};
use super::messages::StatusMessage;
use super::state::AppState;
use crate::gpu::collector::GpuUpdate;
use crate::gpu::history::GpuHistory;
use crate::gpu::xid_watch::{XidLog, XidUpdate};
use crate::gpu::{GpuSample, SourceKind};

impl AppState {
    pub fn data(&self) -> Option<&GpuData> {
        match &self.gpu {
            GpuStatus::Ready(d) => Some(d),
            _ => None,
        }
    }

    pub fn is_demo(&self) -> bool {
        self.data()
            .is_some_and(|d| d.inventory.system.source == SourceKind::Demo)
    }

    pub fn gpu_count(&self) -> usize {
        self.data().map_or(0, |d| d.inventory.gpus.len())
    }

    /// Folds a collector update into the state.
    pub fn apply_gpu(&mut self, update: GpuUpdate) {
        match update {
            GpuUpdate::Ready(inventory) => {
                let n = inventory.gpus.len();
                self.gpu = GpuStatus::Ready(Box::new(GpuData {
                    inventory: *inventory,
                    samples: vec![GpuSample::default(); n],
                    history: (0..n)
                        .map(|_| GpuHistory::new(self.history_capacity))
                        .collect(),
                    xids: XidLog::default(),
                }));
                self.selected_gpu = self.selected_gpu.min(n.saturating_sub(1));
                self.refresh_compat();
            }
            GpuUpdate::Failed(e) => {
                self.gpu = GpuStatus::Failed(e);
                self.refresh_compat();
            }
            GpuUpdate::Sampled(samples) => {
                if let GpuStatus::Ready(data) = &mut self.gpu {
                    for ((gpu, sample), history) in data
                        .inventory
                        .gpus
                        .iter()
                        .zip(&samples)
                        .zip(data.history.iter_mut())
                    {
                        history.record(gpu, sample);
                    }
                    self.runs
                        .watch_after_end(self.now * 1000, &data.inventory.gpus, &samples);
                    self.terminated.forget_gone(&samples);
                    data.samples = samples;
                }
                self.keep_process_selection();
            }
            GpuUpdate::Xid(XidUpdate::Event(event)) => {
                let line = format!(
                    "GPU {} ({}) reported Xid {}; `gpudeck doctor` says what to do.",
                    event.gpu, event.pci_bus_id, event.xid
                );
                if let GpuStatus::Ready(data) = &mut self.gpu {
                    data.xids.record(event);
                }
                self.set_status(line, true);
            }
            // Kept in the messages view, not the footer: most VMs simply lack the event API.
            GpuUpdate::Xid(XidUpdate::Unavailable(why)) => {
                self.messages.push(StatusMessage::new(why, false));
            }
        }
    }

    /// The GPUs and Topology tabs: the row graph, the power graph, the selected GPU and its
    /// processes. The processes' own keys (sort, filter, kill) act on the processes list from
    /// here too.
    pub(super) fn update_gpus(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::CycleGraph => self.graph = next_graph(self.graph),
            Action::TogglePower => self.show_power = !self.show_power,
            Action::ShowGpuProcesses => {
                self.processes.filter = ListFilter::with_text(format!("gpu:{}", self.selected_gpu));
                self.keep_process_selection();
                return self.show_tab(Tab::Processes);
            }
            Action::Up => self.move_gpu_selection(-1),
            Action::Down => self.move_gpu_selection(1),
            Action::PageUp => self.move_gpu_selection(-(self.page_size as isize)),
            Action::PageDown => self.move_gpu_selection(self.page_size as isize),
            Action::Top => self.move_gpu_selection(isize::MIN / 2),
            Action::Bottom => self.move_gpu_selection(isize::MAX / 2),
            Action::SelectRow(row) => {
                if row < self.gpu_count() && row != self.selected_gpu {
                    self.selected_gpu = row;
                    self.links_scroll = 0;
                }
            }
            Action::CopyGpuUuid => return self.copy_gpu_uuid(),
            Action::DetailDown => self.links_scroll = self.links_scroll.saturating_add(1),
            Action::DetailUp => self.links_scroll = self.links_scroll.saturating_sub(1),
            other => return self.update_processes(other),
        }
        // As after any key on these tabs: select a shown process if none is.
        self.keep_process_selection();
        Vec::new()
    }

    /// The selected GPU's UUID whole on the clipboard, for `CUDA_VISIBLE_DEVICES`, however
    /// narrow the pane that shows it.
    fn copy_gpu_uuid(&self) -> Vec<Command> {
        let Some(gpu) = self
            .data()
            .and_then(|d| d.inventory.gpus.get(self.selected_gpu))
        else {
            return Vec::new();
        };
        vec![Command::Copy {
            what: format!("the UUID of GPU {}", gpu.index),
            text: gpu.uuid.clone(),
        }]
    }

    fn move_gpu_selection(&mut self, delta: isize) {
        let n = self.gpu_count();
        let selected = offset(self.selected_gpu, delta, n);
        if selected != self.selected_gpu {
            self.links_scroll = 0;
        }
        self.selected_gpu = selected;
    }
}
