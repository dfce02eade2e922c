//! `run.json`: what a run resolved to and how it went, and the state a reader derives from it;
//! and its `container` part: which engine a container run is on, which image (by id and digest)
//! its ranks run, how they were given GPUs, and each rank's container. A Slurm run's `slurm`
//! part is in `record/slurm_job.rs`; what others are shown of a run held as a job elsewhere, in
//! `record/remote_job.rs`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod owner;
mod remote_job;
mod slurm_job;

pub use owner::RunOwner;
pub use remote_job::RemoteJob;
pub use slurm_job::SlurmJob;

use super::spec::{Launcher, ServiceSpec};
use crate::config::Backend;
use crate::docker::{HostSpec, TlsFiles};
use crate::gpu::GpuSourceChoice;
use crate::host::ProcessRef;

/// The JSON schema id of `run.json`; bump it when a field changes meaning or disappears.
pub const RUN_SCHEMA: &str = "gpudeck.run/v1";

/// A run still `starting` with no supervisor this long after it was created never will start.
const STALE_START_MS: u64 = 120_000;

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// Recorded by `gpudeck run`; the supervisor has not started the ranks yet (a Slurm job:
    /// pending in the queue).
    #[default]
    Starting,
    Running,
    Succeeded,
    Failed,
    Stopped,
    /// The supervisor died without recording an end (derived by readers), or a Slurm job left
    /// the queue and no Slurm tool can say how it ended (written).
    Lost,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Starting => "starting",
            RunState::Running => "running",
            RunState::Succeeded => "succeeded",
            RunState::Failed => "failed",
            RunState::Stopped => "stopped",
            RunState::Lost => "lost",
        }
    }

    /// Whether the run has ended for good (a lost run may still have live ranks).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            RunState::Succeeded | RunState::Failed | RunState::Stopped
        )
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One GPU a run was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunGpu {
    pub index: u32,
    pub uuid: String,
    pub name: String,
}

/// One of a run's GPUs that fell off the bus (NVML: GPU_IS_LOST) while the run was sampled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostGpu {
    pub index: u32,
    pub uuid: String,
    /// The sample that first found it lost.
    pub at_ms: u64,
}

/// One process the supervisor starts, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankRecord {
    pub rank: usize,
    pub argv: Vec<String>,
    /// The variables gpudeck and the spec set for it (on top of the launching environment).
    pub env: BTreeMap<String, String>,
    /// The GPUs (indices) this rank sees.
    pub gpus: Vec<u32>,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// When the supervisor saw it exit (Unix ms): what "40 s before rank 1 died" counts to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
}

/// GPU indices as "1,2" (empty for none).
pub fn gpu_indices(gpus: &[RunGpu]) -> String {
    let list: Vec<String> = gpus.iter().map(|g| g.index.to_string()).collect();
    list.join(",")
}

/// Everything `run.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: String,
    pub id: String,
    pub name: String,
    pub launcher: Launcher,
    #[serde(default)]
    pub image: Option<String>,
    pub workdir: PathBuf,
    pub host: String,
    #[serde(default)]
    pub driver_version: Option<String>,
    pub gpus: Vec<RunGpu>,
    pub ranks: Vec<RankRecord>,
    pub state: RunState,
    pub created_ms: u64,
    #[serde(default)]
    pub started_ms: Option<u64>,
    #[serde(default)]
    pub ended_ms: Option<u64>,
    #[serde(default)]
    pub supervisor: Option<ProcessRef>,
    /// The ranks' process group (rank 0's pid) and its leader's identity.
    #[serde(default)]
    pub process_group: Option<ProcessRef>,
    /// 0 when every rank succeeded, the first failed rank's code, or a stopped run's.
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub first_failed_rank: Option<usize>,
    /// Why the supervisor could not start or finish the run, in words.
    #[serde(default)]
    pub error: Option<String>,
    /// The GPU source `gpudeck run` used, which the supervisor samples the run's GPUs from.
    #[serde(default)]
    pub gpu_source: Option<GpuSourceChoice>,
    /// Why `metrics.csv` is missing or stops early (the source could not be opened or written).
    #[serde(default)]
    pub metrics_error: Option<String>,
    /// The run's GPUs that fell off the bus during it, and when.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_gpus: Vec<LostGpu>,
    /// A container run's engine, image and containers; absent for a host run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerRecord>,
    /// Where the run runs; absent (local) in records written before Slurm runs existed.
    #[serde(default, skip_serializing_if = "Backend::is_local")]
    pub backend: Backend,
    /// A Slurm run's job: its id, script and what the queue last said; absent for a local run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmJob>,
    /// What a service run serves and on which ports (its spec's `service`); absent for a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceSpec>,
    /// A local torchrun run's workers, which torchrun starts (not gpudeck): how many. Each
    /// writes its own `rank-N.stdout.log`/`rank-N.stderr.log` (links to torchrun's log files),
    /// torchrun itself `torchrun.stdout.log`/`torchrun.stderr.log`. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torchrun_workers: Option<usize>,
}

impl RunRecord {
    /// Hides the values of the ranks' secret-looking environment variables in a record about
    /// to be printed; `run.json` itself (0600) keeps them.
    pub fn redact(&mut self, secrets: &crate::secrets::Secrets) {
        for rank in &mut self.ranks {
            secrets.redact_map(&mut rank.env);
        }
    }

