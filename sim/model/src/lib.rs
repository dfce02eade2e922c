//! A deterministic GPU simulation shared by `gpudeck --demo` and the NVML simulator library.
//!
//! A [`SimSpec`] (parsed from `GPUDECK_SIM`) describes the machine: how many GPUs of which
//! model, a seed, and injected faults. A [`Simulation`] answers the questions NVML answers:
//! static [`SimDevice`] facts, a [`SimSample`] of dynamic readings at any time `t`, the
//! [`SimProcess`]es on a GPU, the topology between GPUs, and the Xid errors raised on them
//! ([`SimXid`]) with the health counters they move. Every reading is a pure function
//! of (seed, GPU index, whole second of `t`), so the same spec gives the same numbers in the
//! demo and through the C ABI.

mod device;
mod hash;
mod health;
mod knobs;
mod process;
mod profile;
mod sample;
mod simulation;
mod spec;
mod topology;
mod workload;

pub use device::SimDevice;
pub use health::{
    SimNvLinkErrors, SimXid, Violation, XID_CONTAINED_ECC, XID_DBE, XID_FALLEN_OFF_BUS, XID_NVLINK,
    XID_REMAP_FAILED, XID_REMAP_RECORDED, XID_UNCONTAINED_ECC,
};
pub use knobs::{reason, InitFailure, Metric, Profile, Remap, Throttle};
pub use process::{SimProcess, SimProcessUtil, SIM_PID_BASE};
pub use sample::{SimRemappedRows, SimSample};
pub use simulation::Simulation;
pub use spec::{SimSpec, ENV_VAR, KNOBS, MAX_GPUS};
pub use topology::{nvswitch_bus, NvLinkRemote, TopoLevel, BRIDGE_LINKS, NVSWITCHES};
pub use workload::{Phase, Role};
