//! Topology queries: common PCIe ancestor, peer-to-peer status, NVLink state and peers,
//! CPU and NUMA affinity.

use std::ffi::c_ulong;
use std::os::raw::c_uint;

use gpudeck_sim_model::Metric;
use nvml_wrapper_sys::bindings::{self as b, nvmlDevice_t, nvmlPciInfo_t, nvmlReturn_t};

use crate::device::fill_pci;
use crate::ffi::{enable_state, guard, out, NvmlResult, INVALID_ARGUMENT};
use crate::state::Gpu;

/// Two GPUs of the running simulation, both alive.
fn pair(a: nvmlDevice_t, b: nvmlDevice_t) -> Result<(Gpu, u32), nvmlReturn_t> {
    let first = Gpu::of(a)?;
    let second = Gpu::of(b)?;
    first.check(None)?;
    second.check(None)?;
    Ok((first, second.index))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTopologyCommonAncestor(
    device1: nvmlDevice_t,
    device2: nvmlDevice_t,
    level: *mut b::nvmlGpuTopologyLevel_t,
) -> nvmlReturn_t {
    guard(|| {
        let (gpu, other) = pair(device1, device2)?;
        *unsafe { out(level) }? = gpu.sim.topology(gpu.index, other).nvml_value();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetP2PStatus(
    device1: nvmlDevice_t,
    device2: nvmlDevice_t,
    caps: b::nvmlGpuP2PCapsIndex_t,
    status: *mut b::nvmlGpuP2PStatus_t,
) -> nvmlReturn_t {
    guard(|| {
        let (gpu, other) = pair(device1, device2)?;
        let status = unsafe { out(status) }?;
        let datacenter = gpu.device()?.datacenter;
        let nvlinked =
            (0..gpu.sim.nvlink_count()).any(|l| gpu.sim.nvlink_remote(gpu.index, l) == Some(other));
        *status = match caps {
            _ if gpu.index == other => b::nvmlGpuP2PStatus_enum_NVML_P2P_STATUS_NOT_SUPPORTED,
            b::nvmlGpuP2PCapsIndex_enum_NVML_P2P_CAPS_INDEX_NVLINK
                if nvlinked && gpu.sim.is_supported(Metric::NvLink) =>
            {
                b::nvmlGpuP2PStatus_enum_NVML_P2P_STATUS_OK
            }
            b::nvmlGpuP2PCapsIndex_enum_NVML_P2P_CAPS_INDEX_NVLINK => {
                b::nvmlGpuP2PStatus_enum_NVML_P2P_STATUS_NOT_SUPPORTED
            }
            c if c < b::nvmlGpuP2PCapsIndex_enum_NVML_P2P_CAPS_INDEX_UNKNOWN && datacenter => {
                b::nvmlGpuP2PStatus_enum_NVML_P2P_STATUS_OK
            }
            // GeForce boards have peer-to-peer disabled by the driver.
            c if c < b::nvmlGpuP2PCapsIndex_enum_NVML_P2P_CAPS_INDEX_UNKNOWN => {
                b::nvmlGpuP2PStatus_enum_NVML_P2P_STATUS_GPU_NOT_SUPPORTED
            }
            _ => return Err(INVALID_ARGUMENT),
        };
        Ok(())
    })
}

/// Run `body` with the remote GPU of NVLink `link` (None when inactive) after the NVLink
/// checks: lost GPU, unsupported NVLink, link index out of range.
fn with_link(
    device: nvmlDevice_t,
    link: c_uint,
    body: impl FnOnce(&Gpu, Option<u32>) -> NvmlResult,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(Some(Metric::NvLink))?;
        if link >= gpu.sim.nvlink_count() {
            return Err(INVALID_ARGUMENT);
        }
        body(&gpu, gpu.sim.nvlink_remote(gpu.index, link))
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: nvmlDevice_t,
    link: c_uint,
    active: *mut b::nvmlEnableState_t,
) -> nvmlReturn_t {
    with_link(device, link, |_, remote| {
        *unsafe { out(active) }? = enable_state(remote.is_some());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkVersion(
    device: nvmlDevice_t,
    link: c_uint,
    version: *mut c_uint,
) -> nvmlReturn_t {
    with_link(device, link, |gpu, _| {
        *unsafe { out(version) }? = gpu.device()?.nvlink_version;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemotePciInfo_v2(
    device: nvmlDevice_t,
    link: c_uint,
    pci: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    with_link(device, link, |gpu, remote| {
        let pci = unsafe { out(pci) }?;
        let remote = remote
            .and_then(|r| gpu.sim.device(r))
            .ok_or(INVALID_ARGUMENT)?;
        fill_pci(pci, remote);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCpuAffinity(
    device: nvmlDevice_t,
    set_size: c_uint,
    cpu_set: *mut c_ulong,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        if cpu_set.is_null() || set_size == 0 {
            return Err(INVALID_ARGUMENT);
        }
        gpu.check(None)?;
        // SAFETY: the caller provides `set_size` words at `cpu_set`.
        let words = unsafe { std::slice::from_raw_parts_mut(cpu_set, set_size as usize) };
        words.fill(0);
        let bits = c_ulong::BITS;
        for cpu in gpu.sim.cpu_affinity(gpu.index) {
            if let Some(word) = words.get_mut((cpu / bits) as usize) {
                *word |= 1 << (cpu % bits);
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNumaNodeId(
    device: nvmlDevice_t,
    node: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        let node = unsafe { out(node) }?;
        gpu.check(None)?;
        *node = gpu.device()?.cpu_socket;
        Ok(())
    })
}
