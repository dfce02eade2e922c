//! Injected Xid errors and the health counters they move: ECC and remapped rows, NVLink
//! error counters, PCIe replays, and the time spent in power or thermal violation.

use crate::knobs::Remap;

/// Xid 79: the GPU has fallen off the bus; from then on it answers only identity queries.
pub const XID_FALLEN_OFF_BUS: u64 = 79;
/// Xid 48: a double-bit (uncorrectable) ECC error.
pub const XID_DBE: u64 = 48;
/// Xid 63: a row remapping (or page retirement) was recorded; it waits for a GPU reset.
pub const XID_REMAP_RECORDED: u64 = 63;
/// Xid 64: recording a row remapping (or page retirement) failed.
pub const XID_REMAP_FAILED: u64 = 64;
/// Xid 74: an NVLink error.
pub const XID_NVLINK: u64 = 74;
/// Xid 94: a contained uncorrectable ECC error (only the processes using that memory die).
pub const XID_CONTAINED_ECC: u64 = 94;
/// Xid 95: an uncontained uncorrectable ECC error (every process on the GPU is affected).
pub const XID_UNCONTAINED_ECC: u64 = 95;

/// One Xid raised by the `xid=` knob: GPU `gpu` reports Xid `xid` at simulated second `at`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimXid {
    /// GPU index.
    pub gpu: u32,
    /// The Xid number.
    pub xid: u64,
    /// When it is raised, in seconds since the simulation started.
    pub at: f64,
}

impl SimXid {
    /// The Xid leaves an uncorrectable ECC error behind (and a row waiting to be remapped).
    pub fn is_uncorrectable_ecc(&self) -> bool {
        matches!(self.xid, XID_DBE | XID_CONTAINED_ECC | XID_UNCONTAINED_ECC)
    }
}

/// NVLink data-link error counters of one link (`nvmlDeviceGetNvLinkErrorCounter`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimNvLinkErrors {
    /// Data-link transmit replays.
    pub replay: u64,
    /// Data-link transmit recoveries (the link retrained).
    pub recovery: u64,
    /// Flow-control (flit) CRC errors.
    pub crc_flit: u64,
    /// Data CRC errors.
    pub crc_data: u64,
}

/// What one Xid 74 adds to the counters of the link it hits: a burst of CRC errors, the
/// replays they caused and one retraining.
pub(crate) const NVLINK_BURST: SimNvLinkErrors = SimNvLinkErrors {
    replay: 9,
    recovery: 1,
    crc_flit: 25,
    crc_data: 4,
};

impl SimNvLinkErrors {
    pub(crate) fn add(&mut self, other: SimNvLinkErrors) {
        self.replay += other.replay;
        self.recovery += other.recovery;
        self.crc_flit += other.crc_flit;
        self.crc_data += other.crc_data;
    }
}

/// Which violation a `nvmlDeviceGetViolationStatus` policy asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Violation {
    /// Clocks held down by the power limit (NVML_PERF_POLICY_POWER).
    Power,
    /// Clocks held down by temperature (NVML_PERF_POLICY_THERMAL).
    Thermal,
}

/// The row-remapper state forced by the Xids raised so far, if any: a failed recording wins
/// over a recorded one.
pub(crate) fn remap_forced_by(xids: &[SimXid]) -> Option<Remap> {
    if xids.iter().any(|x| x.xid == XID_REMAP_FAILED) {
        Some(Remap::Failed)
    } else if xids.iter().any(|x| x.xid == XID_REMAP_RECORDED) {
        Some(Remap::Pending)
    } else {
        None
    }
}
