//! One shell session: create the container, attach the terminal to it, follow resizes, read its
//! exit code, and remove it unless it is kept.

use bollard::container::LogOutput;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, ResizeContainerTTYOptionsBuilder,
    WaitContainerOptionsBuilder,
};
use bollard::Docker;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::signal::unix::{signal, Signal, SignalKind};

use super::error::ShellError;
use super::hangup::HangUp;
use super::stdio::{stdin_is_terminal, write_all_fd, DetachWatch, RawMode, StdinReader};
use crate::docker::{classify, DockerError, Engine};

/// How calls that only have the bollard client name the engine in errors.
const ENGINE: &str = "the Docker Engine";

/// Creates the shell's container (not started); returns its id.
pub async fn create(
    engine: &Engine,
    body: ContainerCreateBody,
    name: Option<&str>,
) -> Result<String, ShellError> {
    let mut options = CreateContainerOptionsBuilder::new();
    if let Some(name) = name {
        options = options.name(name);
    }
    let created = engine
        .client()
        .create_container(Some(options.build()), body)
        .await
        .map_err(|e| classify(e, engine.host(), "the shell's image"))?;
    for warning in &created.warnings {
        tracing::warn!(id = %created.id, "creating the shell: {warning}");
    }
    Ok(created.id)
}

