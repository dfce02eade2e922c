//! Where a run runs, behind one interface, and the one place that asks which backend a run is
//! on: a spec is started, a run re-run, stopped and brought up to date through these functions
//! whatever its backend, and what the CLI and the run form need to know of a backend (its name,
//! whether it uses this machine's GPUs, whether it takes the Slurm settings) is answered by
//! [`Backend`]'s methods here, and what others show of a run held as a job elsewhere (its id,
//! where it runs, its GPUs, why it waits, how it stops) by [`RunRecord::remote_job`], so nobody
//! else matches on it or reads a backend's part of the record. `local` runs are supervised on this
//! host (`local/`); `slurm` runs are batch jobs (`slurm/run.rs`).

use std::path::Path;
use std::time::Duration;

use super::error::RunError;
use super::local::detach::{start_run, StartContext, Started};
use super::local::stop::stop_local;
use super::local::HOW_IT_STOPS;
use super::record::{RemoteJob, RunRecord};
use super::slurm::SlurmJob;
use super::slurm::SlurmSettings;
use super::spec::{GpuSelection, RunSpec};
use super::store::{Run, StopOutcome};
use crate::config::Backend;

impl Backend {
    /// How the config, a spec and the run form name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Local => "local",
            Backend::Slurm => "slurm",
        }
    }

    /// Whether it is `local`, the default a record leaves out.
    pub fn is_local(&self) -> bool {
        *self == Backend::Local
    }

    /// The backend the run form's Space switches to.
    pub fn next(self) -> Backend {
        match self {
            Backend::Local => Backend::Slurm,
            Backend::Slurm => Backend::Local,
        }
    }

    /// Whether a run on it uses this machine's GPUs, so they are read before it starts and
    /// chosen by index; a batch job's GPUs are the scheduler's.
    pub fn uses_this_machines_gpus(self) -> bool {
        match self {
            Backend::Local => true,
            Backend::Slurm => false,
        }
    }

    /// Whether it takes the Slurm settings (nodes, time, partition, account, GPUs per node) and
    /// has a batch script to print (`--dry-run`).
    pub fn takes_slurm_settings(self) -> bool {
        match self {
            Backend::Local => false,
            Backend::Slurm => true,
        }
    }

    /// Whether a run on it has a supervisor on this machine, whose end makes a running run
    /// `lost`; a batch job's state is what Slurm last said.
    pub fn has_supervisor_here(self) -> bool {
        match self {
            Backend::Local => true,
            Backend::Slurm => false,
        }
    }

    /// What starting a run on it is called.
    pub fn start_verb(self) -> &'static str {
        match self {
            Backend::Local => "start",
            Backend::Slurm => "submit",
        }
    }
}

/// The backend `spec` runs on: its own, else the config's.
pub fn backend_of(spec: &RunSpec, ctx: &StartContext<'_>) -> Backend {
    spec.backend.unwrap_or(ctx.slurm.backend)
}

/// Starts `spec` on its backend: supervised here, or submitted to Slurm.
pub fn start(spec: &RunSpec, ctx: &StartContext<'_>) -> Result<Started, RunError> {
    match backend_of(spec, ctx) {
        Backend::Local => start_run(spec, ctx),
        Backend::Slurm => {
            let (spec, settings) = slurm_job(spec, &ctx.slurm.settings, &ctx.cwd);
            Ok(Started {
                run: super::slurm::run::submit(&spec, &settings, ctx.store)?,
                warnings: slurm_warnings(&spec),
            })
        }
    }
}

/// A spec as a Slurm job: its work dir made absolute against `cwd` (the job runs elsewhere),
/// and the config's settings with the spec's laid over them.
pub fn slurm_job(spec: &RunSpec, config: &SlurmSettings, cwd: &Path) -> (RunSpec, SlurmSettings) {
    let workdir = cwd.join(spec.workdir.as_deref().unwrap_or(cwd));
    let workdir = std::path::absolute(&workdir).unwrap_or(workdir);
    let spec = RunSpec {
        workdir: Some(workdir),
        ..spec.clone()
    };
    let settings = config.clone().overlaid(spec.slurm.clone());
    (spec, settings)
}

