//! The engine a container run's supervisor talks to, kept across the engine going away. The
//! containers live on without the engine (its shims keep them), so a call that fails because the
//! engine stopped answering is not the run's end: the supervisor waits for the engine,
//! reconnecting with backoff and saying so (supervisor.log, and `run.json` for the Runs tab),
//! then makes the call again.

use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Mutex;

use crate::docker::{DockerError, Engine, HostSpec};
use crate::runs::clock;

/// The first wait before reconnecting; it doubles up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// The longest wait between two tries: an engine back is noticed within this.
const MAX_RETRY: Duration = Duration::from_secs(10);
/// How long a ping may take before the engine counts as gone (a firewalled tcp:// host hangs).
const PING_TIMEOUT: Duration = Duration::from_secs(10);
/// A call that fails while the engine still answers pings is made again this many times (a
/// stream cut by a restart that was over before the ping) before its failure counts as its own.
const BLIPS: u32 = 3;

/// What the supervisor is told about the engine, to record for the Runs tab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::runs) enum EngineNotice {
    /// The engine stopped answering at `since_ms`; `detail` is the failure that showed it.
    Away { since_ms: u64, detail: String },
    /// It answers again.
    Back,
}

/// The engine of a run, reconnected whenever it went away.
pub(in crate::runs) struct EngineLink {
    spec: HostSpec,
    current: Mutex<Current>,
    notices: UnboundedSender<EngineNotice>,
}

struct Current {
    engine: Engine,
    /// Bumped at each reconnection, so callers that failed together wait only once.
    generation: u64,
}

impl EngineLink {
    pub(in crate::runs) fn new(
        engine: Engine,
        spec: HostSpec,
        notices: UnboundedSender<EngineNotice>,
    ) -> EngineLink {
        EngineLink {
            spec,
            current: Mutex::new(Current {
                engine,
                generation: 0,
            }),
            notices,
        }
    }

    /// The engine as last connected, and how many times it has been reconnected.
    pub(in crate::runs) async fn engine(&self) -> (Engine, u64) {
        let current = self.current.lock().await;
        (current.engine.clone(), current.generation)
    }

    /// Runs `call` (about `what`, for the log); when it fails because the engine went away, waits
    /// for the engine to come back and runs it again. A failure the engine itself answered (a
    /// missing container, a refusal) is returned as it is.
    pub(in crate::runs) async fn call<T, F, Fut>(
        &self,
        what: &str,
        mut call: F,
    ) -> Result<T, DockerError>
    where
        F: FnMut(Engine) -> Fut,
        Fut: Future<Output = Result<T, DockerError>>,
    {
        let mut blips = 0;
        loop {
            let (engine, generation) = self.engine().await;
            let error = match call(engine).await {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            if answered(&error) {
                return Err(error);
            }
            if self.wait_out(generation, what, &error).await {
                blips = 0;
            } else {
                blips += 1;
                if blips > BLIPS {
                    return Err(error);
                }
            }
        }
    }

    /// After `error`, waits until the engine answers again; false when it answered all along.
    async fn wait_out(&self, generation: u64, what: &str, error: &DockerError) -> bool {
        let mut current = self.current.lock().await;
        if current.generation != generation {
            // Another caller saw the same outage and waited it out already.
            return true;
        }
        if answers(&current.engine).await {
            return false;
        }
        let since_ms = clock::now_ms();
        let host = self.spec.uri.as_str();
        say(&format!(
            "the Docker Engine at {host} went away ({what}: {error}). The containers run on \
             without it; reconnecting with backoff, and the run is recorded once the engine is \
             back. Check the engine: `systemctl status docker`."
        ));
        let _ = self.notices.send(EngineNotice::Away {
            since_ms,
            detail: error.to_string(),
        });
        current.engine = self.reconnect(since_ms).await;
        current.generation += 1;
        say(&format!(
            "the Docker Engine at {host} is back after {}; carrying on",
            clock::duration(clock::now_ms().saturating_sub(since_ms))
        ));
        let _ = self.notices.send(EngineNotice::Back);
        true
    }

    /// Connects until it works, waiting longer each time (up to [`MAX_RETRY`]).
    async fn reconnect(&self, since_ms: u64) -> Engine {
        let mut delay = FIRST_RETRY;
        let mut tries = 0u32;
        loop {
            tokio::time::sleep(delay).await;
            tries += 1;
            match Engine::connect(&self.spec).await {
                Ok(engine) => return engine,
                // Said at tries 1, 2, 4, 8...: enough to follow, not a line per try.
                Err(e) if tries.is_power_of_two() => say(&format!(
                    "still waiting for the engine after {} ({e}); next try in {} s",
                    clock::duration(clock::now_ms().saturating_sub(since_ms)),
                    (delay * 2).min(MAX_RETRY).as_secs_f32()
                )),
                Err(_) => {}
            }
            delay = (delay * 2).min(MAX_RETRY);
        }
    }
}

/// One message to supervisor.log, wrapped to be read whole at 80 columns.
pub(in crate::runs) fn say(message: &str) {
    let text = format!("gpudeck supervisor: {message}");
    let options = textwrap::Options::new(80).subsequent_indent("  ");
    errln!("{}", textwrap::fill(&text, options));
}

/// Whether the engine itself gave this answer: then it is there, and waiting would not help.
fn answered(error: &DockerError) -> bool {
    matches!(
        error,
        DockerError::NotFound { .. }
            | DockerError::Conflict { .. }
            | DockerError::NoGpuRuntime { .. }
            | DockerError::ApiTooOld { .. }
            | DockerError::InvalidHost { .. }
            | DockerError::Tls { .. }
            | DockerError::PermissionDenied { .. }
    )
}

/// Whether the engine answers a ping now.
async fn answers(engine: &Engine) -> bool {
    matches!(
        tokio::time::timeout(PING_TIMEOUT, engine.client().ping()).await,
        Ok(Ok(_))
    )
}
