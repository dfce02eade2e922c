//! MIG queries: mode, MIG device handles and their parents, instance ids, attributes.
//!
//! Signatures, return codes and `nvmlDeviceAttributes_t` follow nvml.h as shipped in
//! NVIDIA/go-nvml (`gen/nvml/nvml.h`, NVML API 13).

use std::os::raw::c_uint;

use gpudeck_sim_model::{Metric, MAX_MIG_DEVICES};
use nvml_wrapper_sys::bindings::{nvmlDeviceAttributes_t, nvmlDevice_t, nvmlReturn_t};

use crate::ffi::{
    guard, handle_of, mig_handle_of, out, INVALID_ARGUMENT, NOT_FOUND, NOT_SUPPORTED,
};
use crate::state::{Gpu, Handle, MigDevice};

/// The MIG device a handle names: NOT_SUPPORTED for a GPU handle (nvml.h: "if this query is
/// not supported by the device").
fn mig_of(handle: nvmlDevice_t) -> Result<MigDevice, nvmlReturn_t> {
    match Handle::of(handle)? {
        Handle::Mig(mig) => Ok(mig),
        Handle::Gpu(_) => Err(NOT_SUPPORTED),
    }
}

/// A GPU that can do MIG: NOT_SUPPORTED on other boards and with `unsupported=mig`.
fn mig_gpu(handle: nvmlDevice_t) -> Result<Gpu, nvmlReturn_t> {
    let gpu = Gpu::of(handle)?;
    gpu.check(Some(Metric::Mig))?;
    Ok(gpu)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: nvmlDevice_t,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> nvmlReturn_t {
    // NVML_DEVICE_MIG_DISABLE (0) / NVML_DEVICE_MIG_ENABLE (1); the pending mode is the one
    // the next GPU reset brings.
    crate::cost::spend(crate::cost::Call::StaticMode);
    guard(|| {
        let gpu = mig_gpu(device)?;
        let (current, pending) = unsafe { (out(current)?, out(pending)?) };
        let mig = gpu.sim.mig(gpu.index).ok_or(NOT_SUPPORTED)?;
        *current = c_uint::from(mig.current);
        *pending = c_uint::from(mig.pending);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(
    device: nvmlDevice_t,
    count: *mut c_uint,
) -> nvmlReturn_t {
    // "Returns zero if MIG is not supported or enabled."
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(None)?;
        let count = unsafe { out(count) }?;
        let on =
            gpu.sim.is_supported(Metric::Mig) && gpu.sim.mig(gpu.index).is_some_and(|m| m.current);
        *count = if on { MAX_MIG_DEVICES } else { 0 };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: nvmlDevice_t,
    index: c_uint,
    mig_device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    // INVALID_ARGUMENT past the maximum, NOT_FOUND for an empty slot below it.
    guard(|| {
        let gpu = mig_gpu(device)?;
        let handle = unsafe { out(mig_device) }?;
        let mig = gpu.sim.mig(gpu.index).ok_or(NOT_SUPPORTED)?;
        if !mig.current {
            return Err(NOT_SUPPORTED);
        }
        if index >= MAX_MIG_DEVICES {
            return Err(INVALID_ARGUMENT);
        }
        mig.instance(index).ok_or(NOT_FOUND)?;
        *handle = mig_handle_of(gpu.index, index);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(
    device: nvmlDevice_t,
    is_mig: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let kind = Handle::of(device)?;
        *unsafe { out(is_mig) }? = c_uint::from(matches!(kind, Handle::Mig(_)));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    mig_device: nvmlDevice_t,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    guard(|| {
        let mig = mig_of(mig_device)?;
        *unsafe { out(device) }? = handle_of(mig.gpu);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(
    device: nvmlDevice_t,
    id: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let mig = mig_of(device)?;
        let id = unsafe { out(id) }?;
        *id = mig.instance()?.gpu_instance_id;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeInstanceId(
    device: nvmlDevice_t,
    id: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let mig = mig_of(device)?;
        let id = unsafe { out(id) }?;
        *id = mig.instance()?.compute_instance_id;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetAttributes_v2(
    device: nvmlDevice_t,
    attributes: *mut nvmlDeviceAttributes_t,
) -> nvmlReturn_t {
    // "This API currently only supports MIG device handles": a GPU handle is NOT_SUPPORTED.
    // The engines are the GPU instance's (`nvidia-smi mig -lgip`), shared by its one compute
    // instance, which spans all its slices.
    guard(|| {
        let mig = mig_of(device)?;
        let a = unsafe { out(attributes) }?;
        let p = mig.instance()?.profile;
        *a = nvmlDeviceAttributes_t {
            multiprocessorCount: p.sm_count,
            sharedCopyEngineCount: p.copy_engines,
            sharedDecoderCount: p.decoders,
            sharedEncoderCount: 0,
            sharedJpegCount: p.jpeg,
            sharedOfaCount: p.ofa,
            gpuInstanceSliceCount: p.compute_slices,
            computeInstanceSliceCount: p.compute_slices,
            memorySizeMB: p.memory_mib,
        };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_have_the_c_layout() {
        // 8 unsigned ints and one unsigned long long (nvml.h, nvmlDeviceAttributes_t).
        assert_eq!(std::mem::size_of::<nvmlDeviceAttributes_t>(), 40);
    }
}
