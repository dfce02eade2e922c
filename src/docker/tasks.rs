//! The Docker collector's background tasks: following a container's logs, streaming its stats,
//! and running a pull job, each forwarding what it sees to the app.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use tokio::sync::mpsc::Sender;

use super::connect::Engine;
use super::update::DockerUpdate;
use crate::image::ImageRef;
use crate::pull::PullOutcome;
use crate::pull::{credentials_for, start_pull, PullCanceller, PullEvent};

/// Log lines are sent in batches so a chatty container costs one message per batch, not per line.
const LOG_BATCH: usize = 512;

pub(super) async fn follow_logs(engine: Engine, id: String, updates: Sender<DockerUpdate>) {
    let mut stream = engine
        .logs(&id, true, Some(LOG_LINES_TAIL))
        .ready_chunks(LOG_BATCH);
    while let Some(chunk) = stream.next().await {
        let mut lines = Vec::with_capacity(chunk.len());
        let mut failure = None;
        for item in chunk {
            match item {
                Ok(line) => lines.push(line),
                Err(e) => failure = Some(e.to_string()),
            }
        }
        if !lines.is_empty()
            && updates
                .send(DockerUpdate::LogLines {
                    container: id.clone(),
                    lines,
                })
                .await
                .is_err()
        {
            return;
        }
        if let Some(reason) = failure {
            let _ = updates
                .send(DockerUpdate::LogsEnded {
                    container: id,
                    reason,
                })
                .await;
            return;
        }
    }
    let _ = updates
        .send(DockerUpdate::LogsEnded {
            container: id,
            reason: "the container stopped".into(),
        })
        .await;
}

/// Runs one pull job, forwarding its progress; credentials come from the user's docker config.
pub(super) async fn pull(
    engine: Engine,
    reference: String,
    updates: Sender<DockerUpdate>,
    running: Arc<Mutex<HashMap<u64, PullCanceller>>>,
) {
    let failed = |title: &str, message: String, fix: String| PullOutcome::Failed {
        title: title.into(),
        message,
        fix,
        retry: false,
    };
    let image = match ImageRef::parse(&reference) {
        Ok(image) => image,
        Err(e) => {
            let outcome = failed(
                "Invalid image reference",
                e.to_string(),
                "Check the name: lowercase, repository[:tag].".into(),
            );
            let _ = updates
                .send(DockerUpdate::PullFinished { id: 0, outcome })
                .await;
            return;
        }
    };
    let host = image.registry_host().to_string();
    let credentials = match tokio::task::spawn_blocking(move || credentials_for(&host, None)).await
    {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "docker credentials unreadable; pulling anonymously");
            None
        }
        Err(_) => None,
    };
    let mut handle = start_pull(engine.client().clone(), image, credentials);
    let id = handle.id;
    running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(id, handle.canceller());
    let _ = updates
        .send(DockerUpdate::PullStarted { id, reference })
        .await;
    while let Some(event) = handle.events.recv().await {
        let update = match event {
            PullEvent::Progress(p) => DockerUpdate::PullProgress {
                id,
                progress: Box::new(p),
            },
            PullEvent::Done { digest, elapsed } => DockerUpdate::PullFinished {
                id,
                outcome: PullOutcome::Done {
                    digest,
                    secs: elapsed.as_secs_f64(),
                },
            },
            PullEvent::Failed(e) => DockerUpdate::PullFinished {
                id,
                outcome: PullOutcome::failed(&e),
            },
        };
        if updates.send(update).await.is_err() {
            break;
        }
    }
    running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&id);
}

/// Lines of history a logs view starts with.
const LOG_LINES_TAIL: usize = 2000;

pub(super) async fn stream_stats(engine: Engine, id: String, updates: Sender<DockerUpdate>) {
    let mut stream = engine.stats(&id);
    while let Some(Ok(stats)) = stream.next().await {
        if updates
            .send(DockerUpdate::Stats(id.clone(), stats))
            .await
            .is_err()
        {
            return;
        }
    }
}
