//! What the runs collector and the app say to each other: the rows of the runs list, the run
//! in focus (its GPU traces, progress and alerts), a rank's new log lines, and the commands the
//! app sends back.

use std::path::PathBuf;

use crate::claims::Claim;
use crate::runs::progress::ProgressEvent;
use crate::runs::record::RunOwner;
use crate::runs::record::RunState;
use crate::runs::recorded::summary::{Alert, RunSummary};
use crate::runs::recorded::xids::XidHit;
use crate::runs::spec::Launcher;

/// One run as the runs list shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    pub id: String,
    pub name: String,
    pub state: RunState,
    pub launcher: Launcher,
    pub image: Option<String>,
    pub gpus: Vec<u32>,
    pub ranks: usize,
    /// Rank 0's command line, as the Runs tab lists it.
    pub command: String,
    pub created_ms: u64,
    pub started_ms: Option<u64>,
    pub ended_ms: Option<u64>,
    pub exit_code: Option<i32>,
    pub first_failed_rank: Option<usize>,
    pub error: Option<String>,
    pub dir: PathBuf,
    /// GPU use so far, from its metrics (None before the first sample).
    pub summary: Option<RunSummary>,
    /// The job its backend holds it as elsewhere (a Slurm batch job): its id, where it runs,
    /// its GPUs, why it waits; `None` for a run supervised here.
    pub job: Option<crate::runs::record::RemoteJob>,
    /// A running container run whose supervisor is waiting for the Docker Engine to come back.
    pub engine_away: Option<crate::runs::record::EngineAway>,
    /// What its leftover processes are recognised by.
    pub owner: RunOwner,
    /// The Xids its GPUs reported while it lived, if it did not succeed (oldest first).
    pub xids: Vec<XidHit>,
}

/// One GPU's history over a run: x is seconds since the run started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuTrace {
    pub index: u32,
    pub util_pct: Vec<(f64, f64)>,
    pub mem_pct: Vec<(f64, f64)>,
    pub power_w: Vec<(f64, f64)>,
}

/// Training progress parsed from rank 0's output.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgressView {
    pub latest: Option<ProgressEvent>,
    /// The scalar drawn as the curve (the loss when there is one), and its points.
    pub curve: Option<(String, Vec<(f64, f64)>)>,
    /// Every scalar's latest value, in the order they first appeared.
    pub last_values: Vec<(String, f64)>,
    pub non_finite: u64,
}

/// What the run in focus looks like now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunDetail {
    pub id: String,
    pub gpus: Vec<GpuTrace>,
    pub progress: ProgressView,
    /// Stragglers and idle runs, from the last minutes of metrics of a live run.
    pub alerts: Vec<Alert>,
    /// Metrics bytes not read because the file could not be parsed (the reason).
    pub metrics_error: Option<String>,
}

/// New lines of the rank whose logs are shown.
#[derive(Clone, Debug, PartialEq)]
pub struct LogChunk {
    pub id: String,
    pub rank: usize,
    /// The lines, oldest first, each marked stderr or not.
    pub lines: Vec<(bool, String)>,
    /// Start over: these lines replace what was shown (another run or rank, or the first read).
    pub reset: bool,
    /// Bytes passed over because they came faster than a screen can show.
    pub skipped: u64,
}

/// What the collector tells the app.
#[derive(Clone, Debug, PartialEq)]
pub enum RunsUpdate {
    Listed {
        runs: Vec<RunRow>,
        warnings: Vec<String>,
    },
    /// The rows of the last listing that changed since (the same runs otherwise), and the
    /// listing's warnings now: a live run costs its own row, not the whole history's.
    Changed {
        rows: Vec<RunRow>,
        warnings: Vec<String>,
    },
    Detail(Box<RunDetail>),
    Log(LogChunk),
    /// The GPU claims of live runs and shells, sent when they change: the dashboard's
    /// suggestions of free GPUs leave these out.
    Claimed(Vec<Claim>),
    /// The store itself cannot be read: what is wrong and what to do (not "no runs yet").
    StoreUnreadable(String),
}

/// What the app asks of the collector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunsCommand {
    /// Follow this run's metrics and progress (None: none).
    Focus(Option<String>),
    /// Follow this rank's logs of this run.
    FollowLogs {
        id: String,
        rank: usize,
    },
    /// Look at the store now (a run was just started or stopped).
    Refresh,
    /// Something in the store's directories changed (the store's watch says so): look again.
    Look,
    Shutdown,
}
