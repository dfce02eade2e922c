//! A pull as a job: an id, a stream of progress events, a final result, and cancellation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bollard::auth::DockerCredentials;
use bollard::errors::Error as DockerError;
use bollard::query_parameters::CreateImageOptionsBuilder;
use bollard::Docker;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::error::PullError;
use super::probe::{self, TagListing};
use super::progress::{PullProgress, PullState};
use crate::image::ImageRef;

/// Progress snapshots are sent at most this often; the final state is always sent.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// Snapshots are whole states, so a slow reader loses nothing by missing some.
const EVENT_BUFFER: usize = 16;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What a pull job reports. A job sends any number of `Progress` and then exactly one of
/// `Done` or `Failed`.
#[derive(Debug, Clone, PartialEq)]
pub enum PullEvent {
    Progress(PullProgress),
    Done {
        /// The manifest digest the registry served (`sha256:...`).
        digest: Option<String>,
        elapsed: Duration,
    },
    Failed(PullError),
}

/// The caller's side of a running pull.
#[derive(Debug)]
pub struct PullHandle {
    pub id: u64,
    pub image: ImageRef,
    pub events: mpsc::Receiver<PullEvent>,
    cancel: CancellationToken,
}

/// Cancels one pull from anywhere, without holding its handle.
#[derive(Debug, Clone)]
pub struct PullCanceller(CancellationToken);

impl PullCanceller {
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

impl PullHandle {
    /// Stops the pull: the request to the Engine is dropped, which makes the Engine abandon the
    /// download and keep no image. The job then reports `Failed(Interrupted)`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A cancel switch that can live apart from the handle (a key binding, a signal handler).
    pub fn canceller(&self) -> PullCanceller {
        PullCanceller(self.cancel.clone())
    }

    /// Waits for the end of the pull, skipping progress: `Ok(digest)` or the failure.
    pub async fn finish(mut self) -> Result<Option<String>, PullError> {
        while let Some(event) = self.events.recv().await {
            match event {
                PullEvent::Progress(_) => {}
                PullEvent::Done { digest, .. } => return Ok(digest),
                PullEvent::Failed(error) => return Err(error),
            }
        }
        Err(PullError::Other(
            "the pull job ended without a result".into(),
        ))
    }
}

/// Starts pulling `image` on the current tokio runtime and returns at once.
///
/// The Engine's API version is negotiated first, so a `Docker` fresh from `connect_with_*`
/// works with older Engines. Dropping the handle's `events` receiver cancels the pull too.
pub fn start_pull(
    docker: Docker,
    image: ImageRef,
    credentials: Option<DockerCredentials>,
) -> PullHandle {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let (events, receiver) = mpsc::channel(EVENT_BUFFER);
    let cancel = CancellationToken::new();
    let job = PullJob {
        docker,
        image: image.clone(),
        credentials,
        events,
        cancel: cancel.clone(),
    };
    tokio::spawn(job.run(id));
    PullHandle {
        id,
        image,
        events: receiver,
        cancel,
    }
}

struct PullJob {
    docker: Docker,
    image: ImageRef,
    credentials: Option<DockerCredentials>,
    events: mpsc::Sender<PullEvent>,
    cancel: CancellationToken,
}

impl PullJob {
    async fn run(self, id: u64) {
        let started = Instant::now();
        tracing::info!(id, image = %self.image, "pull started");
        // Losing the race drops the pull future and with it the HTTP request: that is the cancel.
        let outcome = tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(PullError::Interrupted),
            () = self.events.closed() => Err(PullError::Interrupted),
            result = self.pull(started) => result,
        };
        let event = match outcome {
            Ok(digest) => {
                tracing::info!(id, ?digest, elapsed = ?started.elapsed(), "pull done");
                PullEvent::Done {
                    digest,
                    elapsed: started.elapsed(),
                }
            }
            Err(error) => {
                tracing::warn!(id, %error, "pull failed");
                PullEvent::Failed(error)
            }
        };
        // The receiver may be gone (that is one way to cancel); nobody is left to tell.
        let _ = self.events.send(event).await;
    }

