//! The Docker collector: a task that keeps a connection to the engine, follows its event stream, runs
//! container actions, and streams logs and stats for what is on screen. It reconnects by itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc::{Sender, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

use super::connect::{resolve_host, Engine};
use super::error::DockerError;
use super::tasks;
use super::types::EngineEvent;
use super::update::DockerCommand;
use super::update::DockerUpdate;
use crate::pull::PullCanceller;

/// How long to wait before reconnecting, at most.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Starts the collector; commands go in through the returned sender.
pub fn spawn(
    host_override: Option<String>,
    updates: Sender<DockerUpdate>,
) -> UnboundedSender<DockerCommand> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(run(host_override, updates, rx));
    tx
}

fn unavailable(host: &str, e: &DockerError) -> DockerUpdate {
    DockerUpdate::Unavailable {
        host: host.to_string(),
        title: e.title().to_string(),
        message: e.to_string(),
        fix: e.fix().to_string(),
    }
}

async fn run(
    host_override: Option<String>,
    updates: Sender<DockerUpdate>,
    mut commands: UnboundedReceiver<DockerCommand>,
) {
    let mut backoff = Duration::from_millis(500);
    // The failure the app was last told of. It shows it and says that gpudeck keeps trying, so
    // a retry that fails the same way tells it nothing: it would cost a frame and a new judging
    // of every image's verdict every 10 s on a machine without Docker.
    let mut told: Option<DockerUpdate> = None;
    loop {
        let spec = match resolve_host(host_override.as_deref(), |k| std::env::var(k).ok()) {
            Ok(spec) => spec,
            Err(e) => {
                // A malformed DOCKER_HOST does not fix itself: report once and stay idle.
                let host = host_override
                    .clone()
                    .or_else(|| std::env::var("DOCKER_HOST").ok())
                    .unwrap_or_default();
                let _ = updates.send(unavailable(&host, &e)).await;
                refuse_until_closed(&mut commands, &updates).await;
                return;
            }
        };
        if told.is_none()
            && updates
                .send(DockerUpdate::Connecting {
                    host: spec.uri.clone(),
                })
                .await
                .is_err()
        {
            return;
        }
        match Engine::connect(&spec).await {
            Ok(engine) => {
                told = None;
                backoff = Duration::from_millis(500);
                if !session(engine, &updates, &mut commands).await {
                    return;
                }
            }
            Err(e) => {
                let update = unavailable(&spec.uri, &e);
                if told.as_ref() != Some(&update) {
                    tracing::info!(error = %e, "Docker not available");
                    if updates.send(update.clone()).await.is_err() {
                        return;
                    }
                }
                told = Some(update);
            }
        }
        if !wait_refusing(&mut commands, &updates, backoff).await {
            return;
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Waits out a reconnect delay, answering commands that arrive with an explanation.
async fn wait_refusing(
    commands: &mut UnboundedReceiver<DockerCommand>,
    updates: &Sender<DockerUpdate>,
    delay: Duration,
) -> bool {
    let sleep = tokio::time::sleep(delay);
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            () = &mut sleep => return true,
            cmd = commands.recv() => match cmd {
                Some(cmd) => refuse(&cmd, updates).await,
                None => return false,
            },
        }
    }
}

async fn refuse_until_closed(
    commands: &mut UnboundedReceiver<DockerCommand>,
    updates: &Sender<DockerUpdate>,
) {
    while let Some(cmd) = commands.recv().await {
        refuse(&cmd, updates).await;
    }
}

async fn refuse(cmd: &DockerCommand, updates: &Sender<DockerUpdate>) {
    if matches!(cmd, DockerCommand::WatchStats(_) | DockerCommand::CloseLogs) {
        return;
    }
    let _ = updates
        .send(DockerUpdate::ActionDone {
            what: "Docker action".into(),
            result: Err("the Docker Engine is not reachable".into()),
        })
        .await;
}

/// Background streams tied to one connection.
#[derive(Default)]
struct Streams {
    logs: Option<JoinHandle<()>>,
    stats: HashMap<String, JoinHandle<()>>,
    /// Running pulls by job id, so they can be cancelled.
    pulls: Arc<Mutex<HashMap<u64, PullCanceller>>>,
}

impl Drop for Streams {
    fn drop(&mut self) {
        if let Some(h) = self.logs.take() {
            h.abort();
        }
        for (_, h) in self.stats.drain() {
            h.abort();
        }
    }
}

/// Serves one connection until the engine goes away (returns true: reconnect) or the app quits (false).
async fn session(
    engine: Engine,
    updates: &Sender<DockerUpdate>,
    commands: &mut UnboundedReceiver<DockerCommand>,
) -> bool {
    let host = engine.host().to_string();
    // Events from before the listing are asked for again, so nothing in between is missed.
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let info = match engine.info().await {
        Ok(info) => info,
        Err(e) => return updates.send(unavailable(&host, &e)).await.is_ok(),
    };
    let _ = updates
        .send(DockerUpdate::Connected {
            host: host.clone(),
            info: Box::new(info),
        })
        .await;
    refresh_all(&engine, updates).await;
    let mut events = engine.events_since(since);
    let mut streams = Streams::default();
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => on_event(&engine, event, updates).await,
                Some(Err(e)) => return updates.send(unavailable(&host, &e)).await.is_ok(),
                None => {
                    let e = DockerError::Unreachable { host: host.clone(), detail: "the engine closed its event stream".into() };
                    return updates.send(unavailable(&host, &e)).await.is_ok();
                }
            },
            cmd = commands.recv() => match cmd {
                Some(cmd) => on_command(&engine, cmd, updates, &mut streams),
                None => return false,
            },
        }
    }
}

