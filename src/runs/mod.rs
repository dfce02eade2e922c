//! Training runs, organised by where they run: `local/` (started, supervised and stopped on this
//! host), `container/` (a run's ranks in containers), `slurm/` (batch jobs), and `watch/`
//! (reading runs back: the Runs tab's collector, logs, per-second GPU samples, progress,
//! summaries, exports). At the top: the spec, the run store and its `run.json` record, the
//! errors, and the backend dispatch that starts, stops and re-runs a run whatever its backend.

mod backend;
mod clock;
mod container;
mod error;
mod liveness;
pub mod local;
mod record;
pub mod slurm;
mod spec;
mod store;
pub mod watch;

pub use backend::{rerun, rerun_local_as, rerun_on, start, stop_run};
pub(crate) use backend::{slurm_job, slurm_warnings};
pub(crate) use clock::now_ms;
pub use container::check::ContainerSetup;
pub(crate) use container::lost::look_at_lost;
pub use container::service::{
    service_network, LABEL_SERVICE, PUBLISH_ADDRESS, SERVICE_NETWORK,
    TOKEN_ENV as NOTEBOOK_TOKEN_ENV, TOKEN_FILE as NOTEBOOK_TOKEN_FILE,
};
pub use container::spec::{
    container_name, container_plan, run_network, ContainerInput, ContainerPlan, RankContainer,
    CONTAINERS_FILE, CONTAINERS_SCHEMA, HOST_NETWORK, LABEL_RANK, LABEL_RUN,
};
pub use error::RunError;
pub use liveness::{run_holds_gpus, SystemLiveness};
pub use local::detach::{start_run, StartContext, Started, SUPERVISE_COMMAND};
pub use local::launch::{free_ports, plan_ranks, LaunchInput, Ports, RankPlan};
pub use local::preflight::{preflight, Checked, PreflightInput};
pub use local::procs::{exit_code_of, ProcStat, ProcessRef};
pub use local::sampler::METRICS_FILE;
pub use local::stop::DEFAULT_GRACE;
pub use local::supervisor::supervise;
pub use record::{
    gpu_indices, ContainerRecord, EngineAway, EngineTls, LostGpu, RankContainerRef, RankRecord,
    RunGpu, RunRecord, RunState, RUN_SCHEMA,
};
pub(crate) use slurm::run::look_at_jobs;
pub use spec::{
    parse_env, GpuSelection, Launcher, RunSpec, ServiceKind, ServicePort, ServiceSpec,
    SpecOverrides,
};
pub use store::{LogStream, Run, RunStore, StopOutcome};
pub use watch::export::{
    export_csv, export_json, CsvExport, ProgressExport, RunExport, ScalarSeries,
    EXPORT_POINTS_PER_SCALAR, EXPORT_SCHEMA,
};
pub use watch::index::{Indexed, RunIndex, SETTLE_MS};
pub use watch::logs::print_log;
pub use watch::recorded::{summary_of, with_summaries};
pub use watch::saved_summary::{save_summary, SUMMARY_FILE, SUMMARY_SCHEMA};
pub use watch::table::{listing_json, render_runs, RUNS_SCHEMA};
