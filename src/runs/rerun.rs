//! Running a run again: a new run from the old one's spec, its work dir resolved as the old one
//! resolved it, for `gpudeck rerun` and the dashboard.

use super::error::RunError;
use super::local::detach::{start_run, StartContext, Started};
use super::slurm::Backend;
use super::store::Run;

/// Starts a new run from `run`'s spec (same command, GPU selection, launcher, env and name) in
/// the work dir `run` ran in, wherever the caller is; pre-flight checks it afresh. A Slurm run
/// is submitted again with the settings it was submitted with.
pub fn rerun(run: &Run, ctx: &StartContext<'_>) -> Result<Started, RunError> {
    if run.record.backend == Backend::Slurm {
        return Ok(Started {
            run: super::slurm::run::resubmit(run, ctx.store)?,
            warnings: Vec::new(),
        });
    }
    let mut spec = run.spec()?;
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
