//! The processes list's own state: sort order, filter, a selection that follows its PID, and
//! the processes already asked to stop.

use std::collections::HashSet;

use super::filter::ListFilter;
use crate::config::ProcessSort;
use crate::gpu::{GpuProcess, GpuSample};
use crate::host::ProcessTarget;

/// Processes already sent SIGTERM from here, by PID and start time, so that the next kill on
/// one offers SIGKILL. A mark goes when its process is gone from the GPUs' lists: a newcomer
/// with the same PID never inherits it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermSent(HashSet<ProcessTarget>);

impl TermSent {
    pub fn mark(&mut self, target: ProcessTarget) {
        self.0.insert(target);
    }

    pub fn contains(&self, process: &GpuProcess) -> bool {
        self.0.contains(&process.target())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forgets every process no GPU lists any more (or lists with another start time).
    pub fn forget_gone(&mut self, samples: &[GpuSample]) {
        let listed: HashSet<ProcessTarget> = samples
            .iter()
            .flat_map(|s| s.processes.iter().map(GpuProcess::target))
            .collect();
        self.0.retain(|t| listed.contains(t));
    }
}

/// Sort, filter and selection of the all-GPU process list.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessListState {
    pub sort: ProcessSort,
    pub descending: bool,
    /// `/`: the shared list filter, read with this list's own words (`gpu:N`, several words).
    pub filter: ListFilter,
    /// The selected process, by PID so the selection survives re-sorting and new samples.
    pub selected_pid: Option<u32>,
    /// The process whose view is open (Enter), by PID: it stays on that process even after it
    /// exits, to say so.
    pub view_pid: Option<u32>,
}

impl ProcessListState {
    pub fn new(sort: ProcessSort, descending: bool) -> Self {
        Self {
            sort,
            descending,
            filter: ListFilter::default(),
            selected_pid: None,
            view_pid: None,
        }
    }

    /// The processes as listed: filtered, then sorted.
    pub fn visible<'a>(&self, all: impl Iterator<Item = &'a GpuProcess>) -> Vec<&'a GpuProcess> {
        let needle = self.filter.needle();
        let mut list: Vec<&GpuProcess> = all.filter(|p| matches_filter(p, &needle)).collect();
        list.sort_by(|a, b| {
            let ord = match self.sort {
                ProcessSort::Memory => a.used_memory_bytes.cmp(&b.used_memory_bytes),
                ProcessSort::GpuUtil => {
                    let sm = |p: &GpuProcess| p.gpu_util.map(|u| (u.sm_pct, u.mem_pct));
                    sm(a).cmp(&sm(b))
                }
                ProcessSort::Cpu => cmp_f64(a.cpu_pct, b.cpu_pct),
                ProcessSort::Pid => a.pid.cmp(&b.pid),
                ProcessSort::User => a.user.cmp(&b.user),
                ProcessSort::Gpu => a.gpu_index.cmp(&b.gpu_index),
                ProcessSort::Command => a.command.cmp(&b.command),
            }
            .then(a.gpu_index.cmp(&b.gpu_index))
            .then(a.pid.cmp(&b.pid));
            if self.descending {
                ord.reverse()
            } else {
                ord
            }
        });
        list
    }

    /// The next column, in the direction that column is most often wanted in.
    pub fn next_sort(&mut self) {
        self.sort = match self.sort {
            ProcessSort::Memory => ProcessSort::GpuUtil,
            ProcessSort::GpuUtil => ProcessSort::Cpu,
            ProcessSort::Cpu => ProcessSort::Pid,
            ProcessSort::Pid => ProcessSort::User,
            ProcessSort::User => ProcessSort::Gpu,
            ProcessSort::Gpu => ProcessSort::Command,
            ProcessSort::Command => ProcessSort::Memory,
        };
        self.descending = starts_descending(self.sort);
    }
}

/// Amounts start with the largest (who is using the GPU?), names and numbers that identify
/// a process in their natural order.
pub fn starts_descending(sort: ProcessSort) -> bool {
    match sort {
        ProcessSort::Memory | ProcessSort::GpuUtil | ProcessSort::Cpu => true,
        ProcessSort::Pid | ProcessSort::User | ProcessSort::Gpu | ProcessSort::Command => false,
    }
}

/// Orders unknown values below every known one.
fn cmp_f64(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.total_cmp(&b),
        (a, b) => a.is_some().cmp(&b.is_some()),
    }
}

/// A filter matches PID, user, command or container; `gpu:N` narrows to one GPU.
fn matches_filter(p: &GpuProcess, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    needle.split_whitespace().all(|word| {
        if let Some(idx) = word.strip_prefix("gpu:") {
            return idx.parse::<u32>().is_ok_and(|i| i == p.gpu_index);
        }
        p.pid.to_string().contains(word)
            || p.user
                .as_deref()
                .is_some_and(|u| u.to_lowercase().contains(word))
            || p.command
                .as_deref()
                .is_some_and(|c| c.to_lowercase().contains(word))
            || p.container.as_ref().is_some_and(|c| c.id.starts_with(word))
    })
}

pub fn sort_label(sort: ProcessSort) -> &'static str {
    match sort {
        ProcessSort::Memory => "GPU MEM",
        ProcessSort::GpuUtil => "GPU%",
        ProcessSort::Cpu => "CPU%",
        ProcessSort::Pid => "PID",
        ProcessSort::User => "USER",
        ProcessSort::Gpu => "GPU",
        ProcessSort::Command => "COMMAND",
    }
}