async fn refresh_all(engine: &Engine, updates: &Sender<DockerUpdate>) {
    match engine.containers().await {
        Ok(list) => {
            let _ = updates.send(DockerUpdate::Containers(list)).await;
        }
        Err(e) => tracing::warn!(error = %e, "listing containers failed"),
    }
    refresh_images(engine, updates).await;
}

async fn refresh_images(engine: &Engine, updates: &Sender<DockerUpdate>) {
    match engine.images().await {
        Ok(list) => {
            let _ = updates.send(DockerUpdate::Images(list)).await;
        }
        Err(e) => tracing::warn!(error = %e, "listing images failed"),
    }
}

async fn on_event(engine: &Engine, event: EngineEvent, updates: &Sender<DockerUpdate>) {
    let update = match event {
        EngineEvent::ContainerChanged { id } => match engine.container(&id).await {
            Ok(Some(info)) => DockerUpdate::ContainerChanged(Box::new(info)),
            Ok(None) => DockerUpdate::ContainerRemoved(id),
            Err(e) => {
                tracing::warn!(error = %e, id, "re-reading a container failed");
                return;
            }
        },
        EngineEvent::ContainerRemoved { id } => DockerUpdate::ContainerRemoved(id),
        EngineEvent::ImagesChanged => return refresh_images(engine, updates).await,
    };
    let _ = updates.send(update).await;
}

