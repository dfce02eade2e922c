//! An in-memory process table for tests of the code that consumes `ProcessTable`.

use std::collections::HashMap;
use std::sync::Mutex;

use super::error::HostError;
use super::process::{ProcessDetails, ProcessTable};
use super::signal::KillSignal;

/// Any signal ends a process; PIDs listed with `protect` answer with permission errors,
/// as another user's processes would.
#[derive(Debug, Default)]
pub struct FakeProcessTable {
    state: Mutex<FakeState>,
}

#[derive(Debug, Default)]
struct FakeState {
    processes: HashMap<u32, ProcessDetails>,
    protected: HashMap<u32, String>,
    signals: Vec<(u32, KillSignal)>,
}

impl FakeProcessTable {
    pub fn new(processes: impl IntoIterator<Item = ProcessDetails>) -> Self {
        let table = Self::default();
        for process in processes {
            table.insert(process);
        }
        table
    }

    pub fn insert(&self, process: ProcessDetails) {
        self.lock().processes.insert(process.pid, process);
    }

    /// Signals to `pid` fail with `NotPermitted`, naming `owner`.
    pub fn protect(&self, pid: u32, owner: &str) {
        self.lock().protected.insert(pid, owner.to_owned());
    }

    /// Every signal delivered so far, in order.
    pub fn signals(&self) -> Vec<(u32, KillSignal)> {
        self.lock().signals.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        // A test that panicked while holding the lock has already failed; keep the data usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ProcessTable for FakeProcessTable {
    fn describe(&self, pid: u32) -> Option<ProcessDetails> {
        self.lock().processes.get(&pid).cloned()
    }

    fn signal(&self, pid: u32, signal: KillSignal) -> Result<(), HostError> {
        let mut state = self.lock();
        if let Some(owner) = state.protected.get(&pid) {
            return Err(HostError::NotPermitted {
                pid,
                owner: owner.clone(),
            });
        }
        if state.processes.remove(&pid).is_none() {
            return Err(HostError::Exited { pid });
        }
        state.signals.push((pid, signal));
        Ok(())
    }

    fn start_ticks(&self, pid: u32) -> Option<u64> {
        let state = self.lock();
        let process = state.processes.get(&pid)?;
        // A process without a known identity still exists: answer with a time nobody chose.
        Some(process.identity.map_or(u64::MAX, |i| i.start_ticks))
    }
}