/// What a Slurm job ignores of a spec.
pub fn slurm_warnings(spec: &RunSpec) -> Vec<String> {
    match spec.gpu_memory.is_some() || spec.keep {
        true => {
            vec!["gpu_memory and keep apply to local runs; the batch script ignores them".into()]
        }
        false => Vec::new(),
    }
}

/// Starts a new run from `run`'s spec (same command, GPU selection, launcher, env and name) in
/// the work dir `run` ran in, wherever the caller is; pre-flight checks it afresh. A Slurm run
/// is submitted again with the settings it was submitted with.
pub fn rerun(run: &Run, ctx: &StartContext<'_>) -> Result<Started, RunError> {
    rerun_on(run, None, ctx)
}

/// [`rerun`] on `gpus` instead of the GPUs the spec asks for, when given (`gpudeck rerun RUN
/// --gpus none` where the GPUs cannot be read).
pub fn rerun_on(
    run: &Run,
    gpus: Option<GpuSelection>,
    ctx: &StartContext<'_>,
) -> Result<Started, RunError> {
    match run.record.backend {
        Backend::Local => rerun_local(run, gpus, ctx),
        Backend::Slurm => Ok(Started {
            run: super::slurm::run::resubmit(run, gpus, ctx.store)?,
            warnings: Vec::new(),
        }),
    }
}

/// A local run started again from its spec (on `gpus` when given), in the work dir it ran in.
fn rerun_local(
    run: &Run,
    gpus: Option<GpuSelection>,
    ctx: &StartContext<'_>,
) -> Result<Started, RunError> {
    let mut spec = run.spec()?;
    if let Some(gpus) = gpus {
        spec.gpus = gpus;
    }
    rerun_local_as(run, spec, ctx)
}

/// A local run (a service: always local) started again from `spec`, its own spec as the
/// caller changed it (other GPUs, a service's fresh token), in the work dir it ran in.
pub fn rerun_local_as(
    run: &Run,
    mut spec: RunSpec,
    ctx: &StartContext<'_>,
) -> Result<Started, RunError> {
    // A relative work dir was taken from the directory `gpudeck run` ran in; the record has
    // what it resolved to. No work dir meant that directory itself.
    if spec.workdir.as_ref().is_some_and(|w| w.is_relative()) {
        spec.workdir = Some(run.record.workdir.clone());
    }
    let ctx = StartContext {
        cwd: run.record.workdir.clone(),
        ..ctx.clone()
    };
    start_run(&spec, &ctx)
}

/// Stops a run and waits until its processes are gone (a Slurm job: until it left the queue)
/// and the end is recorded. Blocks for up to twice `grace` plus a few seconds.
pub fn stop_run(run: &Run, grace: Duration) -> Result<StopOutcome, RunError> {
    let state = run.state();
    if state.is_finished() {
        return Ok(StopOutcome::AlreadyFinished(state));
    }
    match run.record.backend {
        Backend::Local => stop_local(run, grace),
        Backend::Slurm => super::slurm::run::stop_job(run),
    }
}

/// Brings `run`'s record up to date where someone other than its supervisor keeps its state (a
/// Slurm job's, from the queue); nothing to do for a local run.
pub fn refresh(run: &mut Run) -> Result<(), String> {
    match run.record.backend {
        Backend::Local => Ok(()),
        Backend::Slurm => super::slurm::run::refresh(run),
    }
}

impl RunRecord {
    /// The job its backend holds it as elsewhere (a Slurm run's batch job), as others show it;
    /// `None` for a run supervised here.
    pub fn remote_job(&self) -> Option<RemoteJob> {
        match self.backend {
            Backend::Local => None,
            Backend::Slurm => self.slurm.as_ref().map(SlurmJob::remote_job),
        }
    }
}

/// How stopping a run goes, in a few words for a status line: its job's way (`remote_job`),
/// else the local supervisor's signals.
pub fn how_it_stops(job: Option<&RemoteJob>) -> String {
    job.map_or_else(|| HOW_IT_STOPS.into(), |j| j.stopping.clone())
}
