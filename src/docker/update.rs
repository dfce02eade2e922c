//! Messages from the Docker collector to the app: what changed in the engine, and how actions went.

use crate::app::pulls::PullOutcome;
use crate::pull::PullProgress;

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
