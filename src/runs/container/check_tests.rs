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
        .starts_with("Pull it first: gpudeck pull tensorflow/tensorflow:2.17.0-gpu"));
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
