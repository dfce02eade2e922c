//! Static device queries: identity, PCI location, capability and the board's fixed limits.

use std::ffi::{c_char, c_int};
use std::os::raw::c_uint;

use gpudeck_sim_model::{Metric, SimDevice};
use nvml_wrapper_sys::bindings::{self as b, nvmlDevice_t, nvmlPciInfo_t, nvmlReturn_t};

use crate::ffi::{fill_array, guard, out, write_str, NvmlResult, INVALID_ARGUMENT, NOT_SUPPORTED};
use crate::state::{Gpu, Handle};

/// Run `body` on the static facts of `device`; identity queries work even on a lost GPU.
fn with_device(device: nvmlDevice_t, body: impl FnOnce(&SimDevice) -> NvmlResult) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        body(gpu.device()?)
    })
}

/// Like `with_device`, for queries that reach the GPU: lost and unsupported checks first.
fn with_live(
    device: nvmlDevice_t,
    metric: Option<Metric>,
    body: impl FnOnce(&Gpu, &SimDevice) -> NvmlResult,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(metric)?;
        body(&gpu, gpu.device()?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: nvmlDevice_t,
    name: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    // A MIG device is named after its parent and profile: "NVIDIA H100 80GB HBM3 MIG 3g.40gb".
    guard(|| {
        let text = match Handle::of(device)? {
            Handle::Gpu(gpu) => gpu.device()?.name.clone(),
            Handle::Mig(mig) => mig.instance()?.name.clone(),
        };
        unsafe { write_str(name, length, &text) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: nvmlDevice_t,
    uuid: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    // A MIG device has a UUID of its own, "MIG-…" (nvml.h, nvmlDeviceGetUUID).
    guard(|| {
        let text = match Handle::of(device)? {
            Handle::Gpu(gpu) => gpu.device()?.uuid.clone(),
            Handle::Mig(mig) => mig.instance()?.uuid.clone(),
        };
        unsafe { write_str(uuid, length, &text) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSerial(
    device: nvmlDevice_t,
    serial: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let s = d.serial.as_deref().ok_or(NOT_SUPPORTED)?;
        unsafe { write_str(serial, length, s) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetVbiosVersion(
    device: nvmlDevice_t,
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| unsafe {
        write_str(version, length, &d.vbios_version)
    })
}

/// Fill an `nvmlPciInfo_t` (the v2 and v3 layouts are the same).
pub(crate) fn fill_pci(pci: &mut nvmlPciInfo_t, d: &SimDevice) {
    fill_array(&mut pci.busIdLegacy, &d.pci_bus_id_legacy);
    fill_array(&mut pci.busId, &d.pci_bus_id);
    pci.domain = d.pci_domain;
    pci.bus = d.pci_bus;
    pci.device = d.pci_device;
    pci.pciDeviceId = d.pci_device_id;
    pci.pciSubSystemId = d.pci_subsystem_id;
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(
    device: nvmlDevice_t,
    pci: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        fill_pci(unsafe { out(pci) }?, d);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v2(
    device: nvmlDevice_t,
    pci: *mut nvmlPciInfo_t,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetPciInfo_v3(device, pci) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMinorNumber(
    device: nvmlDevice_t,
    minor: *mut c_uint,
) -> nvmlReturn_t {
    with_device(device, |d| {
        *unsafe { out(minor) }? = d.minor_number;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetBrand(
    device: nvmlDevice_t,
    brand: *mut b::nvmlBrandType_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        *unsafe { out(brand) }? = d.brand;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetArchitecture(
    device: nvmlDevice_t,
    arch: *mut b::nvmlDeviceArchitecture_t,
) -> nvmlReturn_t {
    with_device(device, |d| {
        *unsafe { out(arch) }? = d.architecture_code;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCudaComputeCapability(
    device: nvmlDevice_t,
    major: *mut c_int,
    minor: *mut c_int,
) -> nvmlReturn_t {
    with_device(device, |d| {
        let (major, minor) = unsafe { (out(major)?, out(minor)?) };
        *major = d.compute_capability.0 as c_int;
        *minor = d.compute_capability.1 as c_int;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxClockInfo(
    device: nvmlDevice_t,
    kind: b::nvmlClockType_t,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::MaxClock);
    with_live(device, Some(Metric::Clocks), |_, d| {
        let clock = unsafe { out(clock) }?;
        *clock = match kind {
            b::nvmlClockType_enum_NVML_CLOCK_GRAPHICS | b::nvmlClockType_enum_NVML_CLOCK_SM => {
                d.max_sm_clock_mhz
            }
            b::nvmlClockType_enum_NVML_CLOCK_MEM => d.max_mem_clock_mhz,
            b::nvmlClockType_enum_NVML_CLOCK_VIDEO => d.max_video_clock_mhz,
            _ => return Err(INVALID_ARGUMENT),
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTemperatureThreshold(
    device: nvmlDevice_t,
    kind: b::nvmlTemperatureThresholds_t,
    temp: *mut c_uint,
) -> nvmlReturn_t {
    with_live(device, Some(Metric::Temperature), |_, d| {
        let temp = unsafe { out(temp) }?;
        *temp = match kind {
            b::nvmlTemperatureThresholds_enum_NVML_TEMPERATURE_THRESHOLD_SHUTDOWN => {
                d.temp_shutdown_c
            }
            b::nvmlTemperatureThresholds_enum_NVML_TEMPERATURE_THRESHOLD_SLOWDOWN => {
                d.temp_slowdown_c
            }
            b::nvmlTemperatureThresholds_enum_NVML_TEMPERATURE_THRESHOLD_GPU_MAX => {
                d.temp_max_operating_c
            }
            b::nvmlTemperatureThresholds_enum_NVML_TEMPERATURE_THRESHOLD_MEM_MAX
                if d.temp_mem_max_c > 0 =>
            {
                d.temp_mem_max_c
            }
            k if k < b::nvmlTemperatureThresholds_enum_NVML_TEMPERATURE_THRESHOLD_COUNT => {
                return Err(NOT_SUPPORTED)
            }
            _ => return Err(INVALID_ARGUMENT),
        };
        Ok(())
    })
}

/// A power limit of the board, in mW.
fn power_limit(
    device: nvmlDevice_t,
    limit: *mut c_uint,
    pick: fn(&SimDevice) -> u32,
) -> nvmlReturn_t {
    with_live(device, Some(Metric::Power), |_, d| {
        *unsafe { out(limit) }? = pick(d);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    device: nvmlDevice_t,
    limit: *mut c_uint,
) -> nvmlReturn_t {
    power_limit(device, limit, |d| d.power_limit_mw)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementLimit(
    device: nvmlDevice_t,
    limit: *mut c_uint,
) -> nvmlReturn_t {
    power_limit(device, limit, |d| d.power_limit_mw)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementDefaultLimit(
    device: nvmlDevice_t,
    limit: *mut c_uint,
) -> nvmlReturn_t {
    power_limit(device, limit, |d| d.power_limit_mw)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementLimitConstraints(
    device: nvmlDevice_t,
    min_limit: *mut c_uint,
    max_limit: *mut c_uint,
) -> nvmlReturn_t {
    with_live(device, Some(Metric::Power), |_, d| {
        let (lo, hi) = unsafe { (out(min_limit)?, out(max_limit)?) };
        *lo = d.power_min_mw;
        *hi = d.power_max_mw;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementMode(
    device: nvmlDevice_t,
    mode: *mut b::nvmlEnableState_t,
) -> nvmlReturn_t {
    with_live(device, Some(Metric::Power), |_, _| {
        *unsafe { out(mode) }? = crate::ffi::enable_state(true);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetNumFans(
    device: nvmlDevice_t,
    fans: *mut c_uint,
) -> nvmlReturn_t {
    // A fanless board answers 0 (as a real H100 does); only the `unsupported=fan` knob refuses.
    with_live(device, None, |gpu, d| {
        let fans = unsafe { out(fans) }?;
        if gpu.knob_unsupported(Metric::Fan) {
            return Err(NOT_SUPPORTED);
        }
        *fans = d.num_fans;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkGeneration(
    device: nvmlDevice_t,
    gen: *mut c_uint,
) -> nvmlReturn_t {
    with_live(device, Some(Metric::Pcie), |_, d| {
        *unsafe { out(gen) }? = d.pcie_max_gen;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkWidth(
    device: nvmlDevice_t,
    width: *mut c_uint,
) -> nvmlReturn_t {
    with_live(device, Some(Metric::Pcie), |_, d| {
        *unsafe { out(width) }? = d.pcie_max_width;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGpuMaxPcieLinkGeneration(
    device: nvmlDevice_t,
    gen: *mut c_uint,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetMaxPcieLinkGeneration(device, gen) }
}
