//! The verdict for one image on one host: runs, runs only through a compatibility layer, or will not run, with every reason and its fix.

use serde::Serialize;

use super::data::CompatData;
use super::profile::{GpuRuntime, HostProfile, ImageProfile, ImageSource};
use super::require::{Outcome, RequireHost, Requirement};
use super::version::{coverage, ArchCoverage, ArchTarget, Version};
use crate::pull::Framework;

/// How well an image fits the host, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Runs,
    /// Runs only through forward or minor-version compatibility, or PTX JIT compilation.
    Compat,
    /// Not enough is known to say.
    Unknown,
    WontRun,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Runs => "runs",
            Level::Compat => "runs via compat",
            Level::Unknown => "unknown",
            Level::WontRun => "will not run",
        }
    }
}

/// Whether a reason is about the image or about the host as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Image,
    Host,
}

/// One finding behind a verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reason {
    pub level: Level,
    pub scope: Scope,
    pub text: String,
    pub fix: Option<String>,
}

/// The judgement of one image on this host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// Everything considered, host problems included.
    pub level: Level,
    /// The image against this driver and these GPUs, ignoring host-wide problems (a missing
    /// container runtime affects every image alike).
    pub image_level: Level,
    pub reasons: Vec<Reason>,
}

/// Judges one image.
pub fn judge(data: &CompatData, host: &HostProfile, image: &ImageProfile) -> Verdict {
    let mut reasons = Vec::new();
    if let Some(mismatch) = &image.platform_mismatch {
        reasons.push(reason(
            Level::WontRun,
            format!("the image is {mismatch} (\"exec format error\")"),
            Some("pick the tag built for this platform".into()),
        ));
    }
    driver_reasons(data, host, image, &mut reasons);
    arch_reasons(data, host, image, &mut reasons);
    host_reasons(host, &mut reasons);
    let worst = |scope: Option<Scope>| {
        reasons
            .iter()
            .filter(|r| scope.is_none_or(|s| r.scope == s))
            .map(|r| r.level)
            .max()
            .unwrap_or(Level::Unknown)
    };
    Verdict {
        level: worst(None),
        image_level: worst(Some(Scope::Image)),
        reasons,
    }
}

fn reason(level: Level, text: String, fix: Option<String>) -> Reason {
    Reason {
        level,
        scope: Scope::Image,
        text,
        fix,
    }
}

