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
use crate::runs::launch::preflight::Checked;
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
        network: run_network(spec, &defaults),
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
    // A service's bridge is its own, named after the run, which has its id only now.
    let network = match spec.service {
        Some(_) => super::service::service_network(&record.id),
        None => check.record.network.clone(),
    };
    let mut plan = container_plan(&ContainerInput {
        run_id: &record.id,
        image: &image,
        launcher: record.launcher,
        ranks: &record.ranks,
        gpus: &record.gpus,
        workdir: &check.workdir,
        defaults: &check.defaults,
        plumbing: check.plumbing,
        host_user: host_user(),
        network: &network,
        service: spec.service.as_ref(),
    })?;
    // What each container is given, as it is given it; a notebook's token as JupyterLab sees
    // it, though its container gets it in a file (run.json is as private as that file).
    for (rank, planned) in record.ranks.iter_mut().zip(&plan.ranks) {
        let env = planned.body.env.iter().flatten();
        rank.env = env
            .filter_map(|e| e.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }
    let mut warnings = check.warnings;
    let local = check.record.engine.starts_with("unix://");
    for planned in &mut plan.ranks {
        if local {
            super::service::token_by_file(&mut planned.body, &run.dir)?;
        } else if planned
            .body
            .env
            .iter()
            .flatten()
            .any(|e| e.starts_with(&format!("{}=", super::service::TOKEN_ENV)))
        {
            warnings.push(format!(
                "the notebook's token is in its container's environment, which `docker inspect` shows to everyone who may use {}: a token file cannot be handed to an engine on another machine",
                check.record.engine
            ));
        }
    }
    plan.write(&run.dir)?;
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
        network,
        ..check.record
    });
    Ok(warnings)
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
mod tests {
    use super::*;
    use crate::docker::types::ImageFacts;
    use crate::doctor::testkit::{engine_info, gpu, healthy};
    use crate::launch_check::TOOLKIT_MESSAGE;

    fn image(tag: &str, cuda: Option<&str>, require: Option<&str>) -> ImageInfo {
        ImageInfo {
            id: "sha256:0123456789abcdef".into(),
            tags: vec![tag.into()],
            digests: vec!["nvidia/cuda@sha256:feed".into()],
            size_bytes: 1,
            created: 0,
            facts: ImageFacts {
                cuda: cuda.map(String::from),
                require_cuda: require.map(String::from),
                ..ImageFacts::default()
            },
        }
    }

    /// Four H100s on driver 580.65.06 (CUDA 13.0), Docker with the nvidia runtime, one CUDA 12.4
    /// image.
    fn ctx() -> PreflightContext {
        let mut gpu_report = healthy().gpu;
        gpu_report.gpus = (0..4).map(gpu).collect();
        gpu_report.gpu_count = 4;
        PreflightContext {
            gpu: gpu_report,
            engine: engine_info(),
            local_images: vec![image("nvidia/cuda:12.4.1-base", Some("12.4.1"), None)],
            compat: CompatData::builtin(),
        }
    }

    #[test]
    fn a_local_image_on_the_nvidia_runtime_passes_by_device_request() {
        let judged = judge_container("nvidia/cuda:12.4.1-base", true, &ctx()).unwrap();
        assert_eq!(judged.plumbing, GpuPlumbing::DeviceRequest);
        assert_eq!(judged.image.id, "sha256:0123456789abcdef");
        assert_eq!(judged.image.digests, ["nvidia/cuda@sha256:feed"]);
        assert!(judged.warnings.is_empty(), "{:?}", judged.warnings);
        assert_eq!(plumbing_name(judged.plumbing), "device-request");
    }

    #[test]
    fn an_image_that_is_not_here_is_refused_with_the_pull_command() {
        let err = judge_container("tensorflow/tensorflow:2.17.0-gpu", false, &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the image tensorflow/tensorflow:2.17.0-gpu is not on this machine"
        );
        assert!(err
            .fix()
            .starts_with("Pull it first: `gpudeck pull tensorflow/tensorflow:2.17.0-gpu`"));
    }

    #[test]
    fn without_gpus_neither_the_toolkit_nor_the_verdict_matters() {
        let mut c = ctx();
        c.engine.runtimes = vec!["runc".into()];
        c.local_images = vec![image("new:1", Some("13.2.0"), Some("cuda>=13.2"))];
        let judged = judge_container("new:1", false, &c).unwrap();
        assert_eq!(judged.plumbing, GpuPlumbing::None);
        assert_eq!(plumbing_name(judged.plumbing), "none");
    }

    #[test]
    fn gpus_without_the_toolkit_are_refused_with_its_message() {
        let mut c = ctx();
        c.engine.runtimes = vec!["io.containerd.runc.v2".into(), "runc".into()];
        let err = judge_container("nvidia/cuda:12.4.1-base", true, &c).unwrap_err();
        assert!(
            matches!(err, RunError::Launch(LaunchError::NoToolkit { .. })),
            "{err:?}"
        );
        assert_eq!(err.to_string(), TOOLKIT_MESSAGE);
        assert!(err.fix().contains("sudo systemctl restart docker"));
        assert!(err.fix().contains("--gpus none"));
    }

    #[test]
    fn a_cdi_spec_serves_on_a_new_enough_engine() {
        let mut c = ctx();
        c.engine.runtimes = vec!["runc".into()];
        c.engine.nvidia_cdi = true;
        let judged = judge_container("nvidia/cuda:12.4.1-base", true, &c).unwrap();
        assert_eq!(judged.plumbing, GpuPlumbing::Cdi);
        assert_eq!(plumbing_name(judged.plumbing), "cdi");
    }

    #[test]
    fn will_not_run_is_refused_with_every_reason_and_its_fix() {
        let mut c = ctx();
        c.local_images = vec![image("new:1", Some("13.2.0"), Some("cuda>=13.2"))];
        let err = judge_container("new:1", true, &c).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, RunError::Launch(LaunchError::WontRun { .. })),
            "{err:?}"
        );
        assert!(
            text.starts_with("new:1 will not run on this machine:"),
            "{text}"
        );
        assert!(
            text.contains("requires CUDA 13.2") && text.contains("fix: install NVIDIA driver"),
            "{text}"
        );
        assert!(err.fix().contains("gpudeck compat"), "{}", err.fix());
        assert!(!err.fix().contains("--force"), "gpudeck run has no --force");
    }

    #[test]
    fn runs_via_compat_is_a_warning() {
        let mut c = ctx();
        c.local_images = vec![image("minor:1", Some("13.1.0"), None)];
        let judged = judge_container("minor:1", true, &c).unwrap();
        assert_eq!(judged.warnings.len(), 1, "{:?}", judged.warnings);
        assert!(
            judged.warnings[0].contains("only through a compatibility layer"),
            "{:?}",
            judged.warnings
        );
    }
}
