//! Health and mode queries: ECC mode and error counters, retired pages and remapped rows,
//! persistence, compute and display modes, BAR1 memory.

use std::ffi::c_ulonglong;
use std::os::raw::c_uint;

use gpudeck_sim_model::Metric;
use nvml_wrapper_sys::bindings::{self as b, nvmlBAR1Memory_t, nvmlDevice_t, nvmlReturn_t};

use crate::dynamic::{with_gpu, with_sample};
use crate::ffi::{enable_state, out, INVALID_ARGUMENT, NOT_SUPPORTED};

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEccMode(
    device: nvmlDevice_t,
    current: *mut b::nvmlEnableState_t,
    pending: *mut b::nvmlEnableState_t,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::StaticMode);
    with_sample(device, Some(Metric::Ecc), |d, _| {
        let (current, pending) = unsafe { (out(current)?, out(pending)?) };
        *current = enable_state(d.ecc_enabled);
        *pending = enable_state(d.ecc_enabled);
        Ok(())
    })
}

/// The injected count of `error_type`; volatile and aggregate counters agree (no history).
fn ecc_count(
    error_type: b::nvmlMemoryErrorType_t,
    counter: b::nvmlEccCounterType_t,
    sample: (u64, u64),
) -> Result<u64, nvmlReturn_t> {
    if counter > b::nvmlEccCounterType_enum_NVML_AGGREGATE_ECC {
        return Err(INVALID_ARGUMENT);
    }
    match error_type {
        b::nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_CORRECTED => Ok(sample.0),
        b::nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_UNCORRECTED => Ok(sample.1),
        _ => Err(INVALID_ARGUMENT),
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: nvmlDevice_t,
    error_type: b::nvmlMemoryErrorType_t,
    counter: b::nvmlEccCounterType_t,
    count: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_sample(device, Some(Metric::Ecc), |_, s| {
        let count = unsafe { out(count) }?;
        *count = ecc_count(error_type, counter, (s.ecc_corrected, s.ecc_uncorrected))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryErrorCounter(
    device: nvmlDevice_t,
    error_type: b::nvmlMemoryErrorType_t,
    counter: b::nvmlEccCounterType_t,
    location: b::nvmlMemoryLocation_t,
    count: *mut c_ulonglong,
) -> nvmlReturn_t {
    // All injected errors are in device memory (HBM / DRAM); SRAM and caches stay clean.
    with_sample(device, Some(Metric::Ecc), |_, s| {
        let count = unsafe { out(count) }?;
        let total = ecc_count(error_type, counter, (s.ecc_corrected, s.ecc_uncorrected))?;
        *count = match location {
            b::nvmlMemoryLocation_enum_NVML_MEMORY_LOCATION_DRAM => total,
            l if l < b::nvmlMemoryLocation_enum_NVML_MEMORY_LOCATION_COUNT => 0,
            _ => return Err(INVALID_ARGUMENT),
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages(
    device: nvmlDevice_t,
    _cause: b::nvmlPageRetirementCause_t,
    _count: *mut c_uint,
    _addresses: *mut c_ulonglong,
) -> nvmlReturn_t {
    // Ampere and later boards remap rows instead of retiring pages.
    with_sample(device, None, |_, _| Err(NOT_SUPPORTED))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages_v2(
    device: nvmlDevice_t,
    _cause: b::nvmlPageRetirementCause_t,
    _count: *mut c_uint,
    _addresses: *mut c_ulonglong,
    _timestamps: *mut c_ulonglong,
) -> nvmlReturn_t {
    with_sample(device, None, |_, _| Err(NOT_SUPPORTED))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPagesPendingStatus(
    device: nvmlDevice_t,
    _pending: *mut b::nvmlEnableState_t,
) -> nvmlReturn_t {
    with_sample(device, None, |_, _| Err(NOT_SUPPORTED))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetRemappedRows(
    device: nvmlDevice_t,
    corr_rows: *mut c_uint,
    unc_rows: *mut c_uint,
    is_pending: *mut c_uint,
    failure_occurred: *mut c_uint,
) -> nvmlReturn_t {
    // The model decides the counters (`ecc=` uncorrectable errors, `remap=` states).
    with_gpu(device, Some(Metric::Ecc), |gpu| {
        let (corr, unc, pending, failure) = unsafe {
            (
                out(corr_rows)?,
                out(unc_rows)?,
                out(is_pending)?,
                out(failure_occurred)?,
            )
        };
        let rows = gpu.sim.remapped_rows(gpu.index);
        *corr = rows.correctable;
        *unc = rows.uncorrectable;
        *pending = c_uint::from(rows.pending);
        *failure = c_uint::from(rows.failure);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPersistenceMode(
    device: nvmlDevice_t,
    mode: *mut b::nvmlEnableState_t,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::Mode);
    with_sample(device, Some(Metric::Persistence), |d, _| {
        *unsafe { out(mode) }? = enable_state(d.persistence);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeMode(
    device: nvmlDevice_t,
    mode: *mut b::nvmlComputeMode_t,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::Mode);
    with_sample(device, None, |_, _| {
        *unsafe { out(mode) }? = b::nvmlComputeMode_enum_NVML_COMPUTEMODE_DEFAULT;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDisplayMode(
    device: nvmlDevice_t,
    mode: *mut b::nvmlEnableState_t,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::StaticMode);
    with_sample(device, None, |d, _| {
        *unsafe { out(mode) }? = enable_state(d.display_active);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDisplayActive(
    device: nvmlDevice_t,
    active: *mut b::nvmlEnableState_t,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetDisplayMode(device, active) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetBAR1MemoryInfo(
    device: nvmlDevice_t,
    bar1: *mut nvmlBAR1Memory_t,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::StaticMode);
    // Each context maps a little of BAR1; a mostly idle board shows about 1 MiB used.
    with_sample(device, None, |d, s| {
        let bar1 = unsafe { out(bar1) }?;
        let used = (1 + s.mem_used_bytes / (1 << 30)) << 20;
        bar1.bar1Total = d.bar1_total_bytes;
        bar1.bar1Used = used.min(d.bar1_total_bytes);
        bar1.bar1Free = d.bar1_total_bytes - bar1.bar1Used;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDriverModel(
    device: nvmlDevice_t,
    _current: *mut c_uint,
    _pending: *mut c_uint,
) -> nvmlReturn_t {
    // Driver models (WDDM/TCC) exist on Windows only; Linux NVML answers NOT_SUPPORTED.
    with_sample(device, None, |_, _| Err(NOT_SUPPORTED))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDriverModel_v2(
    device: nvmlDevice_t,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetDriverModel(device, current, pending) }
}
