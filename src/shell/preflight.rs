//! Pre-flight for a shell: the checks every GPU container passes (`launch_check`: do the GPUs
//! exist, can Docker hand them over, is the image here, will it run on this driver), and whether
//! the GPUs are free.

use crate::compat::Verdict;
use crate::gpu::report::{GpuEntry, GpuReport};
use crate::launch_check::{
    check_readable, find_gpus, find_local, gpu_plumbing, judge_image, GpuPlumbing, LaunchError,
    PreflightContext, Workload,
};
use crate::units;

use super::error::ShellError;
use super::spec::{ResolvedGpu, ResolvedGpus, ShellGpus, ShellRequest};

/// Above this share of its memory in use a GPU counts as taken by someone else.
const BUSY_MEMORY_SHARE: f64 = 0.5;

/// What pre-flight decided: the GPUs by UUID, how to ask Docker for them, what to warn about.
#[derive(Debug, Clone)]
pub struct Preflight {
    pub gpus: ResolvedGpus,
    pub plumbing: GpuPlumbing,
    pub warnings: Vec<String>,
    /// The compatibility verdict for the image on this host; `None` without GPUs.
    pub verdict: Option<Verdict>,
}

/// Checks a request against the machine; refuses what cannot work, warns about what may not.
pub fn preflight(req: &ShellRequest, ctx: &PreflightContext) -> Result<Preflight, ShellError> {
    let image =
        find_local(&req.image, &ctx.local_images).ok_or_else(|| LaunchError::ImageNotLocal {
            image: req.image.clone(),
        })?;
    let gpus = resolve_gpus(&req.gpus, &ctx.gpu)?;
    if gpus.is_empty() {
        return Ok(Preflight {
            gpus,
            plumbing: GpuPlumbing::None,
            warnings: Vec::new(),
            verdict: None,
        });
    }
    let plumbing = gpu_plumbing(&ctx.engine, Workload::Shell)?;
    let mut warnings = busy_warnings(&gpus, &ctx.gpu);
    let (verdict, warning) = judge_image(&req.image, image, ctx, req.force, Workload::Shell)?;
    warnings.extend(warning);
    Ok(Preflight {
        gpus,
        plumbing,
        warnings,
        verdict: Some(verdict),
    })
}

/// Up to `count` GPUs nobody uses (no processes, memory mostly free), least used first.
pub fn suggest_free_gpus(report: &GpuReport, count: usize) -> Vec<u32> {
    let mut free: Vec<(&GpuEntry, u64)> = report
        .gpus
        .iter()
        .filter(|g| !g.sample.lost && g.sample.processes.is_empty() && !memory_busy(g))
        .map(|g| (g, g.sample.memory_used_bytes.unwrap_or(0)))
        .collect();
    free.sort_by_key(|(g, used)| (*used, g.sample.util_gpu_pct.unwrap_or(0), g.info.index));
    free.into_iter()
        .take(count)
        .map(|(g, _)| g.info.index)
        .collect()
}

fn resolve_gpus(wanted: &ShellGpus, report: &GpuReport) -> Result<ResolvedGpus, ShellError> {
    if *wanted == ShellGpus::None {
        return Ok(ResolvedGpus::default());
    }
    check_readable(report, Workload::Shell)?;
    let resolved = |g: &GpuEntry| ResolvedGpu {
        index: g.info.index,
        uuid: g.info.uuid.clone(),
        name: g.info.name.clone(),
    };
    let gpus: Vec<ResolvedGpu> = match wanted {
        ShellGpus::None => Vec::new(),
        ShellGpus::All => report.gpus.iter().map(resolved).collect(),
        ShellGpus::Indices(indices) => {
            find_gpus(indices, report, |g, i| g.info.index == *i, u32::to_string)?;
            // In the host's order, as `gpudeck gpus` lists them.
            let chosen = report
                .gpus
                .iter()
                .filter(|g| indices.contains(&g.info.index));
            chosen.map(resolved).collect()
        }
    };
    if gpus.is_empty() {
        let none = LaunchError::gpus_unreadable(Workload::Shell, "the driver reports no GPU");
        return Err(none.into());
    }
    Ok(ResolvedGpus { gpus })
}

fn memory_busy(gpu: &GpuEntry) -> bool {
    match (gpu.sample.memory_used_bytes, gpu.info.memory_total_bytes) {
        (Some(used), Some(total)) if total > 0 => used as f64 / total as f64 > BUSY_MEMORY_SHARE,
        _ => false,
    }
}

