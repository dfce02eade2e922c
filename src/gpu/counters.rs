//! Health counters that grow while the driver stays loaded: PCIe replays, NVLink data-link
//! errors, and the time the clocks were held down for power or heat. Each is a 1-3 µs NVML
//! call (per link for NVLink), so they are read only where shown or served.

use nvml_wrapper::enum_wrappers::device::PerformancePolicy;
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Device;
use serde::{Deserialize, Serialize};

/// NVML's most NVLink links per GPU across generations (NVML_NVLINK_MAX_LINKS).
const MAX_NVLINKS: u32 = 18;

/// One GPU's health counters; `None` where the GPU or driver cannot tell (no NVLink on a PCIe
/// card, no violation status on GeForce).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthCounters {
    /// PCIe packets the link had to replay (a flaky slot, riser or cable).
    pub pcie_replays: Option<u64>,
    /// NVLink data-link errors, summed over the active links.
    pub nvlink: Option<NvLinkErrors>,
    /// Nanoseconds the clocks were held down by the power limit.
    pub power_violation_ns: Option<u64>,
    /// Nanoseconds the clocks were held down by temperature.
    pub thermal_violation_ns: Option<u64>,
}

/// NVLink data-link error counters (NVML's DL_* counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvLinkErrors {
    /// Flow-control (flit) CRC errors.
    pub crc_flit: u64,
    /// Data CRC errors.
    pub crc_data: u64,
    /// Transmit replays.
    pub replay: u64,
    /// Link recoveries (the link retrained).
    pub recovery: u64,
}

impl NvLinkErrors {
    /// The counters by the names Prometheus and doctor use, in that order.
    pub fn by_type(&self) -> [(&'static str, u64); 4] {
        [
            ("crc_flit", self.crc_flit),
            ("crc_data", self.crc_data),
            ("replay", self.replay),
            ("recovery", self.recovery),
        ]
    }

    pub fn add(&mut self, other: &NvLinkErrors) {
        self.crc_flit += other.crc_flit;
        self.crc_data += other.crc_data;
        self.replay += other.replay;
        self.recovery += other.recovery;
    }
}

/// Reads the health counters of one NVML device.
pub fn read_nvml(dev: &Device<'_>) -> HealthCounters {
    let violation = |policy| known(dev.violation_status(policy)).map(|v| v.violation_time);
    HealthCounters {
        pcie_replays: known(dev.pcie_replay_counter()).map(u64::from),
        nvlink: nvlink_errors(dev),
        power_violation_ns: violation(PerformancePolicy::Power),
        thermal_violation_ns: violation(PerformancePolicy::Thermal),
    }
}

/// The error counters summed over the active links; None without NVLink.
fn nvlink_errors(dev: &Device<'_>) -> Option<NvLinkErrors> {
    let mut total: Option<NvLinkErrors> = None;
    for link in 0..MAX_NVLINKS {
        let wrapper = dev.link_wrapper_for(link);
        match wrapper.is_active() {
            Ok(true) => {}
            Ok(false) => continue,
            // The first unsupported link means the GPU has no NVLink at all (PCIe cards).
            Err(_) => break,
        }
        let read = |c| known(wrapper.error_counter(c));
        let counts = (
            read(ErrorCounter::DlCrcFlit),
            read(ErrorCounter::DlCrcData),
            read(ErrorCounter::DlReplay),
            read(ErrorCounter::DlRecovery),
        );
        if let (Some(crc_flit), Some(crc_data), Some(replay), Some(recovery)) = counts {
            total.get_or_insert_default().add(&NvLinkErrors {
                crc_flit,
                crc_data,
                replay,
                recovery,
            });
        }
    }
    total
}

/// The value, or None: unsupported stays quiet, anything else is logged.
fn known<T>(result: Result<T, NvmlError>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_) | NvmlError::GpuLost) => {
            None
        }
        Err(e) => {
            tracing::debug!(error = %e, "health counter unreadable");
            None
        }
    }
}
