//! An NVML-compatible shared library (`libgpudeck_nvml_sim.so`, soname `libnvidia-ml.so.1`)
//! that answers NVML's C API from the deterministic `gpudeck-sim-model` simulation.
//!
//! The simulation is configured by the `GPUDECK_SIM` environment variable, read at
//! `nvmlInit`. Every export catches panics (returning NVML_ERROR_UNKNOWN), rejects null
//! out-pointers with NVML_ERROR_INVALID_ARGUMENT and never prints.
// The exported names are NVML's, and their safety contract is NVML's documented C API.
#![allow(non_snake_case, clippy::missing_safety_doc)]
// This library is a C ABI: every export takes raw pointers from its caller. The pointer
// helpers in `ffi` (`out`, `write_str`, `write_list`) say why each use of them is sound.
#![allow(unsafe_code)]

mod cost;
mod counters;
mod device;
mod dynamic;
mod events;
mod ffi;
mod gpm;
mod health;
mod mig;
mod process;
mod state;
mod system;
mod topology;