fn driver_reasons(
    data: &CompatData,
    host: &HostProfile,
    image: &ImageProfile,
    out: &mut Vec<Reason>,
) {
    let requirement = image.require_cuda.as_deref().map(Requirement::parse);
    let Some(needed) = image.cuda.or_else(|| requirement.as_ref()?.cuda()) else {
        out.push(reason(
            Level::Unknown,
            "the image names no CUDA version (no CUDA_VERSION or NVIDIA_REQUIRE_CUDA): it may bring CUDA in pip wheels or have none".into(),
            None,
        ));
        return;
    };
    if let Some(written) = &image.cuda_from_tag {
        let unread = if image.source == ImageSource::Tag {
            "not read from the image, which is neither pulled nor readable in its registry"
        } else {
            "the image's own config names no CUDA version"
        };
        out.push(reason(
            Level::Runs,
            format!("CUDA {needed} is inferred from the tag (`{written}`), {unread}: this verdict is likely, not certain"),
            None,
        ));
    }
    let (Some(host_cuda), Some(driver)) = (host.cuda, host.driver_version()) else {
        let why = host
            .problem
            .clone()
            .unwrap_or_else(|| "no driver version".into());
        out.push(reason(
            Level::Unknown,
            format!("the image needs CUDA {needed}; this host's driver could not be read ({why})"),
            None,
        ));
        return;
    };
    let driver_text = host.driver.clone().unwrap_or_default();
    let wanted = needed.major_minor();
    // What the image is built with, worded as surely as it is known.
    let from_tag = image.cuda_from_tag.is_some();
    let (built, older, needs) = if from_tag {
        (
            "its tag names",
            format!("the {wanted} its tag names"),
            "its tag names CUDA",
        )
    } else {
        (
            "the image is built with",
            format!("the image's {wanted}"),
            "the image needs CUDA",
        )
    };
    let min_driver = data.min_driver(wanted).map(|d| d.text.clone());
    let upgrade = || match &min_driver {
        Some(d) => format!("install NVIDIA driver {d} or newer (CUDA {wanted})"),
        None => format!("install a driver that supports CUDA {wanted}"),
    };
    if let Some(requirement) = &requirement {
        let names: Vec<String> = host.gpus.iter().map(|g| g.name.clone()).collect();
        let ccs: Vec<Version> = host
            .gpus
            .iter()
            .filter_map(|g| g.compute_capability)
            .collect();
        let check = RequireHost {
            cuda: host_cuda,
            driver,
            gpu_names: &names,
            compute_capabilities: &ccs,
        };
        match requirement.evaluate(&check) {
            Outcome::Direct => out.push(reason(Level::Runs, format!("driver {driver_text} supports CUDA {host_cuda}; the image needs {wanted}"), None)),
            Outcome::ForwardCompat { branch } => out.push(reason(
                Level::Compat,
                format!("driver {driver_text} supports only CUDA {host_cuda}, but the image allows the {branch} branch through its forward-compatibility libraries (data-centre GPUs only)"),
                Some(upgrade()),
            )),
            Outcome::Unmet { .. } => {
                let mut text = format!("driver {driver_text} supports CUDA {host_cuda}; the image requires CUDA {wanted} (NVIDIA_REQUIRE_CUDA), so the container will not start");
                if minor_compatible(data, wanted, host_cuda, driver) {
                    text.push_str("; minor-version compatibility would run most of it with NVIDIA_DISABLE_REQUIRE=1, at your own risk");
                }
                out.push(reason(Level::WontRun, text, Some(upgrade())));
            }
        }
        return;
    }
    if host_cuda >= wanted {
        out.push(reason(
            Level::Runs,
            format!("driver {driver_text} supports CUDA {host_cuda}; {built} {wanted}"),
            None,
        ));
    } else if minor_compatible(data, wanted, host_cuda, driver) {
        out.push(reason(
            Level::Compat,
            format!("driver {driver_text} supports CUDA {host_cuda}, older than {older}: it runs through minor-version compatibility, but kernels shipped only as newer PTX and APIs newer than {host_cuda} fail"),
            Some(upgrade()),
        ));
    } else {
        out.push(reason(
            Level::WontRun,
            format!("driver {driver_text} supports CUDA {host_cuda}; {needs} {wanted} (\"CUDA driver version is insufficient\")"),
            Some(upgrade()),
        ));
    }
}

/// Same major release and a driver at or above that major's minor-version-compatibility floor.
fn minor_compatible(
    data: &CompatData,
    wanted: Version,
    host_cuda: Version,
    driver: Version,
) -> bool {
    wanted.major() == host_cuda.major()
        && data
            .major(wanted.major())
            .is_some_and(|m| driver >= m.minor_compat_floor.version)
}

