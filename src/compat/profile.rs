//! The two sides of a verdict: what the host offers (driver, CUDA, GPUs, container runtime) and what an image needs.

use serde::Serialize;

use super::data::CompatData;
use super::tag::{read_tag, TagFacts};
use super::version::Version;
use crate::docker::types::{EngineInfo, ImageFacts, ImageInfo};
use crate::gpu::report::GpuReport;
use crate::gpu::{GpuStatic, SystemInfo};
use crate::image::ImageRef;
use crate::pull::{CatalogEntry, Framework};
use crate::registry::{Platform, RemoteImage};

/// How Docker can hand GPUs to a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuRuntime {
    /// The `nvidia` runtime is registered (NVIDIA Container Toolkit).
    Nvidia,
    /// No `nvidia` runtime, but `nvidia-container-runtime-hook` is on PATH, so dockerd registers
    /// its `nvidia` device driver and `--gpus` works.
    Hook,
    /// CDI specs name NVIDIA devices (`--device nvidia.com/gpu=all`).
    Cdi,
    /// An NVIDIA CDI spec exists, but this Docker takes CDI devices only from API 1.44 (Docker 25).
    CdiTooOld,
    /// Docker answers but can give containers no GPU.
    Missing,
    /// Docker could not be asked.
    Unknown,
}

/// The first engine API that takes CDI device names in a device request (Docker 25).
pub const CDI_API: (u32, u32) = (1, 44);

/// What decides whether Docker can hand GPUs to a container, as the engine (and, for doctor,
/// the host's files) tell it.
#[derive(Clone, Copy, Debug)]
pub struct GpuPathFacts<'a> {
    pub runtimes: &'a [String],
    pub api_version: &'a str,
    /// A CDI spec for `nvidia.com/gpu` in a directory the engine reads.
    pub nvidia_cdi: bool,
    /// `nvidia-container-runtime-hook` is on PATH.
    pub runtime_hook: bool,
}

impl GpuRuntime {
    /// The one place that decides how (and whether) containers get GPUs: `compat`, the shell
    /// and run pre-flight and `doctor` all ask it.
    pub fn decide(facts: &GpuPathFacts) -> GpuRuntime {
        if facts.runtimes.iter().any(|r| r == "nvidia") {
            GpuRuntime::Nvidia
        } else if facts.nvidia_cdi && api_at_least(facts.api_version, CDI_API) {
            GpuRuntime::Cdi
        } else if facts.runtime_hook {
            GpuRuntime::Hook
        } else if facts.nvidia_cdi {
            GpuRuntime::CdiTooOld
        } else {
            GpuRuntime::Missing
        }
    }

    /// From the engine's info; `None` when the engine could not be asked.
    pub fn from_engine(info: Option<&EngineInfo>) -> GpuRuntime {
        match info {
            None => GpuRuntime::Unknown,
            Some(info) => Self::decide(&GpuPathFacts {
                runtimes: &info.runtimes,
                api_version: &info.api_version,
                nvidia_cdi: info.nvidia_cdi,
                runtime_hook: info.nvidia_hook,
            }),
        }
    }

    /// Whether a container asked for GPUs gets them.
    pub fn gives_gpus(self) -> bool {
        matches!(
            self,
            GpuRuntime::Nvidia | GpuRuntime::Hook | GpuRuntime::Cdi
        )
    }
}

/// Whether an engine API version (`1.43`) is at least `min`.
pub fn api_at_least(api: &str, min: (u32, u32)) -> bool {
    let mut parts = api.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= min,
        _ => false,
    }
}

/// One GPU as the verdicts see it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostGpu {
    pub index: u32,
    pub name: String,
    pub compute_capability: Option<Version>,
}

/// The host side of a verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostProfile {
    pub driver: Option<String>,
    /// The newest CUDA the driver supports (NVML's CUDA driver version).
    pub cuda: Option<Version>,
    pub gpus: Vec<HostGpu>,
    pub runtime: GpuRuntime,
    /// Why the driver could not be read, when it could not.
    pub problem: Option<String>,
}

impl HostProfile {
    pub fn from_report(report: &GpuReport, runtime: GpuRuntime) -> HostProfile {
        let gpus: Vec<&GpuStatic> = report.gpus.iter().map(|g| &g.info).collect();
        let problem = report.error.as_ref().map(|e| e.title.to_string());
        Self::new(report.system.as_ref(), &gpus, problem, runtime)
    }

