//! What `gpudeck services` and the Services tab show of each service: its run's state, where
//! to open it, the SSH line that reaches it, and what the service itself says when asked (a
//! notebook's kernels and how long they have been idle, Triton's models and their counts).

use std::time::Duration;

use serde::Serialize;

use super::gpu_use::OwnProcesses;
use super::jupyter::{idle_since_ms, parse_kernels, Kernel, KERNELS_PATH, STATUS_PATH};
use super::probe::{self, ProbeError};
use super::tensorboard;
use super::triton::api::{READY_PATH, REPOSITORY_INDEX_PATH};
use super::triton::{parse_metrics, parse_repository_index, Model, ModelStats};
use crate::gpu::GpuSample;
use crate::runs::{Run, RunGpu, RunState, ServiceKind, ServicePort};

/// The JSON schema id of `gpudeck services --json`.
pub const SERVICES_SCHEMA: &str = "gpudeck.services/v1";

/// One service, as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceRow {
    pub id: String,
    pub kind: ServiceKind,
    pub name: String,
    pub state: RunState,
    /// What the service answered: `ready`, `starting`, `down` (running, but not answering) or
    /// `ended`.
    pub health: Health,
    /// Why it is not ready, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The address to open, a notebook's with its token.
    pub url: String,
    /// The line that forwards its port to a laptop over SSH.
    pub ssh: String,
    pub ports: Vec<ServicePort>,
    pub gpus: Vec<RunGpu>,
    /// The image it runs in; `None`: on this machine.
    pub image: Option<String>,
    /// Unix ms.
    pub started_ms: Option<u64>,
    /// When it ended, Unix ms; null while it runs.
    pub ended_ms: Option<u64>,
    /// Why it failed or could not start, in words (the run's `error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A notebook whose kernels have all been idle: for how long.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_seconds: Option<u64>,
    /// Idle past `[notebook] idle_alert` while holding GPUs.
    pub idle_alert: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<Kernel>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelRow>,
    /// The GPU memory its own processes hold (its kernels', its containers'), not everyone's
    /// on its GPUs: filled in by `gpudeck services` from a fresh reading of the GPUs; null
    /// when ended, without GPUs, or unknown.
    pub gpu_memory_bytes: Option<u64>,
    /// What its processes are recognised by on the GPUs (a live service's); not in the JSON.
    #[serde(skip)]
    pub own: OwnProcesses,
}

/// Whether the service answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    Ready,
    Starting,
    Down,
    Ended,
}

impl ServiceRow {
    /// The GPU memory its own processes hold in `samples` (see [`OwnProcesses::memory_on`]);
    /// `None` for a service that has ended or has no GPU.
    pub fn own_gpu_memory(&self, samples: &[GpuSample]) -> Option<u64> {
        if self.health == Health::Ended || self.gpus.is_empty() {
            return None;
        }
        self.own.memory_on(samples)
    }

    /// "1 (3.2GiB)", "0,1 (0B)": its GPUs and the memory its own processes hold on them, as
    /// the Services tab and `gpudeck services` show them; "-" for none.
    pub fn gpus_with_memory(&self, memory: Option<u64>) -> String {
        match (self.gpus.is_empty(), memory) {
            (true, _) => "-".into(),
            (false, Some(bytes)) => {
                format!(
                    "{} ({})",
                    self.gpu_indices(),
                    crate::units::human_bytes(bytes)
                )
            }
            (false, None) => self.gpu_indices(),
        }
    }

    /// Its GPUs' indices as "1,2" (empty for none).
    pub fn gpu_indices(&self) -> String {
        crate::runs::gpu_indices(&self.gpus)
    }
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Ready => "ready",
            Health::Starting => "starting",
            Health::Down => "down",
            Health::Ended => "ended",
        }
    }
}

/// One Triton model version with its figures since the server started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRow {
    pub name: String,
    pub version: Option<String>,
    /// `READY`, `LOADING`, `UNAVAILABLE`, ...; `None`: in the repository, never loaded.
    pub state: Option<String>,
    /// Why it is not ready, in Triton's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub inferences: u64,
    pub successes: u64,
    pub failures: u64,
    /// Mean time of a successful request, in microseconds.
    pub mean_latency_us: Option<f64>,
}