fn arch_reasons(
    data: &CompatData,
    host: &HostProfile,
    image: &ImageProfile,
    out: &mut Vec<Reason>,
) {
    let build = build_targets(data, image);
    let mut seen: Vec<Version> = Vec::new();
    for gpu in &host.gpus {
        let Some(cc) = gpu.compute_capability else {
            continue;
        };
        if seen.contains(&cc) {
            continue;
        }
        seen.push(cc);
        let arch = data.arch(cc);
        let sm = format!("sm_{}{}", cc.major(), cc.minor());
        let named = match arch {
            Some(a) => format!("{} ({} {sm})", gpu.name, a.family),
            None => format!("{} ({sm})", gpu.name),
        };
        if let Some((what, targets)) = &build {
            let ptx_too_new = match (host.cuda, image.cuda) {
                (Some(driver_cuda), Some(built)) => driver_cuda < built.major_minor(),
                _ => false,
            };
            match coverage(targets, cc) {
                ArchCoverage::Native => {}
                // A driver cannot JIT PTX made by a newer toolkit than it supports.
                ArchCoverage::PtxJit if ptx_too_new => out.push(reason(
                    Level::WontRun,
                    format!("{what} reaches {named} only through PTX made by CUDA {}, newer than this driver can compile (\"the provided PTX was compiled with an unsupported toolchain\")", image.cuda.map(|c| c.major_minor().to_string()).unwrap_or_default()),
                    Some(format!("use a build that includes {sm}, or upgrade the driver")),
                )),
                // PTX made for exactly this capability is how builds target their newest GPU:
                // it runs as intended, after a one-off compilation worth knowing about.
                ArchCoverage::PtxJit if targets.contains(&ArchTarget::Ptx(cc)) => out.push(reason(
                    Level::Runs,
                    format!("{what} ships {named} code as compute_{}{} PTX: the first start JIT-compiles it (can take many minutes; cached in ~/.nv/ComputeCache)", cc.major(), cc.minor()),
                    None,
                )),
                ArchCoverage::PtxJit => out.push(reason(
                    Level::Compat,
                    format!("{what} carries no {sm} code for {named}: the driver JIT-compiles older PTX at first start (minutes, cached afterwards), and kernels may run slower"),
                    Some(format!("use a build that includes {sm}")),
                )),
                ArchCoverage::None => out.push(reason(
                    Level::WontRun,
                    format!("{what} has no code for {named} (\"no kernel image is available for execution on the device\")"),
                    Some(format!("use a build that includes {sm}")),
                )),
            }
            continue;
        }
        let (Some(arch), Some(cuda)) = (arch, image.cuda) else {
            continue;
        };
        let cuda = cuda.major_minor();
        if let Some(last) = arch.last_cuda.filter(|last| cuda > *last) {
            out.push(reason(
                Level::WontRun,
                format!("CUDA {cuda} no longer builds for {named}; CUDA {last} was the last release that did"),
                Some(format!("use an image with CUDA {last} or older")),
            ));
        } else if cuda < arch.first_cuda {
            out.push(reason(
                Level::Compat,
                format!("CUDA {cuda} predates {named} (first supported by CUDA {}): only code shipped as PTX runs, JIT-compiled", arch.first_cuda),
                Some(format!("use an image with CUDA {} or newer", arch.first_cuda)),
            ));
        }
    }
}

/// The GPU code a framework image is known to carry, and how to name it.
fn build_targets(data: &CompatData, image: &ImageProfile) -> Option<(String, Vec<ArchTarget>)> {
    match image.framework? {
        Framework::Tensorflow => {
            let version = image.framework_release()?;
            let build = data.tensorflow(version)?;
            Some((
                format!("TensorFlow {}", version.major_minor()),
                build.targets.clone(),
            ))
        }
        Framework::Pytorch if image.reference.contains("pytorch/pytorch") => {
            let build = data.pytorch(image.cuda?)?;
            Some((
                format!("PyTorch's CUDA {} build", build.cuda),
                build.targets.clone(),
            ))
        }
        _ => None,
    }
}

/// The fix for a Docker that can give containers no GPU, as `doctor` and the shell say it.
pub const RUNTIME_FIX: &str = "install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`, then `sudo systemctl restart docker`";

/// Whether Docker can hand GPUs to containers at all: part of every image's verdict. Without a
/// readable driver or any GPU, a missing runtime is not yet known to matter (as `doctor` warns
/// rather than fails), so it makes the verdict unknown rather than "will not run".
fn host_reasons(host: &HostProfile, out: &mut Vec<Reason>) {
    let blocking = if host.gpus.is_empty() {
        Level::Unknown
    } else {
        Level::WontRun
    };
    let (level, text, fix) = match host.runtime {
        GpuRuntime::Nvidia | GpuRuntime::Hook | GpuRuntime::Cdi => return,
        GpuRuntime::Missing => (
            blocking,
            "Docker has no NVIDIA runtime and no NVIDIA CDI spec: no container can be given a GPU",
            RUNTIME_FIX,
        ),
        GpuRuntime::CdiTooOld => (
            blocking,
            "Docker has an NVIDIA CDI spec but takes CDI devices only from Docker 25 (API 1.44), and has no NVIDIA runtime: no container can be given a GPU",
            RUNTIME_FIX,
        ),
        GpuRuntime::Unknown => (
            Level::Unknown,
            "Docker could not be asked whether it has the NVIDIA runtime",
            "start Docker (`sudo systemctl start docker`) or check DOCKER_HOST; `gpudeck doctor` says more",
        ),
    };
    out.push(Reason {
        level,
        scope: Scope::Host,
        text: text.into(),
        fix: Some(fix.into()),
    });
}