/// How the copying between this terminal and the container ended.
enum Ended {
    /// The container's output ended: it exited.
    Exited,
    /// The user typed the detach keys.
    Detached,
    /// The terminal went away (the signal's name, or how it was noticed).
    HungUp(&'static str),
    /// The reader of stdout went away (`gpudeck shell IMAGE -- cmd | head`).
    ReaderGone,
}

/// Attaches this terminal to the container, starts it, and copies input and output until it
/// ends; returns its exit code. Raw mode (when stdin is a terminal and the container has one) and
/// stdin's flags are restored on every path, and no reader of stdin outlives the call.
pub async fn run_attached(docker: &Docker, id: &str) -> Result<i64, ShellError> {
    run_attached_watching(docker, id, &mut HangUp::watch()?).await
}

/// [`run_attached`], ended early by a hang-up `hangup` sees ([`ShellError::HungUp`]).
pub async fn run_attached_watching(
    docker: &Docker,
    id: &str,
    hangup: &mut HangUp,
) -> Result<i64, ShellError> {
    let inspect = docker
        .inspect_container(id, None)
        .await
        .map_err(|e| classify(e, ENGINE, &format!("container {id}")))?;
    let tty = inspect.config.and_then(|c| c.tty).unwrap_or(false);
    let options = AttachContainerOptionsBuilder::new()
        .stdin(true)
        .stdout(true)
        .stderr(true)
        .stream(true)
        .build();
    // Attached before the start, so not a byte of the first output is lost.
    let attached = docker
        .attach_container(id, Some(options))
        .await
        .map_err(|e| classify(e, ENGINE, &format!("container {id}")))?;
    docker
        .start_container(id, None)
        .await
        .map_err(|e| classify(e, ENGINE, &format!("container {id}")))?;
    let id = id.to_string();
    match pump(docker, &id, tty, attached, hangup).await? {
        // The output can end before the container does (the engine ends an attach whose input
        // closed): a hang-up while waiting counts as much as one while copying.
        Ended::Exited => tokio::select! {
            code = wait_exit(docker, &id) => code,
            why = hangup.recv() => Err(ShellError::HungUp { id, why }),
        },
        Ended::Detached => Err(ShellError::Detached { id }),
        Ended::HungUp(why) => Err(ShellError::HungUp { id, why }),
        Ended::ReaderGone => Err(ShellError::ReaderGone { id }),
    }
}

/// Re-enters a kept shell: starts it when stopped and attaches, as [`run_attached`] does.
pub async fn reenter(docker: &Docker, id: &str, hangup: &mut HangUp) -> Result<i64, ShellError> {
    run_attached_watching(docker, id, hangup).await
}

/// Removes the container after its session, unless it is kept.
pub async fn finish(engine: &Engine, id: &str, keep: bool) -> Result<(), ShellError> {
    if keep {
        return Ok(());
    }
    match engine.remove(id, true).await {
        Ok(()) | Err(DockerError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Copies stdin to the container and its output to stdout/stderr until the output ends, the
/// user detaches (ctrl-p ctrl-q), or the terminal or the reader of the output goes away.
async fn pump(
    docker: &Docker,
    id: &str,
    tty: bool,
    attached: bollard::container::AttachContainerResults,
    hangup: &mut HangUp,
) -> Result<Ended, ShellError> {
    let bollard::container::AttachContainerResults {
        mut output,
        mut input,
    } = attached;
    let raw = match tty && stdin_is_terminal() {
        true => Some(RawMode::enable().map_err(|e| ShellError::Terminal {
            detail: e.to_string(),
        })?),
        false => None,
    };
    let mut resizes = if raw.is_some() {
        resize(docker, id).await;
        signal(SignalKind::window_change()).ok()
    } else {
        None
    };
    let mut stdin = StdinReader::open();
    let mut watch = DetachWatch::default();
    let mut detached = false;
    let mut stdin_open = true;
    let mut buf = vec![0u8; 8192];
    let ended = loop {
        tokio::select! {
            chunk = output.next() => match chunk {
                Some(Ok(chunk)) => if let Some(ended) = write_output(chunk)? {
                    break ended;
                },
                Some(Err(e)) => return Err(classify(e, ENGINE, &format!("container {id}")).into()),
                None if detached => break Ended::Detached,
                None => break Ended::Exited,
            },
            read = stdin.read(&mut buf), if stdin_open => match read {
                Ok(n) if n > 0 => {
                    detached |= raw.is_some() && watch.feed(&buf[..n]);
                    if input.write_all(&buf[..n]).await.is_err() {
                        stdin_open = false;
                    }
                }
                // A terminal in raw mode has no end of input (ctrl-d is a byte): it hung up.
                _ if raw.is_some() => break Ended::HungUp("its terminal closed"),
                // End of input: passed on, so a piped command sees its end-of-file.
                _ => {
                    stdin_open = false;
                    let _ = input.shutdown().await;
                }
            },
            _ = next_resize(&mut resizes) => resize(docker, id).await,
            why = hangup.recv() => break Ended::HungUp(why),
        }
    };
    drop(stdin);
    drop(raw);
    Ok(ended)
}

/// Copies one piece of output; how the session ends when it cannot be written.
fn write_output(chunk: LogOutput) -> Result<Option<Ended>, ShellError> {
    let (fd, bytes) = match chunk {
        LogOutput::StdErr { message } => (2, message),
        LogOutput::StdOut { message } | LogOutput::Console { message } => (1, message),
        LogOutput::StdIn { .. } => return Ok(None),
    };
    match write_all_fd(fd, &bytes) {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Some(Ended::ReaderGone)),
        // A terminal that is gone answers EIO before (or instead of) the SIGHUP.
        Err(e) if e.raw_os_error() == Some(libc::EIO) => {
            Ok(Some(Ended::HungUp("its terminal closed")))
        }
        Err(e) => Err(ShellError::Terminal {
            detail: format!("writing the shell's output failed: {e}"),
        }),
    }
}

async fn next_resize(resizes: &mut Option<Signal>) {
    match resizes {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Tells the container's terminal this terminal's size; a container that has just ended cannot
/// be resized, which is no error.
async fn resize(docker: &Docker, id: &str) {
    let Ok((cols, rows)) = crossterm::terminal::size() else {
        return;
    };
    let options = ResizeContainerTTYOptionsBuilder::new()
        .w(i32::from(cols))
        .h(i32::from(rows))
        .build();
    if let Err(e) = docker.resize_container_tty(id, options).await {
        tracing::debug!(%id, "resizing the shell's terminal: {e}");
    }
}

/// The exit code, once the container has stopped.
async fn wait_exit(docker: &Docker, id: &str) -> Result<i64, ShellError> {
    let options = WaitContainerOptionsBuilder::new()
        .condition("not-running")
        .build();
    let mut waits = docker.wait_container(id, Some(options));
    match waits.next().await {
        Some(Ok(done)) => Ok(done.status_code),
        // bollard reports a non-zero exit as an error; for a shell it is just the answer.
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Ok(code),
        Some(Err(e)) => Err(classify(e, ENGINE, &format!("container {id}")).into()),
        None => Err(ShellError::Docker(DockerError::Other(format!(
            "the engine ended the wait for container {id} without an exit code"
        )))),
    }
}
