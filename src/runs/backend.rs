//! Where a run runs, behind one interface: a spec is started, a run re-run, stopped and brought
//! up to date through these functions whatever its backend, so the runs view and the CLI never
//! ask. `local` runs are supervised here (`detach`, `stop`); `slurm` runs are batch jobs
//! (`slurm_run`).

use std::path::Path;

use super::error::RunError;
use super::local::detach::{start_run, StartContext, Started};
use super::slurm::{Backend, SlurmSettings};
use super::spec::RunSpec;

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