#[cfg(test)]
mod tests {
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
            cuda_from_tag: None,
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
    fn a_triton_image_from_the_catalog_on_an_old_driver_names_the_driver_it_needs() {
        let data = CompatData::builtin();
        let (catalog, _) = crate::pull::Catalog::load(None);
        let entry = catalog
            .find("nvcr.io/nvidia/tritonserver:25.10-py3")
            .unwrap();
        let triton = ImageProfile::from_catalog(entry);
        assert_eq!(
            triton.framework_label().as_deref(),
            Some("Triton Inference Server 25.10")
        );
        let geforce = host(
            "550.54.14",
            "12.4",
            &[("NVIDIA GeForce RTX 4090", "8.9")],
            GpuRuntime::Nvidia,
        );
        let verdict = judge(&data, &geforce, &triton);
        assert_eq!(verdict.image_level, Level::WontRun, "{}", texts(&verdict));
        let r = &verdict.reasons[0];
        assert!(
            r.text
                .contains("driver 550.54.14 supports CUDA 12.4; the image requires CUDA 13.0"),
            "{}",
            r.text
        );
        assert_eq!(
            r.fix.as_deref(),
            Some("install NVIDIA driver 580.65.06 or newer (CUDA 13.0)")
        );
        let verdict = judge(&data, &h100("580.159.04", "13.0"), &triton);
        assert_eq!(verdict.level, Level::Runs, "{}", texts(&verdict));
    }

