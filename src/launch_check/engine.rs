//! Whether the Docker Engine can hand GPUs to a container, and how to ask it for them.

use super::error::{LaunchError, Workload};
use crate::compat::GpuRuntime;
use crate::docker::types::EngineInfo;

/// How the engine is asked for GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuPlumbing {
    /// No GPUs requested.
    None,
    /// A device request as `docker run --gpus device=UUID` sends it (driver "", capability
    /// "gpu"): the daemon hands it to the NVIDIA Container Toolkit's hook.
    DeviceRequest,
    /// CDI device names `nvidia.com/gpu=UUID` in a device request with driver "cdi" (API 1.44+).
    Cdi,
}

/// How to ask this engine for GPUs: the nvidia runtime (or its hook) means the toolkit's `--gpus`
/// path; a CDI spec serves on Docker 25+; neither is refused with the toolkit message. The
/// decision is `GpuRuntime::from_engine`'s, as for the compatibility verdicts.
pub fn gpu_plumbing(engine: &EngineInfo, workload: Workload) -> Result<GpuPlumbing, LaunchError> {
    match GpuRuntime::from_engine(Some(engine)) {
        GpuRuntime::Nvidia | GpuRuntime::Hook => Ok(GpuPlumbing::DeviceRequest),
        GpuRuntime::Cdi => Ok(GpuPlumbing::Cdi),
        GpuRuntime::CdiTooOld => Err(LaunchError::NoToolkit {
            workload,
            detail: format!(
                "an NVIDIA CDI spec exists, but Docker {} (API {}) takes CDI devices only from API 1.44 (Docker 25)",
                engine.server_version, engine.api_version
            ),
        }),
        GpuRuntime::Missing | GpuRuntime::Unknown => Err(LaunchError::NoToolkit {
            workload,
            detail: format!(
                "Docker lists the runtimes {} and no NVIDIA CDI spec",
                engine.runtimes.join(", ")
            ),
        }),
    }
}