    async fn pull(&self, started: Instant) -> Result<Option<String>, PullError> {
        let docker = self
            .docker
            .clone()
            .negotiate_version()
            .await
            .map_err(|e| classify(e, &self.image))?;
        let options = CreateImageOptionsBuilder::new()
            .from_image(&self.image.api_image())
            .tag(&self.image.api_tag())
            .build();
        let mut stream = docker.create_image(Some(options), None, self.credentials.clone());
        let mut state = PullState::new();
        let mut last_sent: Option<Instant> = None;
        // The Engine ends every pull it finished with a `Status: ...` line.
        let mut finished = false;
        while let Some(item) = stream.next().await {
            let info = match item {
                Ok(info) => info,
                Err(error) if talks_to_the_engine(&error) => {
                    return Err(self.explain(&docker, error).await)
                }
                // The stream to the Engine broke under the pull: it stopped or restarted.
                Err(error) => {
                    return Err(PullError::EngineWentAway {
                        detail: crate::output::with_causes(&error),
                    })
                }
            };
            finished |= info
                .status
                .as_deref()
                .is_some_and(|s| s.starts_with("Status: "));
            state.apply(&info);
            if last_sent.is_none_or(|at| at.elapsed() >= PROGRESS_INTERVAL) {
                let snapshot = state.snapshot(started.elapsed());
                // A full buffer means the reader is behind; the next snapshot supersedes this one.
                let _ = self.events.try_send(PullEvent::Progress(snapshot));
                last_sent = Some(Instant::now());
            }
        }
        if !finished && docker.ping().await.is_err() {
            return Err(PullError::EngineWentAway {
                detail: "the pull's stream ended before the Engine said it was done, and the \
                         Engine no longer answers"
                    .into(),
            });
        }
        let last = state.snapshot(started.elapsed());
        let _ = self.events.send(PullEvent::Progress(last)).await;
        Ok(state.digest().map(str::to_string))
    }

    /// Classifies the failure, and for a missing manifest asks the registry whether the
    /// repository exists at all.
    async fn explain(&self, docker: &Docker, error: DockerError) -> PullError {
        let error = classify(error, &self.image);
        let PullError::UnknownTag {
            image, tag, detail, ..
        } = error
        else {
            return error;
        };
        match probe::list_tags(docker, &self.image, self.credentials.as_ref()).await {
            Some(TagListing::NoSuchRepository) => PullError::UnknownImage {
                image: self.image.familiar_name(),
                registry: self.image.registry_host().to_string(),
                detail: format!("the registry has no repository {}", self.image.repository()),
            },
            Some(TagListing::Tags(available)) => PullError::UnknownTag {
                image,
                tag,
                available,
                detail,
            },
            None => PullError::UnknownTag {
                image,
                tag,
                available: Vec::new(),
                detail,
            },
        }
    }
}

/// Whether the error is something the Engine said (rather than the connection to it failing).
fn talks_to_the_engine(error: &DockerError) -> bool {
    !matches!(
        error,
        DockerError::HyperLegacyError { .. }
            | DockerError::IOError { .. }
            | DockerError::RequestTimeoutError
            | DockerError::HttpClientError { .. }
            | DockerError::HyperResponseError { .. }
            | DockerError::SocketNotFoundError(_)
    )
}

/// Engine messages are classified by what they say; failing to talk to the Engine at all is
/// told apart by the kind of error, never by its text.
fn classify(error: DockerError, image: &ImageRef) -> PullError {
    match error {
        DockerError::DockerResponseServerError { message, .. } => {
            PullError::from_engine_message(&message, image)
        }
        DockerError::DockerStreamError { error } => PullError::from_engine_message(&error, image),
        DockerError::SocketNotFoundError(path) => PullError::DaemonUnreachable {
            detail: format!("there is no socket at {path}"),
        },
        DockerError::HyperLegacyError { .. }
        | DockerError::IOError { .. }
        | DockerError::RequestTimeoutError
        | DockerError::HttpClientError { .. }
        | DockerError::HyperResponseError { .. } => PullError::DaemonUnreachable {
            detail: crate::output::with_causes(&error),
        },
        other => PullError::Other(crate::output::with_causes(&other)),
    }
}

/// How a pull ended.
#[derive(Clone, Debug, PartialEq)]
pub enum PullOutcome {
    Done {
        digest: Option<String>,
        secs: f64,
    },
    Failed {
        title: String,
        message: String,
        fix: String,
        /// The Docker Engine went away under it: `r` pulls it again once the engine is back.
        retry: bool,
    },
}

impl PullOutcome {
    /// A failed pull: its error's title, words and fix, as every view shows them.
    pub fn failed(error: &PullError) -> PullOutcome {
        PullOutcome::Failed {
            title: error.title().into(),
            message: error.to_string(),
            fix: error.fix(),
            retry: matches!(error, PullError::EngineWentAway { .. }),
        }
    }
}
