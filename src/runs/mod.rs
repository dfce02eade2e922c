//! Training runs, in layers, each importing only those above it in this list:
//! - the store and the record: `clock`, `error`, `spec`, `record`, `store`, `run_lock` and
//!   `series` (a bounded series), which import no backend;
//! - `progress`: training progress parsed from log lines;
//! - `recorded`: what a run recorded (per-second GPU samples, Xids, summaries and alerts) and
//!   reading it back;
//! - `launch`: how a local run's ranks are launched (pre-flight, plans, torchrun, processes,
//!   containers);
//! - the backends: `local` (supervised on this host) and `slurm` (batch jobs);
//! - `backend`: the one place that asks which backend a run is on (start, stop, re-run, refresh);
//! - `watch`: following runs (the Runs tab's collector, the store's index, log tails).
//!
//! The tables and exports `gpudeck runs` prints are in `cli/runs/`.

mod backend;
pub mod clock;
mod error;
mod launch;
pub mod local;
pub mod progress;
mod record;
pub mod recorded;
mod run_lock;
pub mod series;
pub mod slurm;
mod spec;
mod store;
pub mod watch;

/// Where a run runs; the config reads it (`[runs] backend`), so it is the config's type, and
/// `backend.rs` answers everything asked of it.
pub use crate::config::Backend;
pub use backend::{how_it_stops, rerun, rerun_local_as, rerun_on, start, stop_run};
pub(crate) use backend::{slurm_job, slurm_warnings};
pub(crate) use clock::now_ms;
pub use error::RunError;
pub use launch::container::check::ContainerSetup;
pub(crate) use launch::container::lost::look_at_lost;
pub use launch::container::service::{
    service_network, LABEL_SERVICE, PUBLISH_ADDRESS, SERVICE_NETWORK,
    TOKEN_ENV as NOTEBOOK_TOKEN_ENV, TOKEN_FILE as NOTEBOOK_TOKEN_FILE,
};
pub use launch::container::spec::{
    container_name, container_plan, run_network, ContainerInput, ContainerPlan, RankContainer,
    CONTAINERS_FILE, CONTAINERS_SCHEMA, HOST_NETWORK, LABEL_RANK, LABEL_RUN,
};
pub use launch::plan::{free_ports, plan_ranks, LaunchInput, Ports, RankPlan};
pub use launch::preflight::{preflight, Checked, PreflightInput};
pub(crate) use launch::procs::run_processes;
pub use launch::procs::{exit_code_of, ProcStat, ProcessRef};
pub use local::detach::{start_run, StartContext, Started, SUPERVISE_COMMAND};
pub use local::liveness::{run_holds_gpus, SystemLiveness};
pub use local::stop::DEFAULT_GRACE;
pub use local::supervisor::supervise;
pub use record::{
    gpu_indices, ContainerRecord, EngineAway, EngineTls, LostGpu, RankContainerRef, RankRecord,
    RemoteJob, RunGpu, RunOwner, RunRecord, RunState, RUN_SCHEMA,
};
pub use recorded::sampler::METRICS_FILE;
pub use recorded::saved_summary::{save_summary, SUMMARY_FILE, SUMMARY_SCHEMA};
pub use recorded::{summary_of, with_summaries};
pub(crate) use slurm::run::look_at_jobs;
pub use spec::{
    parse_env, GpuSelection, Launcher, RunSpec, ServiceKind, ServicePort, ServiceSpec,
    SlurmDefaults, SpecOverrides,
};
pub use store::{LogStream, Run, RunStore, StopOutcome};
pub use watch::index::{Indexed, RunIndex, SETTLE_MS};
pub use watch::logs::print_log;
