//! Health counters that grow while the driver stays loaded: PCIe replays, NVLink data-link
//! errors, and the time the clocks were held down for power or heat. Each is a 1-3 µs NVML
//! call (per link for NVLink), so they are read only where shown or served. The NVML source
//! reads them (`gpu/nvml.rs`).

use serde::{Deserialize, Serialize};

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
