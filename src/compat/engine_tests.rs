use super::*;
use crate::compat::profile::{HostGpu, ImageSource};

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

fn host(driver: &str, cuda: &str, gpus: &[(&str, &str)], runtime: GpuRuntime) -> HostProfile {
    HostProfile {
        driver: Some(driver.into()),
        cuda: Some(v(cuda)),
        gpus: gpus
            .iter()
            .enumerate()
            .map(|(i, (name, cc))| HostGpu {
                index: i as u32,
                name: name.to_string(),
                compute_capability: Version::parse(cc),
            })
            .collect(),
        runtime,
        problem: None,
    }
}

fn h100(driver: &str, cuda: &str) -> HostProfile {
    host(
        driver,
        cuda,
        &[("NVIDIA H100 80GB HBM3", "9.0")],
        GpuRuntime::Nvidia,
    )
}

fn image(
    reference: &str,
    framework: Option<(Framework, &str)>,
    cuda: Option<&str>,
    require: Option<&str>,
) -> ImageProfile {
    ImageProfile {
        reference: reference.into(),
        source: ImageSource::Local,
        cuda: cuda.map(v),
        require_cuda: require.map(str::to_string),
        cudnn: None,
        framework: framework.map(|f| f.0),
        framework_version: framework.map(|f| f.1.to_string()),
        python: None,
        download_bytes: None,
        platform_mismatch: None,
    }
}

fn tf(version: &str, cuda: &str) -> ImageProfile {
    image(
        &format!("tensorflow/tensorflow:{version}-gpu"),
        Some((Framework::Tensorflow, version)),
        Some(cuda),
        None,
    )
}

fn texts(verdict: &Verdict) -> String {
    verdict
        .reasons
        .iter()
        .map(|r| format!("{:?}: {} | {:?}\n", r.level, r.text, r.fix))
        .collect()
}

#[test]
fn a_current_image_runs_on_a_current_driver() {
    let data = CompatData::builtin();
    let verdict = judge(&data, &h100("580.159.04", "13.0"), &tf("2.17.0", "12.3"));
    assert_eq!(
        (verdict.level, verdict.image_level),
        (Level::Runs, Level::Runs),
        "{}",
        texts(&verdict)
    );
}

#[test]
fn an_old_driver_refuses_a_new_image_and_names_the_driver_to_install() {
    let data = CompatData::builtin();
    let cuda124 = image(
        "nvidia/cuda:12.4.1-base-ubuntu22.04",
        None,
        Some("12.4.1"),
        Some("cuda>=12.4 brand=tesla,driver>=470,driver<471"),
    );
    let host = host(
        "460.106.00",
        "11.2",
        &[("Tesla V100-SXM2-32GB", "7.0")],
        GpuRuntime::Nvidia,
    );
    let verdict = judge(&data, &host, &cuda124);
    assert_eq!(verdict.level, Level::WontRun, "{}", texts(&verdict));
    let r = &verdict.reasons[0];
    assert!(
        r.text
            .contains("driver 460.106.00 supports CUDA 11.2; the image requires CUDA 12.4"),
        "{}",
        r.text
    );
    assert_eq!(
        r.fix.as_deref(),
        Some("install NVIDIA driver 550.54.14 or newer (CUDA 12.4)")
    );
    // Without NVIDIA_REQUIRE_CUDA (pip wheels), a different major is just as hopeless.
    let verdict = judge(&data, &host, &tf("2.17.0", "12.3"));
    assert_eq!(verdict.image_level, Level::WontRun);
    assert!(texts(&verdict).contains("CUDA driver version is insufficient"));
}