    #[test]
    fn nemo_images_from_the_catalog_need_the_driver_of_their_cuda() {
        let data = CompatData::builtin();
        let (catalog, _) = crate::pull::Catalog::load(None);
        let nemo = |release: &str| {
            let entry = catalog
                .find(&format!("nvcr.io/nvidia/nemo:{release}"))
                .unwrap_or_else(|| panic!("NeMo Framework {release} missing"));
            ImageProfile::from_catalog(entry)
        };
        let (old, new) = (nemo("25.09"), nemo("26.04"));
        assert_eq!(
            new.framework_label().as_deref(),
            Some("NeMo Framework 26.04")
        );
        assert_eq!(new.require_cuda.as_deref(), Some("cuda>=13.1"));
        // A CUDA 12.9 driver runs the CUDA 12.9.1 release and refuses the CUDA 13 ones.
        let cuda129 = h100("575.57.08", "12.9");
        assert_eq!(judge(&data, &cuda129, &old).level, Level::Runs);
        for (release, fix) in [
            (
                "25.11",
                "install NVIDIA driver 580.65.06 or newer (CUDA 13.0)",
            ),
            (
                "26.02",
                "install NVIDIA driver 580.65.06 or newer (CUDA 13.0)",
            ),
            (
                "26.04",
                "install NVIDIA driver 590.44.01 or newer (CUDA 13.1)",
            ),
            (
                "26.06",
                "install NVIDIA driver 595.45.04 or newer (CUDA 13.2)",
            ),
        ] {
            let verdict = judge(&data, &cuda129, &nemo(release));
            assert_eq!(verdict.image_level, Level::WontRun, "{}", texts(&verdict));
            assert_eq!(verdict.reasons[0].fix.as_deref(), Some(fix), "{release}");
        }
        // An older 12.x driver is refused by the 12.9 release too, with the driver it needs.
        let verdict = judge(&data, &h100("550.54.14", "12.4"), &old);
        assert_eq!(verdict.image_level, Level::WontRun, "{}", texts(&verdict));
        assert_eq!(
            verdict.reasons[0].fix.as_deref(),
            Some("install NVIDIA driver 575.51.03 or newer (CUDA 12.9)")
        );
        assert_eq!(
            judge(&data, &h100("590.48.01", "13.1"), &new).level,
            Level::Runs
        );
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
    fn a_cuda_version_read_from_the_tag_is_judged_and_said_to_be_inferred() {
        let data = CompatData::builtin();
        let reference = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime";
        let parsed = crate::image::ImageRef::parse(reference).unwrap();
        let tag = crate::compat::tag::read_tag(&parsed, &data).unwrap();
        let torch = ImageProfile::from_tag(reference, &parsed, tag);
        assert_eq!(
            (torch.source, torch.cuda, torch.cudnn.as_deref()),
            (ImageSource::Tag, Some(v("12.4")), Some("9"))
        );
        assert_eq!(torch.framework_label().as_deref(), Some("PyTorch 2.5.1"));
        assert_eq!(
            torch.require_cuda, None,
            "PyTorch's images are not NVIDIA's"
        );
        let note = "CUDA 12.4 is inferred from the tag (`cuda12.4`), not read from the image, which is neither pulled nor readable in its registry: this verdict is likely, not certain";
        // A CUDA 13 driver runs it.
        let verdict = judge(&data, &h100("580.65.06", "13.0"), &torch);
        assert_eq!(verdict.image_level, Level::Runs, "{}", texts(&verdict));
        assert_eq!(verdict.reasons[0].text, note);
        assert!(texts(&verdict).contains("supports CUDA 13.0; its tag names 12.4"));
        // A 12.2 driver runs it through minor-version compatibility, said as surely as known.
        let verdict = judge(&data, &h100("535.183.01", "12.2"), &torch);
        assert_eq!(verdict.image_level, Level::Compat, "{}", texts(&verdict));
        assert!(
            texts(&verdict).contains("older than the 12.4 its tag names"),
            "{}",
            texts(&verdict)
        );
        // An 11.8 driver does not, and the fix names the driver of CUDA 12.4.
        let verdict = judge(&data, &h100("520.61.05", "11.8"), &torch);
        assert_eq!(verdict.image_level, Level::WontRun, "{}", texts(&verdict));
        assert!(texts(&verdict).contains("its tag names CUDA 12.4"));
        assert_eq!(
            verdict.reasons[1].fix.as_deref(),
            Some("install NVIDIA driver 550.54.14 or newer (CUDA 12.4)")
        );
        // Without a readable driver the note still says where the CUDA version came from.
        let mut no_driver = h100("580.65.06", "13.0");
        no_driver.driver = None;
        no_driver.cuda = None;
        let verdict = judge(&data, &no_driver, &torch);
        assert_eq!(verdict.image_level, Level::Unknown);
        assert_eq!(verdict.reasons[0].text, note);
    }

    #[test]
    fn nvidias_cuda_image_read_from_its_tag_keeps_nvidia_require_cuda() {
        let data = CompatData::builtin();
        let reference = "nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04";
        let parsed = crate::image::ImageRef::parse(reference).unwrap();
        let tag = crate::compat::tag::read_tag(&parsed, &data).unwrap();
        let cuda = ImageProfile::from_tag(reference, &parsed, tag);
        assert_eq!(cuda.require_cuda.as_deref(), Some("cuda>=12.6"));
        assert_eq!(cuda.framework, Some(Framework::Cuda));
        let verdict = judge(&data, &h100("550.54.14", "12.4"), &cuda);
        assert_eq!(verdict.image_level, Level::WontRun, "{}", texts(&verdict));
        assert!(texts(&verdict).contains("inferred from the tag (`12.6.3`)"));
        assert_eq!(
            verdict.reasons[1].fix.as_deref(),
            Some("install NVIDIA driver 560.28.03 or newer (CUDA 12.6)")
        );
    }

    #[test]
    fn old_ngc_triton_images_from_the_catalog_need_the_driver_of_their_cuda() {
        let data = CompatData::builtin();
        let (catalog, _) = crate::pull::Catalog::load(None);
        let triton = |release: &str| {
            let entry = catalog
                .find(&format!("nvcr.io/nvidia/tritonserver:{release}-py3"))
                .unwrap_or_else(|| panic!("Triton {release} missing"));
            ImageProfile::from_catalog(entry)
        };
        // A CUDA 12.2 driver (535) runs the 12.2.1 release and refuses the 12.3.2 one.
        let cuda122 = h100("535.183.01", "12.2");
        assert_eq!(judge(&data, &cuda122, &triton("23.09")).level, Level::Runs);
        let verdict = judge(&data, &cuda122, &triton("23.12"));
        assert_eq!(verdict.image_level, Level::WontRun, "{}", texts(&verdict));
        assert_eq!(
            verdict.reasons[0].fix.as_deref(),
            Some("install NVIDIA driver 545.23.06 or newer (CUDA 12.3)")
        );
        assert_eq!(judge(&data, &cuda122, &triton("23.03")).level, Level::Runs);
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
}
