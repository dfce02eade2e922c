//! The seam around a GPU backend: what the collector needs from NVML (or the simulation), and its errors.

use thiserror::Error;

use super::counters::HealthCounters;
use super::types::{GpuSample, GpuStatic, Inventory, ProcessUtilSample, SystemInfo};
use super::xid_watch::XidBackend;

/// A backend that can describe the GPUs once and sample them repeatedly.
///
/// Implementations own their library handle; the collector calls them from its own thread.
pub trait GpuSource: Send {
    /// Host facts, per-GPU static facts and topology. Called once, at start-up.
    fn inventory(&mut self) -> Result<Inventory, GpuError>;
    /// The live values of one GPU. Never fails as a whole: a metric that cannot be read is `None`.
    fn sample(&mut self, gpu: &GpuStatic) -> GpuSample;
    /// The live values of one GPU without its slow ones ([`GpuSample::SLOW_METRICS`]: power
    /// limit, PCIe link, ECC counters, remapped rows, retired pages), which the collector reads
    /// only every [`SLOW_EVERY`](super::collector::SLOW_EVERY) and carries between. A source
    /// whose reads cost nothing reads everything.
    fn sample_quick(&mut self, gpu: &GpuStatic) -> GpuSample {
        self.sample(gpu)
    }
    /// The process name NVML knows for a PID, used when /proc cannot tell (another PID namespace).
    fn process_name(&mut self, pid: u32) -> Option<String>;
    /// The per-process utilisation samples of one GPU newer than `since_us` (NVML's
    /// microsecond timestamps; 0 for all it keeps). An empty list: no process ran anything
    /// since then. `None`: the GPU cannot tell. It costs about 2 ms of CPU per GPU on real
    /// hardware, so the collector asks only while the processes are on screen.
    fn process_utilization(
        &mut self,
        _gpu: &GpuStatic,
        _since_us: u64,
    ) -> Option<Vec<ProcessUtilSample>> {
        None
    }
    /// The health counters of one GPU (PCIe replays, NVLink errors, violation time): cheap
    /// calls, but dozens per GPU with NVLink, so read only while served or shown.
    fn health(&mut self, _gpu: &GpuStatic) -> HealthCounters {
        HealthCounters::default()
    }
    /// What the Xid watcher waits on for these GPUs (`xid_watch`), opened on the watcher's
    /// own thread; `None` when the source has no event API at all.
    fn xid_backend(&self) -> Option<XidBackend> {
        None
    }
}

/// Why there is no GPU data, in the terms a user can act on.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum GpuError {
    #[error("the NVIDIA management library ({library}) could not be loaded: {detail}")]
    LibraryNotFound { library: String, detail: String },
    #[error("the NVIDIA kernel driver is not loaded")]
    DriverNotLoaded,
    #[error("the NVIDIA driver and its management library have different versions")]
    VersionMismatch,
    #[error("not allowed to access the GPUs")]
    NoPermission,
    /// The driver answers, so its facts (version, CUDA) are known: views show them.
    #[error("the NVIDIA driver{} is loaded but reports no GPUs", driver_words(.system.as_deref()))]
    NoGpus { system: Option<Box<SystemInfo>> },
    #[error("the simulated GPUs are misconfigured: {0}")]
    Simulation(String),
    #[error("NVML failed: {0}")]
    Other(String),
}

/// " 580.65.06", or nothing when the version is unknown.
fn driver_words(system: Option<&SystemInfo>) -> String {
    system
        .and_then(|s| s.driver_version.as_deref())
        .map_or_else(String::new, |v| format!(" {v}"))
}

impl GpuError {
    /// The driver's facts when it answered (the driver loaded, no GPU found); `None` otherwise.
    pub fn system(&self) -> Option<&SystemInfo> {
        match self {
            GpuError::NoGpus { system } => system.as_deref(),
            _ => None,
        }
    }

    /// A one-line heading for the GPU view.
    pub fn title(&self) -> &'static str {
        match self {
            GpuError::LibraryNotFound { .. } => "No NVIDIA driver found",
            GpuError::DriverNotLoaded => "NVIDIA kernel driver not loaded",
            GpuError::VersionMismatch => "Driver/library version mismatch",
            GpuError::NoPermission => "No permission to use the GPUs",
            GpuError::NoGpus { .. } => "No GPUs found",
            GpuError::Simulation(_) => "Simulation misconfigured",
            GpuError::Other(_) => "NVML error",
        }
    }

    /// What to do about it, in concrete steps.
    pub fn fix(&self) -> &'static str {
        match self {
            GpuError::LibraryNotFound { .. } => {
                "Install the NVIDIA driver (e.g. `sudo apt install nvidia-driver` or the .run installer), \
                 or point gpudeck at libnvidia-ml with --nvml-lib PATH. No GPU here? Try `gpudeck --demo`."
            }
            GpuError::DriverNotLoaded => {
                "Load the module with `sudo modprobe nvidia`; if that fails, check `dmesg | grep -i nvidia` \
                 (Secure Boot often blocks unsigned modules) and reinstall the driver for this kernel."
            }
            GpuError::VersionMismatch => {
                "The driver was upgraded but the old kernel module is still loaded. Reboot, or unload and \
                 reload it: `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`."
            }
            GpuError::NoPermission => {
                "Check the permissions of /dev/nvidia* (`ls -l /dev/nvidia*`); your user may need to be in \
                 the group that owns them (often `video`), or run gpudeck with sudo."
            }
            GpuError::NoGpus { .. } => {
                "Check `lspci | grep -i nvidia` and `dmesg | grep -i nvidia`: the GPU may be unseated, \
                 disabled in the BIOS, bound to vfio-pci, or excluded from NVML."
            }
            GpuError::Simulation(_) => {
                "Fix the GPUDECK_SIM setting (see sim/README.md), or unset it for the default demo."
            }
            GpuError::Other(_) => {
                "Run `nvidia-smi` to see whether the driver works at all, and check `dmesg | grep -i nvidia`."
            }
        }
    }
}
