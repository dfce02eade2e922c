//! The verdict for one image on one host: runs, runs only through a compatibility layer, or will not run, with every reason and its fix.

use serde::Serialize;

use super::data::CompatData;
use super::profile::{GpuRuntime, HostProfile, ImageProfile};
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
            format!(
                "driver {driver_text} supports CUDA {host_cuda}; the image is built with {wanted}"
            ),
            None,
        ));
    } else if minor_compatible(data, wanted, host_cuda, driver) {
        out.push(reason(
            Level::Compat,
            format!("driver {driver_text} supports CUDA {host_cuda}, older than the image's {wanted}: it runs through minor-version compatibility, but kernels shipped only as newer PTX and APIs newer than {host_cuda} fail"),
            Some(upgrade()),
        ));
    } else {
        out.push(reason(
            Level::WontRun,
            format!("driver {driver_text} supports CUDA {host_cuda}; the image needs CUDA {wanted} (\"CUDA driver version is insufficient\")"),
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
#[path = "engine_tests.rs"]
mod tests;