    /// The record of a run about to start: nothing has run, nothing has ended, no GPUs or ranks
    /// yet; every optional part absent.
    pub fn starting(
        id: String,
        name: String,
        launcher: Launcher,
        workdir: PathBuf,
        host: String,
        created_ms: u64,
    ) -> RunRecord {
        RunRecord {
            schema: RUN_SCHEMA.into(),
            id,
            name,
            launcher,
            image: None,
            workdir,
            host,
            driver_version: None,
            gpus: Vec::new(),
            ranks: Vec::new(),
            state: RunState::Starting,
            created_ms,
            started_ms: None,
            ended_ms: None,
            supervisor: None,
            process_group: None,
            exit_code: None,
            first_failed_rank: None,
            error: None,
            gpu_source: None,
            metrics_error: None,
            lost_gpus: Vec::new(),
            backend: Default::default(),
            slurm: None,
            container: None,
            service: None,
            torchrun_workers: None,
        }
    }

    /// How many ranks have logs: a torchrun run's workers, else the processes gpudeck started.
    pub fn log_ranks(&self) -> usize {
        self.torchrun_workers.unwrap_or(self.ranks.len())
    }

    /// The state as a reader should show it: a running run whose supervisor is gone (dead, a
    /// zombie, or its pid now someone else's) is `lost`, unless its containers were looked at.
    pub fn effective_state(&self) -> RunState {
        // A batch job has no supervisor here; its state is what Slurm last said (`look_at_jobs`).
        if !self.backend.has_supervisor_here() {
            return self.state;
        }
        match self.state {
            RunState::Running | RunState::Starting => match &self.supervisor {
                Some(sup) if sup.is_alive() => self.state,
                Some(_) => self.lost(),
                // Not yet picked up: `gpudeck run` waits for this with a deadline and records a
                // failure itself when it passes; long past it, `gpudeck run` itself was killed.
                None if super::clock::now_ms().saturating_sub(self.created_ms) > STALE_START_MS => {
                    self.lost()
                }
                None => self.state,
            },
            state => state,
        }
    }

    /// `lost`, or what the engine showed of a container run's containers.
    fn lost(&self) -> RunState {
        self.container
            .as_ref()
            .and_then(|c| c.observed)
            .unwrap_or(RunState::Lost)
    }

    /// GPU indices as "1,2".
    /// The GPUs a summary covers: the run's own, or for a Slurm job (whose GPUs the scheduler
    /// picked on its node) those its metrics name.
    pub fn summary_gpus(&self, seen: impl IntoIterator<Item = u32>) -> Vec<u32> {
        if !self.gpus.is_empty() || self.backend.uses_this_machines_gpus() {
            return self.gpus.iter().map(|g| g.index).collect();
        }
        let seen: std::collections::BTreeSet<u32> = seen.into_iter().collect();
        seen.into_iter().collect()
    }

    pub fn gpu_indices(&self) -> String {
        gpu_indices(&self.gpus)
    }

    /// How long it ran (so far, for a live run), given the time now.
    pub fn duration_ms(&self, now_ms: u64) -> Option<u64> {
        let start = self.started_ms?;
        Some(self.ended_ms.unwrap_or(now_ms).saturating_sub(start))
    }
}

/// How a container run was set up; absent from a host run's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerRecord {
    /// The engine the containers are on, as `--docker-host` / `DOCKER_HOST` resolved when the
    /// run started (`unix:///var/run/docker.sock`): `stop` and `runs` go back to the same one.
    pub engine: String,
    /// The client certificate files for a TLS engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_tls: Option<EngineTls>,
    /// The image's id (`sha256:...`, the digest of its config): exactly what ran, whatever its
    /// tag points at later.
    pub image_id: String,
    /// Its registry digests (`repo@sha256:...`); empty for an image built or imported here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_digests: Vec<String>,
    /// `bridge` or `none` (one container), `host` (per-gpu, so ranks meet on 127.0.0.1), or a
    /// service's own bridge, `gpudeck-<run id>-net`.
    pub network: String,
    /// How GPUs were asked for: `none`, `device-request` (by UUID) or `cdi`.
    pub gpu_request: String,
    /// Whether the containers stay after the run.
    #[serde(default)]
    pub keep: bool,
    /// One per rank, rank order.
    #[serde(default)]
    pub containers: Vec<RankContainerRef>,
    /// What a reader found on the engine for a run whose supervisor is gone; never written.
    #[serde(skip)]
    pub observed: Option<RunState>,
    /// Set by the supervisor while the engine is away (it waits for it; the containers run on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_away: Option<EngineAway>,
}

/// The engine stopped answering the supervisor of a running container run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineAway {
    /// When the supervisor noticed, Unix milliseconds.
    pub since_ms: u64,
    /// The failure that showed it.
    pub detail: String,
}

/// A rank's container: its name (known before it exists) and, once created, its id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankContainerRef {
    pub rank: usize,
    pub name: String,
    #[serde(default)]
    pub id: Option<String>,
}

/// `ca.pem`, `cert.pem`, `key.pem` of a TLS engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineTls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl ContainerRecord {
    /// The engine as a connection address.
    pub fn host_spec(&self) -> HostSpec {
        HostSpec {
            uri: self.engine.clone(),
            tls: self.engine_tls.as_ref().map(|t| TlsFiles {
                ca: t.ca.clone(),
                cert: t.cert.clone(),
                key: t.key.clone(),
            }),
        }
    }

    /// The id, else the name, of each rank's container, rank order.
    pub fn handles(&self) -> Vec<String> {
        self.containers
            .iter()
            .map(|c| c.id.clone().unwrap_or_else(|| c.name.clone()))
            .collect()
    }
}

/// The part of a resolved engine address run.json keeps.
pub(crate) fn engine_fields(spec: &HostSpec) -> (String, Option<EngineTls>) {
    let tls = spec.tls.as_ref().map(|t| EngineTls {
        ca: t.ca.clone(),
        cert: t.cert.clone(),
        key: t.key.clone(),
    });
    (spec.uri.clone(), tls)
}
