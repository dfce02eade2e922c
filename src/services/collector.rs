//! The services collector: a thread that lists the services of the run store for the dashboard
//! and looks at each live one over HTTP (`look_at_all`, on a tokio runtime of its own), every
//! few seconds while the Services tab is shown and now and then otherwise, for the idle flag.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

use super::listing::{look_blocking, services_of, ServiceRow};
use crate::runs::{now_ms, RunIndex, RunStore};

/// How often the services are looked at while their tab is shown.
pub const SHOWN_EVERY: Duration = Duration::from_secs(3);
/// How often otherwise: enough for the header's idle flag, nothing for a store without services
/// but a look at its directory.
pub const HIDDEN_EVERY: Duration = Duration::from_secs(30);

/// What the app tells the collector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServicesCommand {
    /// The Services tab was shown (true) or left: look every [`SHOWN_EVERY`] or
    /// [`HIDDEN_EVERY`]; shown, it looks at once.
    Shown(bool),
    /// Look now (a service was started, stopped or restarted from the dashboard).
    Look,
    Shutdown,
}

/// Every service of the store as looked at now, newest first.
#[derive(Clone, Debug, PartialEq)]
pub struct ServicesUpdate {
    pub rows: Vec<ServiceRow>,
    /// The store could not be read: why and what to do.
    pub store_error: Option<String>,
}

/// The running collector; dropping it stops the thread.
pub struct ServicesHandle {
    commands: mpsc::Sender<ServicesCommand>,
    thread: Option<JoinHandle<()>>,
}

impl ServicesHandle {
    pub fn send(&self, command: ServicesCommand) {
        // The thread lives as long as the handle, so a failed send has no one to tell.
        let _ = self.commands.send(command);
    }
}

impl Drop for ServicesHandle {
    fn drop(&mut self) {
        let _ = self.commands.send(ServicesCommand::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts looking at the services of `store`; a notebook idle past `idle_alert` while it holds
/// GPUs is flagged.
pub fn spawn(
    store: RunStore,
    updates: Sender<ServicesUpdate>,
    idle_alert: Option<Duration>,
) -> ServicesHandle {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("services-collector".into())
        .spawn(move || ServicesWatcher::new(&store, updates, idle_alert).run(&rx))
        .ok();
    if thread.is_none() {
        tracing::error!("could not start the services collector thread");
    }
    ServicesHandle {
        commands: tx,
        thread,
    }
}

/// The collector's own state.
pub struct ServicesWatcher {
    index: RunIndex,
    updates: Sender<ServicesUpdate>,
    idle_alert: Option<Duration>,
    runtime: Option<tokio::runtime::Runtime>,
    shown: bool,
    /// What was sent last: an empty store looked at again sends nothing.
    sent: Option<ServicesUpdate>,
}

impl ServicesWatcher {
    pub fn new(
        store: &RunStore,
        updates: Sender<ServicesUpdate>,
        idle_alert: Option<Duration>,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        if let Err(e) = &runtime {
            tracing::warn!("services: no runtime to look at them over HTTP: {e}");
        }
        Self {
            index: store.index(),
            updates,
            idle_alert,
            runtime: runtime.ok(),
            shown: false,
            sent: None,
        }
    }

    fn run(mut self, commands: &mpsc::Receiver<ServicesCommand>) {
        loop {
            if !self.look() {
                return;
            }
            let every = if self.shown {
                SHOWN_EVERY
            } else {
                HIDDEN_EVERY
            };
            let deadline = Instant::now() + every;
            loop {
                let wait = deadline.saturating_duration_since(Instant::now());
                match commands.recv_timeout(wait) {
                    Ok(ServicesCommand::Shutdown) | Err(RecvTimeoutError::Disconnected) => return,
                    Ok(ServicesCommand::Look) | Err(RecvTimeoutError::Timeout) => break,
                    Ok(ServicesCommand::Shown(shown)) => {
                        self.shown = shown;
                        if shown {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Looks at the store and at every live service; sends what it saw unless it is what was
    /// sent last. False once the app is gone.
    pub fn look(&mut self) -> bool {
        let update = self.look_at_store();
        if self.sent.as_ref() == Some(&update) {
            return true;
        }
        self.sent = Some(update.clone());
        self.updates.blocking_send(update).is_ok()
    }

    fn look_at_store(&mut self) -> ServicesUpdate {
        self.index.refresh();
        if let Some(e) = self.index.unreadable() {
            return ServicesUpdate {
                rows: Vec::new(),
                store_error: Some(format!("{e}. {}", e.fix())),
            };
        }
        let runs = services_of(self.index.runs().cloned().collect());
        let now = now_ms();
        let rows = look_blocking(self.runtime.as_ref(), &runs, now, self.idle_alert);
        ServicesUpdate {
            rows,
            store_error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::RunState;

    fn write_run(root: &std::path::Path, id: &str, service: bool) {
        let dir = root.join("runs").join(id);
        std::fs::create_dir_all(&dir).expect("run dir");
        let mut record = serde_json::json!({
            "schema": "gpudeck.run/v1",
            "id": id,
            "name": id,
            "launcher": "single",
            "workdir": "/tmp",
            "host": "testhost",
            "gpus": [],
            "ranks": [{"rank": 0, "argv": ["jupyter", "lab"], "env": {"JUPYTER_TOKEN": "t0k"}, "gpus": []}],
            "state": "succeeded",
            "created_ms": 1_000,
            "started_ms": 2_000,
            "ended_ms": 3_000,
            "exit_code": 0,
        });
        if service {
            record["service"] =
                serde_json::json!({"kind": "notebook", "ports": [{"name": "http", "port": 8899}]});
        }
        std::fs::write(dir.join("run.json"), record.to_string()).expect("run.json");
    }

    #[test]
    fn only_services_are_sent_and_an_unchanged_store_sends_nothing_again() {
        let data = tempfile::tempdir().expect("tempdir");
        let store = RunStore::new(data.path());
        let (tx, mut rx) = tokio::sync::mpsc::channel(8);
        let mut watcher = ServicesWatcher::new(&store, tx, None);
        assert!(watcher.look());
        let first = rx.try_recv().expect("the first look is sent, empty or not");
        assert!(first.rows.is_empty());
        assert!(watcher.look());
        assert!(rx.try_recv().is_err(), "an empty store again: nothing sent");

        write_run(data.path(), "20261125-100000-train-aaaa", false);
        write_run(data.path(), "20261125-110000-notebook-bbbb", true);
        assert!(watcher.look());
        let update = rx.try_recv().expect("a service came");
        let ids: Vec<&str> = update.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["20261125-110000-notebook-bbbb"]);
        assert_eq!(update.rows[0].state, RunState::Succeeded);
        assert_eq!(update.rows[0].url, "http://127.0.0.1:8899/lab?token=t0k");
    }
}
