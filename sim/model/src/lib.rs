//! A deterministic GPU simulation shared by `gpudeck --demo` and the NVML simulator library.
//!
//! A [`SimSpec`] (parsed from `GPUDECK_SIM`) describes the machine: how many GPUs of which
//! model, a seed, and injected faults. A [`Simulation`] answers the questions NVML answers:
//! static [`SimDevice`] facts, a [`SimSample`] of dynamic readings at any time `t`, the
//! [`SimProcess`]es on a GPU, the topology between GPUs, and the Xid errors raised on them
//! ([`SimXid`]) with the health counters they move, MIG mode and instances ([`SimMig`]),
//! MPS servers and GPM profiler metrics ([`SimGpm`]). Every reading is a pure function
//! of (seed, GPU index, whole second of `t`), so the same spec gives the same numbers in the
//! demo and through the C ABI.

mod device;
mod gpm;
mod hash;
mod health;
mod knobs;
mod mig;
mod mig_profiles;
mod process;
mod profile;
mod sample;
mod simulation;
mod spec;
mod topology;
mod workload;

pub use device::SimDevice;
pub use gpm::{
    SimGpm, GPM_ANY_TENSOR_UTIL, GPM_DFMA_TENSOR_UTIL, GPM_DMMA_TENSOR_UTIL, GPM_DRAM_BW_UTIL,
    GPM_FP16_UTIL, GPM_FP32_UTIL, GPM_FP64_UTIL, GPM_GRAPHICS_UTIL, GPM_HMMA_TENSOR_UTIL,
    GPM_IMMA_TENSOR_UTIL, GPM_INTEGER_UTIL, GPM_METRIC_MAX, GPM_PCIE_RX_PER_SEC,
    GPM_PCIE_TX_PER_SEC, GPM_SM_OCCUPANCY, GPM_SM_UTIL,
};
pub use health::{
    SimNvLinkErrors, SimXid, Violation, XID_CONTAINED_ECC, XID_DBE, XID_FALLEN_OFF_BUS, XID_NVLINK,
    XID_REMAP_FAILED, XID_REMAP_RECORDED, XID_UNCONTAINED_ECC,
};
pub use knobs::{reason, InitFailure, Metric, MigWorkload, Profile, Remap, Throttle};
pub use mig::{SimMig, SimMigInstance, MIG_IDLE_MIB};
pub use mig_profiles::{
    find_mig_profile, mig_profiles, MigProfile, COMPUTE_SLICES, MAX_MIG_DEVICES, MEMORY_SLICES,
};
pub use process::{SimProcess, SimProcessUtil, MPS_SERVER, SIM_PID_BASE};
pub use sample::{SimRemappedRows, SimSample};
pub use simulation::Simulation;
pub use spec::{MigRequest, SimSpec, ENV_VAR, KNOBS, MAX_GPUS};
pub use topology::{nvswitch_bus, NvLinkRemote, TopoLevel, BRIDGE_LINKS, NVSWITCHES};
pub use workload::{Phase, Role};
