//! A shell's claim on its GPUs: recorded before its container is created, so a run choosing
//! free GPUs at the same instant takes others; GPUs a live run or another shell holds are
//! named in a warning (a shell's GPUs are explicit, so it is not refused).

use crate::claims::{owner_of, Claim, Claims, Owner, SystemLiveness};
use crate::gpu::report::GpuReport;

use super::preflight::suggest_free_gpus;
use super::spec::ResolvedGpus;

/// A shell's claim while its session lasts.
#[derive(Debug)]
pub struct ShellClaim {
    claims: Claims,
    owner: Owner,
}

/// Claims `gpus` for a shell named `name` (Docker picks one when `None`), held by this
/// process; with the warnings for GPUs someone else claimed. No GPUs, no claims store, or a
/// store that cannot be written: no claim (the last with a warning), and the shell goes on.
pub fn claim_gpus(
    claims: Option<&Claims>,
    name: Option<&str>,
    gpus: &ResolvedGpus,
    report: &GpuReport,
) -> (Option<ShellClaim>, Vec<String>) {
    let Some(claims) = claims.filter(|_| !gpus.is_empty()) else {
        return (None, Vec::new());
    };
    let owner = Owner::Shell {
        name: name.map_or_else(
            || format!("being created by gpudeck (pid {})", std::process::id()),
            String::from,
        ),
        container: None,
    };
    let uuids: Vec<String> = gpus.gpus.iter().map(|g| g.uuid.clone()).collect();
    let result = claims.claim(&SystemLiveness, |held| {
        let warnings = claimed_warnings(held, gpus, report);
        let claim = Claim::by_me(owner.clone(), uuids);
        Ok::<_, std::convert::Infallible>((warnings, Some(claim)))
    });
    match result {
        Ok(Ok(warnings)) => (
            Some(ShellClaim {
                claims: claims.clone(),
                owner,
            }),
            warnings,
        ),
        Ok(Err(never)) => match never {},
        Err(e) => (
            None,
            vec![format!(
                "{e}; runs started now may be given this shell's GPUs. {}",
                e.fix()
            )],
        ),
    }
}

/// "GPU 6 is claimed by run ..." for each chosen GPU a live owner holds, and the free ones.
fn claimed_warnings(held: &[Claim], gpus: &ResolvedGpus, report: &GpuReport) -> Vec<String> {
    let mut warnings: Vec<String> = gpus
        .gpus
        .iter()
        .filter_map(|g| {
            owner_of(held, &g.uuid).map(|o| format!("GPU {} is claimed by {o}", g.index))
        })
        .collect();
    if !warnings.is_empty() {
        let free: Vec<String> = suggest_free_gpus(report, report.gpus.len())
            .into_iter()
            .filter(|i| {
                report
                    .gpus
                    .iter()
                    .find(|g| g.info.index == *i)
                    .is_some_and(|g| owner_of(held, &g.info.uuid).is_none())
            })
            .take(gpus.gpus.len())
            .map(|i| i.to_string())
            .collect();
        if !free.is_empty() {
            warnings.push(format!("free GPUs: --gpus {}", free.join(",")));
        }
    }
    warnings
}

impl ShellClaim {
    /// The container exists: the claim names it, so it outlives this process while the
    /// container runs (a detached shell).
    pub fn created(&mut self, name: &str, id: &str) {
        let owner = Owner::Shell {
            name: name.to_string(),
            container: Some(id.to_string()),
        };
        let renamed = owner.clone();
        let result = self.claims.update(&self.owner, |c| {
            Some(Claim {
                owner: renamed,
                ..c
            })
        });
        match result {
            Ok(()) => self.owner = owner,
            Err(e) => tracing::warn!("{e}"),
        }
    }

    /// The session is over: this process no longer attends the shell, so the claim lives on
    /// only while its container runs (kept and detached) and expires once it stops or is gone.
    pub fn end(self) {
        let result = self
            .claims
            .update(&self.owner, |c| Some(Claim { holder: None, ..c }));
        if let Err(e) = result {
            tracing::warn!("{e}");
        }
    }
}