    /// From the driver's facts and the GPUs' static facts (as the TUI holds them).
    pub fn new(
        system: Option<&SystemInfo>,
        gpus: &[&GpuStatic],
        problem: Option<String>,
        runtime: GpuRuntime,
    ) -> HostProfile {
        HostProfile {
            driver: system.and_then(|s| s.driver_version.clone()),
            cuda: system
                .and_then(|s| s.cuda_driver_version)
                .map(|c| Version::new(c.major, c.minor)),
            gpus: gpus
                .iter()
                .map(|g| HostGpu {
                    index: g.index,
                    name: g.name.clone(),
                    compute_capability: g.compute_capability.as_deref().and_then(Version::parse),
                })
                .collect(),
            runtime,
            problem,
        }
    }

    pub fn driver_version(&self) -> Option<Version> {
        self.driver.as_deref().and_then(Version::parse)
    }
}

/// Where an image's facts were read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageSource {
    /// A pulled image's own config.
    Local,
    /// The image's config in its registry, read without pulling.
    Registry,
    /// gpudeck's catalog of known images.
    Catalog,
    /// Nothing but the reference: the CUDA version its tag names (`…-cuda12.4-…`, `cu124`).
    Tag,
}

impl ImageSource {
    pub fn label(self) -> &'static str {
        match self {
            ImageSource::Local => "local",
            ImageSource::Registry => "registry",
            ImageSource::Catalog => "catalog",
            ImageSource::Tag => "tag",
        }
    }
}

/// The image side of a verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImageProfile {
    pub reference: String,
    pub source: ImageSource,
    pub cuda: Option<Version>,
    pub require_cuda: Option<String>,
    pub cudnn: Option<String>,
    pub framework: Option<Framework>,
    pub framework_version: Option<String>,
    pub python: Option<String>,
    /// What a pull downloads (compressed layers), when the registry said.
    pub download_bytes: Option<u64>,
    /// Why this machine's CPU cannot run it, when it cannot.
    pub platform_mismatch: Option<String>,
    /// When `cuda` was inferred from the tag rather than read from the image or the catalog:
    /// the piece of the tag that names it (`cuda12.4`, `cu124`).
    pub cuda_from_tag: Option<String>,
}

impl ImageProfile {
    /// From a local or remote image's env/labels/tags facts.
    pub fn from_facts(reference: &str, facts: &ImageFacts, source: ImageSource) -> ImageProfile {
        let (framework, framework_version) = match (&facts.tensorflow, &facts.pytorch) {
            (Some(v), _) => (Some(Framework::Tensorflow), Some(v.clone())),
            (None, Some(v)) => (Some(Framework::Pytorch), Some(v.clone())),
            (None, None) => (facts.cuda.as_ref().map(|_| Framework::Cuda), None),
        };
        ImageProfile {
            reference: reference.to_string(),
            source,
            cuda: facts.cuda.as_deref().and_then(Version::parse),
            require_cuda: facts.require_cuda.clone(),
            cudnn: facts.cudnn.clone(),
            framework,
            framework_version,
            python: None,
            download_bytes: None,
            platform_mismatch: None,
            cuda_from_tag: cuda_tag_piece(facts),
        }
    }

    /// From an image's config read in its registry; `name` as the user wrote it.
    pub fn from_remote(name: &str, remote: &RemoteImage) -> ImageProfile {
        let mut profile = Self::from_facts(name, &remote.facts(), ImageSource::Registry);
        profile.download_bytes = Some(remote.compressed_size);
        if !remote.runs_here() {
            profile.platform_mismatch = Some(format!(
                "built for {}, this machine is {}",
                remote.platform(),
                Platform::host()
            ));
        }
        profile
    }

    pub fn from_catalog(entry: &CatalogEntry) -> ImageProfile {
        let cuda = Version::parse(&entry.cuda);
        ImageProfile {
            reference: entry.reference.clone(),
            source: ImageSource::Catalog,
            cuda,
            require_cuda: cuda.and_then(|c| nvidia_requirement(&entry.image, c)),
            cudnn: entry.cudnn.clone(),
            framework: Some(entry.framework),
            framework_version: Some(entry.framework_version.clone()),
            python: entry.python.clone(),
            download_bytes: None,
            platform_mismatch: None,
            cuda_from_tag: None,
        }
    }