impl ModelRow {
    fn of(model: Model, stats: &[ModelStats]) -> ModelRow {
        let own = stats.iter().filter(|s| {
            s.model == model.name && model.version.as_ref().is_none_or(|v| *v == s.version)
        });
        let (mut inferences, mut successes, mut failures, mut duration) = (0, 0, 0, 0);
        for s in own {
            inferences += s.inferences;
            successes += s.successes;
            failures += s.failures;
            duration += s.request_duration_us;
        }
        ModelRow {
            name: model.name,
            version: model.version,
            state: model.state.map(|s| s.as_str().to_string()),
            reason: model.reason,
            inferences,
            successes,
            failures,
            mean_latency_us: (successes > 0).then(|| duration as f64 / successes as f64),
        }
    }
}

/// How long a service may take to answer after its run started before it counts as down.
const START_GRACE_MS: u64 = 120_000;

/// The runs of the store that are services, newest first.
pub fn services_of(runs: Vec<Run>) -> Vec<Run> {
    let mut services: Vec<Run> = runs
        .into_iter()
        .filter(|r| r.record.service.is_some())
        .collect();
    services.reverse();
    services
}

/// Looks at every service (the live ones asked over HTTP, all at once), `now` Unix ms.
pub async fn look_at_all(runs: &[Run], now: u64, idle_alert: Option<Duration>) -> Vec<ServiceRow> {
    let client = probe::client();
    let looks = runs.iter().map(|run| async {
        match &client {
            Ok(client) => look(run, client, now, idle_alert).await,
            Err(why) => ServiceRow {
                problem: Some(why.to_string()),
                ..row_of(run, now)
            },
        }
    });
    futures::future::join_all(looks).await
}

/// [`look_at_all`] from code that does not run async: on `runtime`, or without one (it could
/// not be made) the rows the records alone give. No runs: no HTTP client is even made.
pub fn look_blocking(
    runtime: Option<&tokio::runtime::Runtime>,
    runs: &[Run],
    now: u64,
    idle_alert: Option<Duration>,
) -> Vec<ServiceRow> {
    match (runtime, runs.is_empty()) {
        (_, true) => Vec::new(),
        (Some(rt), false) => rt.block_on(look_at_all(runs, now, idle_alert)),
        (None, false) => runs.iter().map(|r| row_of(r, now)).collect(),
    }
}

/// The row of `run` from its record alone: what it is, where it listens.
pub fn row_of(run: &Run, now: u64) -> ServiceRow {
    let record = &run.record;
    let service = record
        .service
        .clone()
        .unwrap_or_else(|| crate::runs::ServiceSpec {
            kind: ServiceKind::Notebook,
            ports: Vec::new(),
            idle_stop_secs: None,
        });
    let port = service.ports.first().map_or(0, |p| p.port);
    let state = run.state();
    let live = matches!(state, RunState::Starting | RunState::Running);
    let url = match (service.kind, token_of(run)) {
        (ServiceKind::Notebook, Some(token)) => super::jupyter::lab_url(port, &token),
        // Triton's HTTP API (KServe v2); its root answers nothing.
        (ServiceKind::Triton, _) => format!("http://127.0.0.1:{port}/v2"),
        _ => format!("http://127.0.0.1:{port}/"),
    };
    // Every port the service listens on is forwarded: Triton's gRPC and metrics too.
    let forwards: Vec<String> = service
        .ports
        .iter()
        .map(|p| format!("-L {0}:127.0.0.1:{0}", p.port))
        .collect();
    let ssh = format!(
        "ssh -N {} {}@{}",
        forwards.join(" "),
        crate::host::my_user_name(),
        record.host
    );
    let starting = record
        .started_ms
        .is_none_or(|s| now.saturating_sub(s) < START_GRACE_MS);
    ServiceRow {
        id: record.id.clone(),
        kind: service.kind,
        name: record.name.clone(),
        state,
        health: match (live, starting) {
            (false, _) => Health::Ended,
            (true, true) => Health::Starting,
            (true, false) => Health::Down,
        },
        problem: None,
        url,
        ssh,
        ports: service.ports,
        gpus: record.gpus.clone(),
        image: record.image.clone(),
        started_ms: record.started_ms,
        ended_ms: record.ended_ms.filter(|_| !live),
        error: record.error.clone(),
        idle_seconds: None,
        idle_alert: false,
        kernels: Vec::new(),
        models: Vec::new(),
        gpu_memory_bytes: None,
        own: match live {
            true => OwnProcesses::of(run),
            false => OwnProcesses::default(),
        },
    }
}

