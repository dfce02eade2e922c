//! Pre-flight for a container run, on top of the run's own: the engine is reachable, the image is
//! here, the engine can hand over GPUs, and the image's compatibility verdict on this host:
//! `launch_check`'s, as for a shell.

use std::path::PathBuf;

use super::engine::block_on;
use super::spec::{container_plan, run_network, ContainerInput};
use crate::compat::CompatData;
use crate::config::ShellConfig;
use crate::docker::types::{EngineInfo, ImageInfo};
use crate::docker::{resolve_host, Engine, HostSpec};
use crate::gpu::report::GpuReport;
use crate::launch_check::{
    find_local, gpu_plumbing, judge_image, resolve_workdir, GpuPlumbing, LaunchError,
    PreflightContext, Workload, WorkspaceGuard,
};
use crate::runs::error::RunError;
use crate::runs::local::preflight::Checked;
use crate::runs::record::{engine_fields, ContainerRecord, RankContainerRef};
use crate::runs::spec::RunSpec;
use crate::runs::store::Run;
use crate::shell::ShellDefaults;

/// What a container run needs beyond a host run: which engine, the `[shell]` defaults every
/// container starts from, and the user's compatibility tables.
#[derive(Debug, Clone, Default)]
pub struct ContainerSetup {
    /// `--docker-host`; `None`: `DOCKER_HOST`, else the local socket.
    pub docker_host: Option<String>,
    pub shell: ShellConfig,
    /// `<config dir>/compat`, layered over the built-in tables.
    pub compat_dir: Option<PathBuf>,
}

/// What the container pre-flight decided.
#[derive(Debug, Clone)]
pub(in crate::runs) struct ContainerCheck {
    /// The record's container part, before any container exists.
    pub record: ContainerRecord,
    pub defaults: ShellDefaults,
    pub plumbing: GpuPlumbing,
    /// The real work dir (symlinks resolved), refused when it holds a Docker socket.
    pub workdir: PathBuf,
    pub warnings: Vec<String>,
}

/// What the pure part decided about the image and the engine.
#[derive(Debug, Clone)]
pub(in crate::runs) struct Judged {
    pub image: ImageInfo,
    pub plumbing: GpuPlumbing,
    pub warnings: Vec<String>,
}

/// Asks the engine and checks the image, after the run's own pre-flight (`checked`).
pub(in crate::runs) fn check_container_run(
    spec: &RunSpec,
    image: &str,
    checked: &Checked,
    gpus: &GpuReport,
    setup: &ContainerSetup,
) -> Result<ContainerCheck, RunError> {
    let defaults = ShellDefaults::from_config(&setup.shell)?;
    let guard = WorkspaceGuard::for_engine(setup.docker_host.as_deref(), defaults.scan);
    let workdir = resolve_workdir(&checked.workdir, &guard)?;
    let has_gpus = !checked.gpus.is_empty();
    let host = resolve_host(setup.docker_host.as_deref(), |k| std::env::var(k).ok())?;
    let (engine, local_images) = engine_facts(&host)?;
    let ctx = PreflightContext {
        gpu: gpus.clone(),
        engine,
        local_images,
        compat: CompatData::load(setup.compat_dir.as_deref()).0,
    };
    let judged = judge_container(image, has_gpus, &ctx)?;
    let (engine, engine_tls) = engine_fields(&host);
    let record = ContainerRecord {
        engine,
        engine_tls,
        image_id: judged.image.id.clone(),
        image_digests: judged.image.digests.clone(),
        network: run_network(spec.host_network, &defaults),
        gpu_request: plumbing_name(judged.plumbing).into(),
        keep: spec.keep,
        containers: Vec::new(),
        observed: None,
        engine_away: None,
    };
    Ok(ContainerCheck {
        record,
        defaults,
        plumbing: judged.plumbing,
        workdir,
        warnings: judged.warnings,
    })
}

/// Writes the containers to create (`containers.json`) and the record's container part; the
/// warnings to show.
pub(in crate::runs) fn prepare_containers(
    run: &mut Run,
    spec: &RunSpec,
    check: ContainerCheck,
) -> Result<Vec<String>, RunError> {
    let record = &mut run.record;
    let image = spec.image.clone().unwrap_or_default();
    let plan = container_plan(&ContainerInput {
        run_id: &record.id,
        image: &image,
        launcher: record.launcher,
        ranks: &record.ranks,
        gpus: &record.gpus,
        workdir: &check.workdir,
        defaults: &check.defaults,
        plumbing: check.plumbing,
        host_user: host_user(),
        network: &check.record.network,
    })?;
    plan.write(&run.dir)?;
    // What each container is given, as it is given it.
    for (rank, planned) in record.ranks.iter_mut().zip(&plan.ranks) {
        let env = planned.body.env.iter().flatten();
        rank.env = env
            .filter_map(|e| e.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }
    let containers = plan
        .ranks
        .iter()
        .map(|c| RankContainerRef {
            rank: c.rank,
            name: c.name.clone(),
            id: None,
        })
        .collect();
    record.image = Some(image);
    record.workdir = check.workdir;
    record.container = Some(ContainerRecord {
        containers,
        ..check.record
    });
    Ok(check.warnings)
}

#[allow(unsafe_code)]
fn host_user() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// The engine's facts and its local images.
fn engine_facts(host: &HostSpec) -> Result<(EngineInfo, Vec<ImageInfo>), RunError> {
    let facts = block_on(async {
        let engine = Engine::connect(host).await?;
        tokio::try_join!(engine.info(), engine.images())
    })?;
    Ok(facts)
}

/// The image must be here; with GPUs the engine must be able to hand them over, and the image
/// must not be one that will not run on this driver.
pub(in crate::runs) fn judge_container(
    image: &str,
    has_gpus: bool,
    ctx: &PreflightContext,
) -> Result<Judged, RunError> {
    let info = find_local(image, &ctx.local_images).ok_or_else(|| LaunchError::ImageNotLocal {
        image: image.to_string(),
    })?;
    if !has_gpus {
        return Ok(Judged {
            image: info.clone(),
            plumbing: GpuPlumbing::None,
            warnings: Vec::new(),
        });
    }
    let plumbing = gpu_plumbing(&ctx.engine, Workload::Run)?;
    let (_, warning) = judge_image(image, info, ctx, false, Workload::Run)?;
    Ok(Judged {
        image: info.clone(),
        plumbing,
        warnings: warning.into_iter().collect(),
    })
}

/// How run.json names a way of asking for GPUs.
pub(in crate::runs) fn plumbing_name(plumbing: GpuPlumbing) -> &'static str {
    match plumbing {
        GpuPlumbing::None => "none",
        GpuPlumbing::DeviceRequest => "device-request",
        GpuPlumbing::Cdi => "cdi",
    }
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
