//! A shell's claim on its GPUs: recorded before its container is created, so a run choosing
//! free GPUs at the same instant takes others; GPUs a live run or another shell holds are
//! named in a warning (a shell's GPUs are explicit, so it is not refused).

use crate::claims::{owner_of, Claim, Claims, Liveness, Owner};
use crate::gpu::report::GpuReport;

use super::kept::KeptShell;
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
/// `live` says which owners of earlier claims are still there (`runs::SystemLiveness`).
pub fn claim_gpus(
    claims: Option<&Claims>,
    live: &(dyn Liveness + Sync),
    name: Option<&str>,
    gpus: &ResolvedGpus,
    report: &GpuReport,
) -> (Option<ShellClaim>, Vec<String>) {
    let owner = Owner::Shell {
        name: name.map_or_else(
            || format!("being created by gpudeck (pid {})", std::process::id()),
            String::from,
        ),
        container: None,
    };
    let gpus: Vec<(String, String)> = gpus
        .gpus
        .iter()
        .map(|g| (g.index.to_string(), g.uuid.clone()))
        .collect();
    claim_for(claims, live, owner, &gpus, report)
}

/// A kept shell re-entered (`--attach`): its GPUs, by the UUIDs its container's label keeps,
/// claimed again for its container while this process attends it.
pub fn reclaim_kept(
    claims: Option<&Claims>,
    live: &(dyn Liveness + Sync),
    shell: &KeptShell,
) -> (Option<ShellClaim>, Vec<String>) {
    let owner = Owner::Shell {
        name: shell.name.clone(),
        container: Some(shell.id.clone()),
    };
    let indices = shell.gpus.split(',').map(String::from);
    let gpus: Vec<(String, String)> = indices.zip(shell.gpu_uuids.iter().cloned()).collect();
    claim_for(claims, live, owner, &gpus, &GpuReport::unread())
}

/// Claims `gpus` (index as shown, UUID) for `owner`.
fn claim_for(
    claims: Option<&Claims>,
    live: &(dyn Liveness + Sync),
    owner: Owner,
    gpus: &[(String, String)],
    report: &GpuReport,
) -> (Option<ShellClaim>, Vec<String>) {
    let Some(claims) = claims.filter(|_| !gpus.is_empty()) else {
        return (None, Vec::new());
    };
    let uuids: Vec<String> = gpus.iter().map(|(_, uuid)| uuid.clone()).collect();
    let result = claims.claim(live, |held| {
        let others: Vec<Claim> = held.iter().filter(|c| c.owner != owner).cloned().collect();
        let warnings = claimed_warnings(&others, gpus, report);
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
fn claimed_warnings(held: &[Claim], gpus: &[(String, String)], report: &GpuReport) -> Vec<String> {
    let mut warnings: Vec<String> = gpus
        .iter()
        .filter_map(|(index, uuid)| {
            owner_of(held, uuid).map(|o| format!("GPU {index} is claimed by {o}"))
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
            .take(gpus.len())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docker::types::ContainerState;
    use crate::runs::SystemLiveness;

    fn kept(id: &str, gpus: &str, uuids: &[&str]) -> KeptShell {
        KeptShell {
            id: id.into(),
            name: "dev".into(),
            image: "busybox".into(),
            gpus: gpus.into(),
            gpu_uuids: uuids.iter().map(|u| u.to_string()).collect(),
            state: ContainerState::Running,
            created: 0,
            workdir: "/w".into(),
        }
    }

    #[test]
    fn a_re_entered_shell_claims_its_gpus_again_and_hears_of_others() {
        let data = tempfile::tempdir().unwrap();
        let claims = Claims::new(data.path());
        let run = Owner::Run {
            id: "r1".into(),
            dir: data.path().join("runs/r1"),
        };
        claims
            .claim(&SystemLiveness, |_| {
                Ok::<_, ()>(((), Some(Claim::by_me(run, vec!["GPU-b".into()]))))
            })
            .unwrap()
            .unwrap();
        let shell = kept("c0ffee", "2,3", &["GPU-a", "GPU-b"]);
        let (claim, warnings) = reclaim_kept(Some(&claims), &SystemLiveness, &shell);
        assert_eq!(warnings, ["GPU 3 is claimed by run r1"]);
        let live = claims.live(&SystemLiveness).unwrap();
        let mine = live
            .iter()
            .find(
                |c| matches!(&c.owner, Owner::Shell { container: Some(id), .. } if id == "c0ffee"),
            )
            .expect("claimed for its container");
        assert_eq!(mine.gpus, ["GPU-a", "GPU-b"]);
        // Its own earlier claim is replaced, not warned about.
        let (again, warnings) = reclaim_kept(Some(&claims), &SystemLiveness, &shell);
        assert_eq!(warnings, ["GPU 3 is claimed by run r1"]);
        drop(claim);
        again.unwrap().end();
        assert_eq!(
            claims.live(&SystemLiveness).unwrap().len(),
            1,
            "only the run's"
        );
        let (none, warnings) =
            reclaim_kept(Some(&claims), &SystemLiveness, &kept("x", "none", &[]));
        assert!(none.is_none() && warnings.is_empty());
    }
}