#[test]
fn a_long_term_branch_runs_a_newer_cuda_through_forward_compatibility() {
    let data = CompatData::builtin();
    let require = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/h100-host/image_env_cuda13"
    ))
    .unwrap()
    .lines()
    .find_map(|l| l.strip_prefix("NVIDIA_REQUIRE_CUDA=").map(str::to_string))
    .unwrap();
    let cuda13 = image(
        "nvidia/cuda:13.0.2-base-ubuntu24.04",
        Some((Framework::Cuda, "13.0.2")),
        Some("13.0.2"),
        Some(&require),
    );
    let verdict = judge(&data, &h100("570.172.08", "12.8"), &cuda13);
    assert_eq!(verdict.image_level, Level::Compat, "{}", texts(&verdict));
    assert!(texts(&verdict).contains("570 branch"));
    let geforce = host(
        "570.172.08",
        "12.8",
        &[("NVIDIA GeForce RTX 4090", "8.9")],
        GpuRuntime::Nvidia,
    );
    assert_eq!(judge(&data, &geforce, &cuda13).image_level, Level::WontRun);
    assert_eq!(
        judge(&data, &h100("580.159.04", "13.0"), &cuda13).image_level,
        Level::Runs
    );
}

#[test]
fn a_newer_minor_release_runs_through_minor_version_compatibility() {
    let data = CompatData::builtin();
    let torch = image(
        "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime",
        Some((Framework::Pytorch, "2.7.0")),
        Some("12.8"),
        None,
    );
    let verdict = judge(&data, &h100("535.183.01", "12.2"), &torch);
    assert_eq!(verdict.image_level, Level::Compat, "{}", texts(&verdict));
    assert!(texts(&verdict).contains("minor-version compatibility"));
    // Below the 12.x floor (525.60.13) it does not.
    let old = host(
        "520.61.05",
        "11.8",
        &[("NVIDIA H100 PCIe", "9.0")],
        GpuRuntime::Nvidia,
    );
    assert_eq!(judge(&data, &old, &torch).image_level, Level::WontRun);
}

#[test]
fn gpu_architectures_decide_too() {
    let data = CompatData::builtin();
    // TensorFlow 2.4 ships sm_35..sm_75 code and compute_80 PTX: Hopper only by JIT.
    let verdict = judge(&data, &h100("580.159.04", "13.0"), &tf("2.4.0", "11.0"));
    assert_eq!(verdict.image_level, Level::Compat, "{}", texts(&verdict));
    assert!(texts(&verdict).contains("JIT-compiles"));
    // TensorFlow 2.20 dropped Kepler: a K80 has nothing to run.
    let k80 = host(
        "470.256.02",
        "11.4",
        &[("Tesla K80", "3.7")],
        GpuRuntime::Nvidia,
    );
    let verdict = judge(&data, &k80, &tf("2.20.0", "12.5"));
    assert!(
        texts(&verdict).contains("TensorFlow 2.20 has no code for Tesla K80 (Kepler sm_37)"),
        "{}",
        texts(&verdict)
    );
    // CUDA 13 no longer builds for Volta.
    let v100 = host(
        "580.65.06",
        "13.0",
        &[("Tesla V100-SXM2-32GB", "7.0")],
        GpuRuntime::Nvidia,
    );
    let cuda13 = image(
        "nvidia/cuda:13.0.2-base-ubuntu24.04",
        None,
        Some("13.0.2"),
        None,
    );
    let verdict = judge(&data, &v100, &cuda13);
    assert_eq!(verdict.image_level, Level::WontRun);
    assert!(
        texts(&verdict).contains("CUDA 12.9 was the last release"),
        "{}",
        texts(&verdict)
    );
    // PyTorch's CUDA 12.8 wheels carry Blackwell code; 12.6 ones only reach it by PTX... none.
    let b200 = host(
        "580.65.06",
        "13.0",
        &[("NVIDIA B200", "10.0")],
        GpuRuntime::Nvidia,
    );
    let cu128 = image(
        "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime",
        Some((Framework::Pytorch, "2.8.0")),
        Some("12.8"),
        None,
    );
    let cu126 = image(
        "pytorch/pytorch:2.8.0-cuda12.6-cudnn9-runtime",
        Some((Framework::Pytorch, "2.8.0")),
        Some("12.6"),
        None,
    );
    assert_eq!(judge(&data, &b200, &cu128).image_level, Level::Runs);
    assert_eq!(judge(&data, &b200, &cu126).image_level, Level::WontRun);
}

