//! The end of a session's terminal: SIGHUP (an SSH drop, a killed tmux pane) or SIGTERM, caught
//! so the shell's container is stopped instead of sitting on its GPUs after gpudeck is gone.

use std::time::Duration;

use bollard::query_parameters::{KillContainerOptionsBuilder, WaitContainerOptionsBuilder};
use bollard::Docker;
use futures::StreamExt;
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::error::ShellError;

/// How long a kept shell gets to end on SIGHUP, as a shell whose terminal went away does, before
/// it is killed: together with the kill, well within the 5 s promised.
const HANGUP_GRACE: Duration = Duration::from_secs(2);

/// Listens for the signals that end a session. Made before the container is created, so a
/// hang-up at any moment of the session is seen (and does not kill gpudeck outright).
pub struct HangUp {
    hup: Signal,
    term: Signal,
}

impl HangUp {
    pub fn watch() -> Result<HangUp, ShellError> {
        let listen = |kind| {
            signal(kind).map_err(|e| ShellError::Terminal {
                detail: format!("the hang-up signals cannot be watched: {e}"),
            })
        };
        Ok(HangUp {
            hup: listen(SignalKind::hangup())?,
            term: listen(SignalKind::terminate())?,
        })
    }

    /// The name of the next signal that arrives.
    pub async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.hup.recv() => "SIGHUP",
            _ = self.term.recv() => "SIGTERM",
        }
    }
}

/// Stops a shell whose terminal went away and that stays (kept, or re-entered): SIGHUP first,
/// as a terminal's end tells a shell, then SIGKILL if it has not ended after a grace period.
/// Failures are only logged: there is nobody left to tell.
pub async fn stop_after_hangup(docker: &Docker, id: &str) {
    if !signal_and_wait(docker, id, "SIGHUP", HANGUP_GRACE).await {
        signal_and_wait(docker, id, "SIGKILL", HANGUP_GRACE).await;
    }
}

/// Sends `sig` and waits up to `grace` for the container to stop; whether it did.
async fn signal_and_wait(docker: &Docker, id: &str, sig: &str, grace: Duration) -> bool {
    let kill = KillContainerOptionsBuilder::new().signal(sig).build();
    if let Err(e) = docker.kill_container(id, Some(kill)).await {
        // Not running any more is the usual reason, and the wanted end.
        tracing::debug!(%id, "sending {sig} to the shell: {e}");
    }
    let options = WaitContainerOptionsBuilder::new()
        .condition("not-running")
        .build();
    let mut waits = docker.wait_container(id, Some(options));
    match tokio::time::timeout(grace, waits.next()).await {
        // bollard reports a non-zero exit as an error: stopped all the same.
        Ok(Some(Ok(_) | Err(bollard::errors::Error::DockerContainerWaitError { .. }))) => true,
        Ok(other) => {
            tracing::warn!(%id, "waiting for the shell to stop after {sig}: {other:?}");
            false
        }
        Err(_) => {
            tracing::warn!(%id, "the shell did not stop within {grace:?} of {sig}");
            false
        }
    }
}
