//! Training runs on this host, as processes or in containers: the spec, pre-flight, launchers,
//! the detached supervisor and its GPU sampler, the run store on disk, stopping, re-running,
//! exporting, the `gpudeck run/runs/logs/stop/export/rerun` commands; what a run recorded, read
//! back; the runs collector behind the dashboard's Runs tab; and the pure parts of watching them:
//! progress parsed from logs, per-second GPU metrics, summaries and alerts; and the Slurm
//! backend's batch script.

mod backend;
pub mod cli;
mod clock;
mod container;
mod container_check;
mod container_logs;
mod container_lost;
mod container_record;
mod container_spec;
mod detach;
mod engine;
mod engine_link;
mod error;
mod export;
mod index;
mod launch;
pub mod leftovers;
mod liveness;
mod logs;
pub mod metrics;
mod preflight;
mod procs;
pub mod progress;
mod record;
mod recorded;
mod rerun;
mod run_lock;
mod sampler;
mod saved_summary;
pub mod series;
pub mod slurm;
mod slurm_run;
mod spec;
mod stop;
mod store;
pub mod summary;
mod supervisor;
mod table;
pub mod tail;
mod target;
pub mod watch;

pub use backend::start;
pub use container_check::ContainerSetup;
pub use container_record::{ContainerRecord, EngineAway, EngineTls, RankContainerRef};
pub use container_spec::{
    container_name, container_plan, run_network, ContainerInput, ContainerPlan, RankContainer,
    CONTAINERS_FILE, CONTAINERS_SCHEMA, HOST_NETWORK, LABEL_RANK, LABEL_RUN,
};
pub use detach::{start_run, StartContext, Started, SUPERVISE_COMMAND};
pub use error::RunError;
pub use export::{
    export_csv, export_json, CsvExport, ExportFormat, ProgressExport, RunExport, ScalarSeries,
    EXPORT_POINTS_PER_SCALAR, EXPORT_SCHEMA,
};
pub use index::{Indexed, RunIndex, SETTLE_MS};
pub use launch::{free_ports, plan_ranks, LaunchInput, Ports, RankPlan};
pub use liveness::{run_holds_gpus, SystemLiveness};
pub use logs::print_log;
pub use preflight::{preflight, Checked, PreflightInput};
pub use procs::{exit_code_of, ProcStat, ProcessRef};
pub use record::{LostGpu, RankRecord, RunGpu, RunRecord, RunState, RUN_SCHEMA};
pub use recorded::{summary_of, with_summaries};
pub use rerun::rerun;
pub use sampler::METRICS_FILE;
pub use saved_summary::{save_summary, SUMMARY_FILE, SUMMARY_SCHEMA};
pub use spec::{parse_env, GpuSelection, Launcher, RunSpec, SpecOverrides};
pub use stop::{stop_run, StopOutcome, DEFAULT_GRACE};
pub use store::{LogStream, Run, RunStore};
pub use supervisor::supervise;
pub use table::{listing_json, render_runs, RUNS_SCHEMA};
