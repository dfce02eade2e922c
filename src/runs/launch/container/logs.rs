//! A container rank's output in its log files: appended from the attach stream as it arrives, and
//! caught up from the engine's own log when that stream broke, the engine went away under it, or
//! nobody was attached (the supervisor was killed). The files hold exactly the container's
//! bytes, so a file's length is how far it has got: catching up appends what lies beyond it.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use futures::{Stream, StreamExt};

use crate::docker::{DockerError, Engine};
use crate::runs::error::RunError;
use crate::runs::store::{log_path, open_log, LogStream};

/// A rank's two log files, open for appending.
#[derive(Debug)]
pub(in crate::runs) struct RankLogs {
    stdout: File,
    stderr: File,
}

impl RankLogs {
    pub(in crate::runs) fn open(dir: &Path, rank: usize) -> Result<RankLogs, RunError> {
        Ok(RankLogs {
            stdout: open_log(&log_path(dir, rank, LogStream::Stdout))?,
            stderr: open_log(&log_path(dir, rank, LogStream::Stderr))?,
        })
    }

    /// Appends one chunk of output to its stream's file.
    fn write(&mut self, chunk: &LogOutput) -> std::io::Result<()> {
        match chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => {
                self.stdout.write_all(message)
            }
            LogOutput::StdErr { message } => self.stderr.write_all(message),
            LogOutput::StdIn { .. } => Ok(()),
        }
    }
}

/// Copies the attach stream into the files until the container's output ends; `false` when the
/// stream broke first (then [`catch_up`] fetches the rest).
pub(in crate::runs) async fn copy_output<S>(mut output: S, logs: &mut RankLogs, what: &str) -> bool
where
    S: Stream<Item = Result<LogOutput, bollard::errors::Error>> + Unpin,
{
    while let Some(chunk) = output.next().await {
        match chunk {
            Ok(chunk) => {
                if let Err(e) = logs.write(&chunk) {
                    errln!("gpudeck supervisor: writing the output of {what}: {e}");
                }
            }
            Err(e) => {
                errln!("gpudeck supervisor: the output stream of {what} broke: {e}");
                return false;
            }
        }
    }
    true
}

/// Appends what the engine logged for the container beyond what the rank's files hold; with
/// `follow`, goes on appending as the container writes until it stops.
pub(in crate::runs) async fn catch_up(
    engine: &Engine,
    id: &str,
    dir: &Path,
    rank: usize,
    follow: bool,
) -> Result<u64, DockerError> {
    let held = |stream| std::fs::metadata(log_path(dir, rank, stream)).map_or(0, |m| m.len());
    let have = [held(LogStream::Stdout), held(LogStream::Stderr)];
    let mut logs = RankLogs::open(dir, rank).map_err(|e| DockerError::Other(e.to_string()))?;
    let options = LogsOptionsBuilder::new()
        .stdout(true)
        .stderr(true)
        .follow(follow)
        .build();
    let mut chunks = engine.client().logs(id, Some(options));
    let mut seen = [0u64; 2];
    let mut added = 0u64;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| engine.error(e, &format!("the log of container {id}")))?;
        let (slot, bytes) = match &chunk {
            LogOutput::StdOut { message } | LogOutput::Console { message } => (0, message),
            LogOutput::StdErr { message } => (1, message),
            LogOutput::StdIn { .. } => continue,
        };
        let len = bytes.len() as u64;
        let skip = have[slot].saturating_sub(seen[slot]).min(len);
        seen[slot] += len;
        if skip < len {
            let rest = &bytes[usize::try_from(skip).unwrap_or(bytes.len())..];
            let file = if slot == 0 {
                &mut logs.stdout
            } else {
                &mut logs.stderr
            };
            file.write_all(rest)
                .map_err(|e| DockerError::Other(format!("writing a log of rank {rank}: {e}")))?;
            added += rest.len() as u64;
        }
    }
    Ok(added)
}

/// Appends the engine's log of the container beyond what the files hold, following it until the
/// container stops; an error when the stream ended while the container still runs (the engine
/// went away under it), so that the caller waits for the engine and follows again.
pub(in crate::runs) async fn follow_log(
    engine: Engine,
    id: &str,
    dir: &Path,
    rank: usize,
) -> Result<u64, DockerError> {
    let added = catch_up(&engine, id, dir, rank, true).await?;
    if has_ended(&engine, id).await? {
        Ok(added)
    } else {
        Err(DockerError::Unreachable {
            host: engine.host().to_string(),
            detail: format!("the log of container {id} ended while it still runs"),
        })
    }
}

/// Whether the container has stopped running.
pub(in crate::runs) async fn has_ended(engine: &Engine, id: &str) -> Result<bool, DockerError> {
    let inspect = engine
        .client()
        .inspect_container(id, None)
        .await
        .map_err(|e| engine.error(e, &format!("container {id}")))?;
    Ok(!inspect.state.and_then(|s| s.running).unwrap_or(false))
}