fn busy_warnings(gpus: &ResolvedGpus, report: &GpuReport) -> Vec<String> {
    let mut warnings = Vec::new();
    for chosen in &gpus.gpus {
        let Some(entry) = report.gpus.iter().find(|g| g.info.uuid == chosen.uuid) else {
            continue;
        };
        let processes: Vec<String> = entry
            .sample
            .processes
            .iter()
            .map(describe_process)
            .collect();
        if !processes.is_empty() {
            warnings.push(format!(
                "GPU {} is in use by {}",
                chosen.index,
                processes.join(", ")
            ));
        } else if memory_busy(entry) {
            warnings.push(format!(
                "GPU {} has {} of memory in use",
                chosen.index,
                units::memory_pair(
                    entry.sample.memory_used_bytes,
                    entry.info.memory_total_bytes
                )
            ));
        }
    }
    if !warnings.is_empty() {
        let free = suggest_free_gpus(report, gpus.gpus.len());
        if !free.is_empty() {
            let list: Vec<String> = free.iter().map(u32::to_string).collect();
            warnings.push(format!("free GPUs: --gpus {}", list.join(",")));
        }
    }
    warnings
}

fn describe_process(p: &crate::gpu::GpuProcess) -> String {
    let command = p.command.as_deref().unwrap_or("?");
    let mut text = format!("{command} (pid {}", p.pid);
    if let Some(user) = &p.user {
        text.push_str(&format!(", {user}"));
    }
    if let Some(bytes) = p.used_memory_bytes {
        text.push_str(&format!(", {}", units::human_bytes(bytes)));
    }
    text.push(')');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::{CompatData, Level};
    use crate::docker::types::{ImageFacts, ImageInfo};
    use crate::doctor::testkit::{engine_info, gpu, healthy, GIB};
    use crate::gpu::{GpuProcess, ProcessKind};

    fn image(tag: &str, cuda: Option<&str>, require: Option<&str>) -> ImageInfo {
        ImageInfo {
            id: "sha256:0123456789abcdef".into(),
            tags: vec![tag.into()],
            digests: Vec::new(),
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

    fn request(gpus: &str) -> ShellRequest {
        let mut req = ShellRequest::new("nvidia/cuda:12.4.1-base");
        req.gpus = gpus.parse().unwrap();
        req
    }

    fn uuid(index: u32) -> String {
        format!("GPU-{index}a2b3c4d-0000-1111-2222-333344445555")
    }

    #[test]
    fn indices_resolve_to_uuids_through_the_nvidia_runtime() {
        let checked = preflight(&request("2,3"), &ctx()).unwrap();
        let uuids: Vec<&str> = checked.gpus.gpus.iter().map(|g| g.uuid.as_str()).collect();
        assert_eq!(uuids, [uuid(2), uuid(3)]);
        assert_eq!(checked.plumbing, GpuPlumbing::DeviceRequest);
        assert!(checked.warnings.is_empty(), "{:?}", checked.warnings);
        assert_eq!(checked.verdict.map(|v| v.level), Some(Level::Runs));

        let all = preflight(&request("all"), &ctx()).unwrap();
        assert_eq!(all.gpus.indices(), "0,1,2,3");
    }

    #[test]
    fn no_gpus_needs_no_runtime_and_no_gpu_driver() {
        let mut c = ctx();
        c.engine.runtimes = vec!["runc".into()];
        c.gpu = crate::gpu::report::failed("h".into(), &crate::gpu::GpuError::DriverNotLoaded);
        let checked = preflight(&request("none"), &c).unwrap();
        assert!(checked.gpus.is_empty());
        assert_eq!(checked.plumbing, GpuPlumbing::None);
        assert!(checked.verdict.is_none());
    }

    #[test]
    fn a_missing_index_names_the_gpus_there_are() {
        let err = preflight(&request("1,7"), &ctx()).unwrap_err();
        let text = err.to_string();
        assert_eq!(
            text,
            "there is no GPU 7: this machine has GPUs 0-3 (4 × NVIDIA H100 80GB HBM3)"
        );
    }

    #[test]
    fn gpus_without_toolkit_are_refused_with_the_toolkit_message() {
        let mut c = ctx();
        c.engine.runtimes = vec!["io.containerd.runc.v2".into(), "runc".into()];
        let err = preflight(&request("0"), &c).unwrap_err();
        assert_eq!(
        err.to_string(),
        "NVIDIA Container Toolkit is not configured for Docker: install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`"
    );
        assert!(err.fix().contains("sudo systemctl restart docker"));
    }

    #[test]
    fn cdi_is_used_from_api_1_44_and_explained_before() {
        let mut c = ctx();
        c.engine.runtimes = vec!["runc".into()];
        c.engine.nvidia_cdi = true;
        assert_eq!(
            preflight(&request("0"), &c).unwrap().plumbing,
            GpuPlumbing::Cdi
        );
        c.engine.api_version = "1.43".into();
        let err = preflight(&request("0"), &c).unwrap_err();
        assert!(
            matches!(&err, ShellError::Launch(LaunchError::NoToolkit { detail, .. }) if detail.contains("API 1.44")),
            "{err:?}"
        );
    }

    #[test]
    fn the_image_must_be_local() {
        let mut req = request("none");
        req.image = "tensorflow/tensorflow:2.17.0-gpu".into();
        let err = preflight(&req, &ctx()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the image tensorflow/tensorflow:2.17.0-gpu is not on this machine"
        );
        assert!(err
            .fix()
            .contains("gpudeck pull tensorflow/tensorflow:2.17.0-gpu"));
        req.image = "0123456789ab".into();
        assert!(preflight(&req, &ctx()).is_ok(), "an id prefix finds it");
    }

    #[test]
    fn will_not_run_is_refused_with_every_reason_unless_forced() {
        let mut c = ctx();
        c.local_images = vec![image("new:1", Some("13.2.0"), Some("cuda>=13.2"))];
        let mut req = request("0");
        req.image = "new:1".into();
        let err = preflight(&req, &c).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("new:1 will not run on this machine:"),
            "{text}"
        );
        assert!(
            text.contains("requires CUDA 13.2") && text.contains("fix: install NVIDIA driver"),
            "{text}"
        );
        assert!(err.fix().contains("--force"));

        req.force = true;
        let forced = preflight(&req, &c).unwrap();
        assert!(forced
            .warnings
            .iter()
            .any(|w| w.contains("starting it anyway (--force)")));
        assert_eq!(forced.verdict.map(|v| v.level), Some(Level::WontRun));
    }

    #[test]
    fn runs_via_compat_is_a_warning() {
        let mut c = ctx();
        c.local_images = vec![image("minor:1", Some("13.1.0"), None)];
        let mut req = request("0");
        req.image = "minor:1".into();
        let checked = preflight(&req, &c).unwrap();
        assert!(
            checked
                .warnings
                .iter()
                .any(|w| w.contains("only through a compatibility layer")),
            "{:?}",
            checked.warnings
        );
    }

    #[test]
    fn busy_gpus_are_named_with_their_processes_and_free_ones_suggested() {
        let mut c = ctx();
        c.gpu.gpus[2].sample.processes = vec![GpuProcess {
            gpu_index: 2,
            pid: 4242,
            kind: ProcessKind::Compute,
            used_memory_bytes: Some(10 * GIB),
            user: Some("grace".into()),
            command: Some("python train.py".into()),
            container: None,
            identity: None,
            gpu_util: None,
            cpu_pct: None,
            host_memory_bytes: None,
        }];
        c.gpu.gpus[3].sample.memory_used_bytes = Some(70 * GIB);
        c.gpu.gpus[0].sample.memory_used_bytes = Some(GIB);
        let checked = preflight(&request("2,3"), &c).unwrap();
        let w = &checked.warnings;
        assert!(
            w[0].starts_with("GPU 2 is in use by python train.py (pid 4242, grace, 10"),
            "{w:?}"
        );
        assert!(w[1].starts_with("GPU 3 has 70"), "{w:?}");
        assert_eq!(w[2], "free GPUs: --gpus 1,0");
    }

    #[test]
    fn free_gpus_are_unused_least_used_first() {
        let mut report = ctx().gpu;
        report.gpus[0].sample.memory_used_bytes = Some(2 * GIB);
        report.gpus[1].sample.memory_used_bytes = Some(60 * GIB);
        report.gpus[2].sample.memory_used_bytes = Some(GIB);
        report.gpus[3].sample.processes = vec![GpuProcess {
            gpu_index: 3,
            pid: 1,
            kind: ProcessKind::Graphics,
            used_memory_bytes: None,
            user: None,
            command: None,
            container: None,
            identity: None,
            gpu_util: None,
            cpu_pct: None,
            host_memory_bytes: None,
        }];
        assert_eq!(suggest_free_gpus(&report, 4), [2, 0]);
        assert_eq!(suggest_free_gpus(&report, 1), [2]);
        assert!(suggest_free_gpus(&report, 0).is_empty());
    }

    #[test]
    fn gpus_requested_without_a_driver_say_why() {
        let mut c = ctx();
        c.gpu = crate::gpu::report::failed("h".into(), &crate::gpu::GpuError::DriverNotLoaded);
        let err = preflight(&request("all"), &c).unwrap_err();
        assert!(
            matches!(err, ShellError::Launch(LaunchError::GpusUnreadable { .. })),
            "{err:?}"
        );
        assert!(err.to_string().contains("driver is not loaded"), "{err}");
    }

    #[test]
    fn the_runtime_hook_alone_hands_gpus_over_as_doctor_says() {
        let mut c = ctx();
        c.engine.runtimes = vec!["runc".into()];
        c.engine.nvidia_hook = true;
        assert_eq!(
            preflight(&request("0"), &c).unwrap().plumbing,
            GpuPlumbing::DeviceRequest
        );
    }
}
