//! Messages between the app and the Docker collector: what it is asked to do, what changed in
//! the engine, and how actions went.

use crate::pull::{PullOutcome, PullProgress};

use super::types::{
    ContainerDetails, ContainerInfo, ContainerStats, EngineInfo, ImageInfo, LogLine,
};

/// What the Docker collector tells the app.
#[derive(Clone, Debug, PartialEq)]
pub enum DockerUpdate {
    Connecting {
        host: String,
    },
    /// The engine cannot be used; the views explain why and the collector retries by itself.
    Unavailable {
        host: String,
        title: String,
        message: String,
        fix: String,
    },
    Connected {
        host: String,
        info: Box<EngineInfo>,
    },
    Containers(Vec<ContainerInfo>),
    ContainerChanged(Box<ContainerInfo>),
    ContainerRemoved(String),
    Images(Vec<ImageInfo>),
    Stats(String, ContainerStats),
    LogLines {
        container: String,
        lines: Vec<LogLine>,
    },
    LogsEnded {
        container: String,
        reason: String,
    },
    Details(Box<ContainerDetails>),
    PullStarted {
        id: u64,
        reference: String,
    },
    PullProgress {
        id: u64,
        progress: Box<PullProgress>,
    },
    PullFinished {
        id: u64,
        outcome: PullOutcome,
    },
    /// An action finished: a short description and its outcome.
    ActionDone {
        what: String,
        result: Result<(), String>,
    },
}

/// Work for the Docker collector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DockerCommand {
    Start(String),
    Stop(String),
    Restart(String),
    RemoveContainer(String),
    RemoveImage(String),
    OpenLogs(String),
    CloseLogs,
    Inspect(String),
    /// Stream stats for these running containers only (the ones on screen).
    WatchStats(Vec<String>),
    /// Pull an image (a validated reference).
    Pull(String),
    CancelPull(u64),
}
