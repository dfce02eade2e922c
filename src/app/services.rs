//! The Services tab's state: every service of the run store as the services collector last
//! looked at it, the selected one, and its output when open (a run's logs view, fed by the runs
//! collector).

use std::collections::BTreeSet;

use super::logs_view::LogsView;
use super::runs::push_chunk;
use crate::runs::watch::LogChunk;
use crate::runs::RunState;
use crate::services::{ServiceRow, ServicesUpdate};

/// Everything the Services tab shows.
#[derive(Clone, Debug, Default)]
pub struct ServicesView {
    /// Newest first.
    pub rows: Vec<ServiceRow>,
    /// Whether the collector has looked once (until then "no services" would be a lie).
    pub listed: bool,
    /// The store cannot be read: why and what to do.
    pub store_error: Option<String>,
    pub selected: Option<String>,
    /// The output of the service whose logs were opened (rank 0, stdout and stderr together).
    pub logs: Option<LogsView>,
    /// The logs fill the tab.
    pub log_open: bool,
    /// A service just restarted from here: selected as soon as a look has it.
    pub select_when_listed: Option<String>,
    /// The notebooks already said to be idle past the alert (said once per stretch of idling).
    alerted: BTreeSet<String>,
}

impl ServicesView {
    pub fn selected_row(&self) -> Option<usize> {
        let id = self.selected.as_deref()?;
        self.rows.iter().position(|r| r.id == id)
    }

    pub fn selected_service(&self) -> Option<&ServiceRow> {
        self.rows.get(self.selected_row()?)
    }

    /// How many services are live (starting or running).
    pub fn live(&self) -> usize {
        self.rows.iter().filter(|r| is_live(r.state)).count()
    }

    /// How many notebooks have been idle past `[notebook] idle_alert` while holding GPUs.
    pub fn idle_alerts(&self) -> usize {
        self.rows.iter().filter(|r| r.idle_alert).count()
    }

    /// Folds a look in: the selection stays on its service while it is listed, else the first.
    /// Returns the notebooks newly idle past the alert, to be said on the status line.
    pub fn apply(&mut self, update: ServicesUpdate) -> Vec<ServiceRow> {
        let idle: BTreeSet<String> = (update.rows.iter())
            .filter(|r| r.idle_alert)
            .map(|r| r.id.clone())
            .collect();
        let newly = (update.rows.iter())
            .filter(|r| r.idle_alert && !self.alerted.contains(&r.id))
            .cloned()
            .collect();
        self.alerted = idle;
        self.select_newly_listed(update);
        newly
    }

    fn select_newly_listed(&mut self, update: ServicesUpdate) {
        self.rows = update.rows;
        self.store_error = update.store_error;
        self.listed = true;
        if let Some(id) = self.select_when_listed.take() {
            if self.rows.iter().any(|r| r.id == id) {
                self.selected = Some(id);
                return;
            }
            self.select_when_listed = Some(id);
        }
        if self.selected_row().is_none() {
            self.selected = self.rows.first().map(|r| r.id.clone());
        }
    }

    /// The service whose output the logs view follows.
    pub fn logs_of(&self) -> Option<&str> {
        self.logs.as_ref().map(|l| l.container.as_str())
    }

    /// Takes a chunk of the output the logs view follows; false when it is another run's.
    pub fn push_log(&mut self, chunk: LogChunk) -> bool {
        if self.logs_of() != Some(chunk.id.as_str()) || chunk.rank != 0 {
            return false;
        }
        push_chunk(&mut self.logs, chunk);
        true
    }
}

/// A service that may still answer.
pub fn is_live(state: RunState) -> bool {
    matches!(
        state,
        RunState::Starting | RunState::Running | RunState::Lost
    )
}

/// "on GPU 0,1, in IMAGE" or "on no GPU, on this machine".
pub fn where_and_gpus(service: &ServiceRow) -> String {
    let gpus = match service.gpus.is_empty() {
        true => "on no GPU".to_string(),
        false => format!("on GPU {}", service.gpu_indices()),
    };
    let place = match &service.image {
        Some(image) => format!("in {image}"),
        None => "on this machine".into(),
    };
    format!("{gpus}, {place}")
}
