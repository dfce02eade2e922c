//! Health counters: PCIe replays, NVLink error counters, and power/thermal violation time.

use std::ffi::c_ulonglong;
use std::os::raw::c_uint;

use gpudeck_sim_model::{Metric, Violation};
use nvml_wrapper_sys::bindings::{self as b, nvmlDevice_t, nvmlReturn_t, nvmlViolationTime_t};

use crate::dynamic::with_gpu;
use crate::ffi::{out, INVALID_ARGUMENT, NOT_SUPPORTED};
use crate::topology::with_link;

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPcieReplayCounter(
    device: nvmlDevice_t,
    value: *mut c_uint,
) -> nvmlReturn_t {
    with_gpu(device, Some(Metric::Pcie), |gpu| {
        let replays = gpu.sim.pcie_replays(gpu.index);
        *unsafe { out(value) }? = c_uint::try_from(replays).unwrap_or(c_uint::MAX);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkErrorCounter(
    device: nvmlDevice_t,
    link: c_uint,
    counter: b::nvmlNvLinkErrorCounter_t,
    value: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_link(device, link, |gpu, remote| {
        let value = unsafe { out(value) }?;
        if remote.is_none() {
            return Err(INVALID_ARGUMENT);
        }
        let errors = gpu
            .sim
            .nvlink_errors(gpu.index, link, gpu.sim.now())
            .ok_or(INVALID_ARGUMENT)?;
        *value = match counter {
            b::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_REPLAY => errors.replay,
            b::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_RECOVERY => errors.recovery,
            b::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_CRC_FLIT => errors.crc_flit,
            b::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_CRC_DATA => errors.crc_data,
            // NVLink 4 links protect data with ECC; no ECC errors are simulated.
            b::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_ECC_DATA => 0,
            _ => return Err(INVALID_ARGUMENT),
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetViolationStatus(
    device: nvmlDevice_t,
    policy: b::nvmlPerfPolicyType_t,
    time: *mut nvmlViolationTime_t,
) -> nvmlReturn_t {
    // GeForce boards are not "fully supported devices" for this query.
    with_gpu(device, Some(Metric::Throttle), |gpu| {
        let time = unsafe { out(time) }?;
        if !gpu.device()?.datacenter {
            return Err(NOT_SUPPORTED);
        }
        let violation = match policy {
            b::nvmlPerfPolicyType_enum_NVML_PERF_POLICY_POWER => Some(Violation::Power),
            b::nvmlPerfPolicyType_enum_NVML_PERF_POLICY_THERMAL => Some(Violation::Thermal),
            p if p < b::nvmlPerfPolicyType_enum_NVML_PERF_POLICY_COUNT => None,
            _ => return Err(INVALID_ARGUMENT),
        };
        let t = gpu.sim.now();
        // referenceTime is a CPU timestamp in µs; violationTime counts ns since the driver
        // loaded (here: since the simulation started).
        time.referenceTime = gpu.sim.start_unix_micros() + (t * 1e6) as u64;
        time.violationTime = violation.map_or(0, |v| gpu.sim.violation_ns(gpu.index, v, t));
        Ok(())
    })
}