#[test]
fn unknowns_are_said_and_host_problems_kept_apart() {
    let data = CompatData::builtin();
    let busybox = image("busybox:latest", None, None, None);
    let verdict = judge(&data, &h100("580.159.04", "13.0"), &busybox);
    assert_eq!(verdict.level, Level::Unknown);
    assert!(texts(&verdict).contains("names no CUDA version"));

    let mut no_driver = h100("580.159.04", "13.0");
    no_driver.driver = None;
    no_driver.cuda = None;
    no_driver.problem = Some("NVIDIA kernel driver not loaded".into());
    let verdict = judge(&data, &no_driver, &tf("2.17.0", "12.3"));
    assert_eq!(verdict.image_level, Level::Unknown);
    assert!(texts(&verdict).contains("NVIDIA kernel driver not loaded"));

    let mut no_runtime = h100("580.159.04", "13.0");
    no_runtime.runtime = GpuRuntime::Missing;
    let verdict = judge(&data, &no_runtime, &tf("2.17.0", "12.3"));
    assert_eq!(
        (verdict.level, verdict.image_level),
        (Level::WontRun, Level::Runs)
    );
    assert!(texts(&verdict).contains("nvidia-ctk runtime configure"));
}

#[test]
fn without_a_readable_driver_a_missing_runtime_leaves_the_verdict_unknown() {
    let data = CompatData::builtin();
    let mut host = h100("580.159.04", "13.0");
    host.driver = None;
    host.cuda = None;
    host.gpus.clear();
    host.problem = Some("NVIDIA kernel driver not loaded".into());
    host.runtime = GpuRuntime::Missing;
    let verdict = judge(&data, &host, &tf("2.17.0", "12.3"));
    assert_eq!(verdict.level, Level::Unknown, "{}", texts(&verdict));
    assert!(texts(&verdict).contains("nvidia-ctk runtime configure"));

    let mut old_cdi = h100("580.159.04", "13.0");
    old_cdi.runtime = GpuRuntime::CdiTooOld;
    let verdict = judge(&data, &old_cdi, &tf("2.17.0", "12.3"));
    assert_eq!(verdict.level, Level::WontRun);
    assert!(texts(&verdict).contains("Docker 25"), "{}", texts(&verdict));
}

#[test]
fn one_function_decides_how_containers_get_gpus() {
    use crate::compat::profile::GpuPathFacts;
    let runc = vec!["runc".to_string()];
    let facts = |api, cdi, hook| GpuPathFacts {
        runtimes: &runc,
        api_version: api,
        nvidia_cdi: cdi,
        runtime_hook: hook,
    };
    assert_eq!(
        GpuRuntime::decide(&facts("1.41", false, false)),
        GpuRuntime::Missing
    );
    assert_eq!(
        GpuRuntime::decide(&facts("1.41", false, true)),
        GpuRuntime::Hook
    );
    assert_eq!(
        GpuRuntime::decide(&facts("1.43", true, false)),
        GpuRuntime::CdiTooOld
    );
    assert_eq!(
        GpuRuntime::decide(&facts("1.44", true, false)),
        GpuRuntime::Cdi
    );
    let nvidia = vec!["nvidia".to_string(), "runc".to_string()];
    let with_runtime = GpuPathFacts {
        runtimes: &nvidia,
        ..facts("1.41", false, false)
    };
    assert_eq!(GpuRuntime::decide(&with_runtime), GpuRuntime::Nvidia);
    assert!(GpuRuntime::Hook.gives_gpus() && !GpuRuntime::CdiTooOld.gives_gpus());
}
