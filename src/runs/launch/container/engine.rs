//! The Docker Engine from the run commands, which are not async: each call gets a runtime of its
//! own on a thread of its own, so it works whoever calls it (a CLI or an async caller).

use std::future::Future;

use crate::docker::{DockerError, Engine};
use crate::runs::error::RunError;
use crate::runs::record::ContainerRecord;

/// Runs `future` to completion on a fresh current-thread runtime on a scoped thread.
pub(in crate::runs) fn block_on<F, T, E>(future: F) -> Result<T, RunError>
where
    F: Future<Output = Result<T, E>> + Send,
    T: Send,
    E: Into<RunError> + Send,
{
    let outcome = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        RunError::Docker(DockerError::Other(format!(
                            "could not start an async runtime: {e}"
                        )))
                    })?;
                runtime.block_on(future).map_err(Into::into)
            })
            .join()
    });
    outcome.unwrap_or_else(|_| {
        Err(RunError::Docker(DockerError::Other(
            "the thread talking to the engine panicked".into(),
        )))
    })
}

/// Connects to the engine a container run is on.
pub(in crate::runs) async fn connect(container: &ContainerRecord) -> Result<Engine, DockerError> {
    Engine::connect(&container.host_spec()).await
}