    /// From nothing but the CUDA version a reference's tag names, for an image that is neither
    /// local nor readable in its registry nor in the catalog.
    pub fn from_tag(name: &str, image: &ImageRef, tag: TagFacts) -> ImageProfile {
        let mut profile = ImageProfile {
            reference: name.to_string(),
            source: ImageSource::Tag,
            cuda: None,
            require_cuda: None,
            cudnn: None,
            framework: None,
            framework_version: None,
            python: None,
            download_bytes: None,
            platform_mismatch: None,
            cuda_from_tag: None,
        };
        profile.take_tag(image, tag);
        profile
    }

    /// Fills in the CUDA version the tag names when the image's own facts name none (no
    /// `CUDA_VERSION`, no `NVIDIA_REQUIRE_CUDA`); facts the image has are kept.
    pub fn infer_cuda_from_tag(&mut self, data: &CompatData) {
        if self.cuda.is_some() || self.require_cuda.is_some() {
            return;
        }
        let Ok(image) = ImageRef::parse(&self.reference) else {
            return;
        };
        if let Some(tag) = read_tag(&image, data) {
            self.take_tag(&image, tag);
        }
    }

    fn take_tag(&mut self, image: &ImageRef, tag: TagFacts) {
        self.cuda = Some(tag.cuda);
        self.require_cuda = nvidia_requirement(image, tag.cuda);
        self.cuda_from_tag = Some(tag.written);
        if self.cudnn.is_none() {
            self.cudnn = tag.cudnn;
        }
        if self.framework.is_none() {
            self.framework = tag.framework;
            self.framework_version = tag.framework_version;
        }
    }

    /// The framework release as a version, when it is one (`latest` is not).
    pub fn framework_release(&self) -> Option<Version> {
        self.framework_version.as_deref().and_then(Version::parse)
    }

    /// `TensorFlow 2.17.0`, `PyTorch 2.5.1`, `CUDA 12.4.1`, or nothing.
    pub fn framework_label(&self) -> Option<String> {
        let framework = self.framework?;
        if framework == Framework::Cuda {
            return self.cuda.map(|c| format!("CUDA {c}"));
        }
        let name = framework.label();
        Some(match &self.framework_version {
            Some(v) => format!("{name} {v}"),
            None => name.to_string(),
        })
    }
}

/// When an image's CUDA version came from one of its tags (a well-known repository's, as
/// `image_facts` reads them: `pytorch/pytorch:…-cuda12.4-…`) rather than its env or labels: the
/// piece of that tag that names it.
fn cuda_tag_piece(facts: &ImageFacts) -> Option<String> {
    let cuda = facts.cuda.as_deref()?;
    let from_config = facts
        .sources
        .iter()
        .any(|s| s == "env CUDA_VERSION" || s == "label com.nvidia.cuda.version");
    if from_config {
        return None;
    }
    facts
        .sources
        .iter()
        .filter_map(|s| s.strip_prefix("tag "))
        .find_map(|name| {
            let (_, tag) = name.rsplit_once(':')?;
            tag.split(['-', '_'])
                .find(|piece| piece.ends_with(cuda))
                .map(str::to_string)
        })
}

/// NVIDIA's own images (`nvidia/cuda`, NGC's `nvcr.io/nvidia/…`) always set
/// NVIDIA_REQUIRE_CUDA to their CUDA, so the toolkit refuses an older driver outright; the
/// forward-compatibility branches they also list are only known once the image's config is read.
fn nvidia_requirement(image: &ImageRef, cuda: Version) -> Option<String> {
    let nvidia_built = match image.registry() {
        None => image.repository() == "nvidia/cuda",
        Some(registry) => registry == "nvcr.io" && image.repository().starts_with("nvidia/"),
    };
    nvidia_built.then(|| format!("cuda>={}", cuda.major_minor()))
}

/// One profile per local image: its first tag names it, else its short id.
pub fn local_profiles(local: &[ImageInfo]) -> Vec<ImageProfile> {
    local
        .iter()
        .map(|image| {
            let name = image
                .tags
                .first()
                .cloned()
                .unwrap_or_else(|| short_id(&image.id));
            ImageProfile::from_facts(&name, &image.facts, ImageSource::Local)
        })
        .collect()
}

/// The first 12 hex digits of an image id, as `docker images` shows it.
pub fn short_id(id: &str) -> String {
    id.trim_start_matches("sha256:").chars().take(12).collect()
}