/// A notebook's token, from its rank's environment (run.json is private to its owner).
pub fn token_of(run: &Run) -> Option<String> {
    run.record
        .ranks
        .first()
        .and_then(|r| r.env.get(super::jupyter::TOKEN_ENV))
        .cloned()
}

/// The row of `run`, with what the service says when it is live.
pub async fn look(
    run: &Run,
    client: &reqwest::Client,
    now: u64,
    idle_alert: Option<Duration>,
) -> ServiceRow {
    let mut row = row_of(run, now);
    if row.health == Health::Ended || run.state() != RunState::Running {
        return row;
    }
    // Nothing (a notebook's token least of all) goes to a listener that is not the service's.
    if let Err(not_own) = super::owner::check(run) {
        row.problem = Some(not_own.to_string());
        return row;
    }
    let base = |port: &str| {
        row.ports
            .iter()
            .find(|p| p.name == port)
            .map(|p| format!("http://127.0.0.1:{}", p.port))
    };
    let answer = match row.kind {
        ServiceKind::Notebook => {
            let token = token_of(run);
            look_at_notebook(client, base("http"), token.as_deref(), &mut row).await
        }
        ServiceKind::Tensorboard => match base("http") {
            Some(url) => probe::get(client, &format!("{url}{}", tensorboard::READY_PATH), None)
                .await
                .and_then(probe::Answer::success)
                .map(drop)
                .map_err(|e| e.to_string()),
            None => Err("it has no port".into()),
        },
        ServiceKind::Triton => {
            look_at_triton(client, base("http"), base("metrics"), &mut row).await
        }
    };
    match answer {
        Ok(()) => row.health = Health::Ready,
        Err(why) => row.problem = Some(why),
    }
    if let (Some(since), true) = (
        idle_since_ms(&row.kernels),
        row.kind == ServiceKind::Notebook,
    ) {
        let idle = now.saturating_sub(since) / 1000;
        row.idle_seconds = Some(idle);
        row.idle_alert = !row.gpus.is_empty()
            && idle_alert.is_some_and(|limit| Duration::from_secs(idle) >= limit);
    }
    row
}

/// The body of a 2xx answer to a GET, or why there is none, in words.
async fn body_of(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> Result<String, String> {
    probe::get(client, url, token)
        .await
        .and_then(probe::Answer::success)
        .map_err(|e: ProbeError| e.to_string())
}

async fn look_at_notebook(
    client: &reqwest::Client,
    base: Option<String>,
    token: Option<&str>,
    row: &mut ServiceRow,
) -> Result<(), String> {
    let base = base.ok_or("it has no port")?;
    body_of(client, &format!("{base}{STATUS_PATH}"), token).await?;
    let kernels = body_of(client, &format!("{base}{KERNELS_PATH}"), token).await?;
    row.kernels = parse_kernels(&kernels)?;
    Ok(())
}

async fn look_at_triton(
    client: &reqwest::Client,
    base: Option<String>,
    metrics: Option<String>,
    row: &mut ServiceRow,
) -> Result<(), String> {
    let base = base.ok_or("it has no port")?;
    body_of(client, &format!("{base}{READY_PATH}"), None)
        .await
        .map_err(|why| format!("not ready: {why}"))?;
    let index = probe::post(
        client,
        &format!("{base}{REPOSITORY_INDEX_PATH}"),
        None,
        "{}",
    )
    .await
    .and_then(probe::Answer::success)
    .map_err(|e| e.to_string())?;
    let models = parse_repository_index(&index)?;
    // Without the metrics the models are still listed, with no figures.
    let stats = match metrics {
        Some(url) => body_of(client, &format!("{url}/metrics"), None)
            .await
            .ok()
            .and_then(|text| parse_metrics(&text).ok())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    row.models = models
        .into_iter()
        .map(|m| ModelRow::of(m, &stats))
        .collect();
    Ok(())
}