fn on_command(
    engine: &Engine,
    cmd: DockerCommand,
    updates: &Sender<DockerUpdate>,
    streams: &mut Streams,
) {
    match cmd {
        DockerCommand::OpenLogs(id) => {
            if let Some(h) = streams.logs.take() {
                h.abort();
            }
            streams.logs = Some(tokio::spawn(tasks::follow_logs(
                engine.clone(),
                id,
                updates.clone(),
            )));
        }
        DockerCommand::CloseLogs => {
            if let Some(h) = streams.logs.take() {
                h.abort();
            }
        }
        DockerCommand::WatchStats(ids) => {
            streams.stats.retain(|id, h| {
                let keep = ids.contains(id);
                if !keep {
                    h.abort();
                }
                keep
            });
            for id in ids {
                if let std::collections::hash_map::Entry::Vacant(slot) = streams.stats.entry(id) {
                    let id = slot.key().clone();
                    slot.insert(tokio::spawn(tasks::stream_stats(
                        engine.clone(),
                        id,
                        updates.clone(),
                    )));
                }
            }
        }
        DockerCommand::Pull(reference) => {
            tokio::spawn(tasks::pull(
                engine.clone(),
                reference,
                updates.clone(),
                Arc::clone(&streams.pulls),
            ));
        }
        DockerCommand::CancelPull(id) => {
            let pulls = streams.pulls.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(c) = pulls.get(&id) {
                c.cancel();
            }
        }
        other => {
            tokio::spawn(act(engine.clone(), other, updates.clone()));
        }
    }
}

async fn act(engine: Engine, cmd: DockerCommand, updates: Sender<DockerUpdate>) {
    let (what, result) = match &cmd {
        DockerCommand::Start(id) => ("started the container", engine.start(id).await),
        DockerCommand::Stop(id) => ("stopped the container", engine.stop(id, 10).await),
        DockerCommand::Restart(id) => ("restarted the container", engine.restart(id).await),
        DockerCommand::RemoveContainer(id) => {
            ("removed the container", engine.remove(id, true).await)
        }
        DockerCommand::RemoveImage(id) => {
            ("removed the image", engine.remove_image(id, false).await)
        }
        DockerCommand::Inspect(id) => {
            match engine.details(id).await {
                Ok(d) => {
                    let _ = updates.send(DockerUpdate::Details(Box::new(d))).await;
                }
                Err(e) => {
                    let _ = updates
                        .send(DockerUpdate::ActionDone {
                            what: "inspect".into(),
                            result: Err(e.to_string()),
                        })
                        .await;
                }
            }
            return;
        }
        DockerCommand::OpenLogs(_)
        | DockerCommand::CloseLogs
        | DockerCommand::WatchStats(_)
        | DockerCommand::Pull(_)
        | DockerCommand::CancelPull(_) => return,
    };
    let result = result.map_err(|e| format!("{e}. {}", e.fix()));
    let _ = updates
        .send(DockerUpdate::ActionDone {
            what: what.into(),
            result,
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixListener;
    use std::time::Instant;

    /// Reads up to the blank line that ends an HTTP request's head (or the end of the stream).
    fn read_request_head(stream: &mut impl Read) {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
            head.push(byte[0]);
        }
    }

    /// An engine that reads each request and hangs up without an answer: each retry fails the
    /// same way (hanging up before the request is read would race the client's write, which
    /// fails as "reset" or "closed" by chance).
    #[tokio::test(flavor = "multi_thread")]
    async fn a_retry_that_fails_the_same_way_tells_the_app_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let (accepted_tx, accepted_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if let Ok(mut stream) = stream {
                    read_request_head(&mut stream);
                }
                if accepted_tx.send(()).is_err() {
                    return;
                }
            }
        });
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        let _commands = spawn(Some(format!("unix://{}", socket.display())), tx);
        // Three attempts (at 0, 0.5 and 1.5 s): the first two have been answered by then.
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut attempts = 0;
        while attempts < 3 {
            let left = deadline.saturating_duration_since(Instant::now());
            let accepted = tokio::task::block_in_place(|| accepted_rx.recv_timeout(left));
            assert!(accepted.is_ok(), "the collector stopped trying");
            attempts += 1;
        }
        let mut told = Vec::new();
        while let Ok(update) = rx.try_recv() {
            told.push(update);
        }
        assert!(
            matches!(
                told.as_slice(),
                [
                    DockerUpdate::Connecting { .. },
                    DockerUpdate::Unavailable { .. }
                ]
            ),
            "{told:?}"
        );
    }
}
