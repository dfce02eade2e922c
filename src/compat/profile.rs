//! The two sides of a verdict: what the host offers (driver, CUDA, GPUs, container runtime) and what an image needs.

use serde::Serialize;

use super::version::Version;
use crate::docker::types::{EngineInfo, ImageFacts, ImageInfo};
use crate::gpu::report::GpuReport;
use crate::gpu::{GpuStatic, SystemInfo};
use crate::pull::{CatalogEntry, Framework};
use crate::registry::{Platform, RemoteImage};

/// How Docker can hand GPUs to a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuRuntime {
    /// The `nvidia` runtime is registered (NVIDIA Container Toolkit).
    Nvidia,
    /// CDI specs name NVIDIA devices (`--device nvidia.com/gpu=all`).
    Cdi,
    /// Docker answers but can give containers no GPU.
    Missing,
    /// Docker could not be asked.
    Unknown,
}

impl GpuRuntime {
    /// From the engine's info; `None` when the engine could not be asked.
    pub fn from_engine(info: Option<&EngineInfo>) -> GpuRuntime {
        match info {
            None => GpuRuntime::Unknown,
            Some(info) if info.runtimes.iter().any(|r| r == "nvidia") => GpuRuntime::Nvidia,
            Some(info) if info.nvidia_cdi => GpuRuntime::Cdi,
            Some(_) => GpuRuntime::Missing,
        }
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
}

impl ImageSource {
    pub fn label(self) -> &'static str {
        match self {
            ImageSource::Local => "local",
            ImageSource::Registry => "registry",
            ImageSource::Catalog => "catalog",
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
        // NVIDIA's own images (nvidia/cuda, NGC) always set NVIDIA_REQUIRE_CUDA, so the toolkit
        // refuses an older driver outright; the forward-compatibility branches they also list
        // are only known once the image's config is read.
        let nvidia_built = entry.reference.starts_with("nvidia/cuda:")
            || entry.reference.starts_with("nvcr.io/nvidia/");
        ImageProfile {
            reference: entry.reference.clone(),
            source: ImageSource::Catalog,
            cuda,
            require_cuda: cuda
                .filter(|_| nvidia_built)
                .map(|c| format!("cuda>={}", c.major_minor())),
            cudnn: entry.cudnn.clone(),
            framework: Some(entry.framework),
            framework_version: Some(entry.framework_version.clone()),
            python: entry.python.clone(),
            download_bytes: None,
            platform_mismatch: None,
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

/// Whether any CDI spec in `dirs` declares NVIDIA GPUs (`kind: nvidia.com/gpu`), as
/// `nvidia-ctk cdi generate` writes them to /etc/cdi or /var/run/cdi.
pub fn nvidia_cdi_spec(dirs: &[String]) -> bool {
    dirs.iter().any(|dir| {
        std::fs::read_dir(dir).is_ok_and(|listing| {
            listing.filter_map(Result::ok).any(|entry| {
                let path = entry.path();
                let spec = path
                    .extension()
                    .is_some_and(|e| e == "json" || e == "yaml" || e == "yml");
                spec && std::fs::read_to_string(&path).is_ok_and(|t| t.contains("nvidia.com/gpu"))
            })
        })
    })
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
