//! Topology queries: common PCIe ancestor, peer-to-peer status, NVLink state and peers,
//! CPU and NUMA affinity.

use std::ffi::c_ulong;
use std::os::raw::c_uint;

use gpudeck_sim_model::{nvswitch_bus, Metric, NvLinkRemote};
use nvml_wrapper_sys::bindings::{self as b, nvmlDevice_t, nvmlPciInfo_t, nvmlReturn_t};

use crate::device::fill_pci;
use crate::ffi::{enable_state, fill_array, guard, out, NvmlResult, INVALID_ARGUMENT};
use crate::state::Gpu;

/// PCI device id of a third-generation NVSwitch (HGX H100), vendor NVIDIA.
const NVSWITCH_PCI_DEVICE_ID: c_uint = 0x22A3_10DE;

/// Whether GPUs `a` and `b` reach each other over NVLink: a direct link, or both on NVSwitches.
fn nvlinked(gpu: &Gpu, other: u32) -> bool {
    let ends = |index: u32| -> Vec<NvLinkRemote> {
        (0..gpu.sim.nvlink_count())
            .filter_map(|l| gpu.sim.nvlink_remote(index, l))
            .collect()
    };
    let on_switch = |e: &NvLinkRemote| matches!(e, NvLinkRemote::Switch(_));
    let (mine, theirs) = (ends(gpu.index), ends(other));
    mine.contains(&NvLinkRemote::Gpu(other))
        || (mine.iter().any(on_switch) && theirs.iter().any(on_switch))
}

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
        let nvlinked = nvlinked(&gpu, other);
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

/// Run `body` with the far end of NVLink `link` (None when inactive) after the NVLink
/// checks: lost GPU, unsupported NVLink, link index out of range.
pub(crate) fn with_link(
    device: nvmlDevice_t,
    link: c_uint,
    body: impl FnOnce(&Gpu, Option<NvLinkRemote>) -> NvmlResult,
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
        match remote.ok_or(INVALID_ARGUMENT)? {
            NvLinkRemote::Gpu(r) => fill_pci(pci, gpu.sim.device(r).ok_or(INVALID_ARGUMENT)?),
            NvLinkRemote::Switch(s) => {
                fill_switch_pci(pci, nvswitch_bus(s).ok_or(INVALID_ARGUMENT)?)
            }
        }
        Ok(())
    })
}

/// The PCI info of the NVSwitch on bus `bus`, as NVML reports a switch-side link end.
fn fill_switch_pci(pci: &mut nvmlPciInfo_t, bus: u32) {
    fill_array(&mut pci.busIdLegacy, &format!("0000:{bus:02X}:00.0"));
    fill_array(&mut pci.busId, &format!("00000000:{bus:02X}:00.0"));
    pci.domain = 0;
    pci.bus = bus;
    pci.device = 0;
    pci.pciDeviceId = NVSWITCH_PCI_DEVICE_ID;
    pci.pciSubSystemId = NVSWITCH_PCI_DEVICE_ID;
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkRemoteDeviceType(
    device: nvmlDevice_t,
    link: c_uint,
    kind: *mut b::nvmlIntNvLinkDeviceType_t,
) -> nvmlReturn_t {
    with_link(device, link, |_, remote| {
        let kind = unsafe { out(kind) }?;
        *kind = match remote.ok_or(INVALID_ARGUMENT)? {
            NvLinkRemote::Gpu(_) => b::nvmlIntNvLinkDeviceType_enum_NVML_NVLINK_DEVICE_TYPE_GPU,
            NvLinkRemote::Switch(_) => {
                b::nvmlIntNvLinkDeviceType_enum_NVML_NVLINK_DEVICE_TYPE_SWITCH
            }
        };
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
