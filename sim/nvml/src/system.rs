//! Library lifetime and system-level queries: init/shutdown, error strings, versions, device
//! count and the ways to get a device handle.

use std::ffi::{c_char, c_int, CStr};
use std::os::raw::c_uint;

use gpudeck_sim_model::Simulation;
use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use crate::ffi::{guard, handle_of, mig_handle_of, out, write_str, INVALID_ARGUMENT, NOT_FOUND};
use crate::state::{self, sim, Gpu};

#[no_mangle]
pub unsafe extern "C" fn nvmlInit_v2() -> nvmlReturn_t {
    guard(state::init)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlInit() -> nvmlReturn_t {
    guard(state::init)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvmlReturn_t {
    guard(state::init)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlShutdown() -> nvmlReturn_t {
    guard(state::shutdown)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    crate::ffi::error_text(result).as_ptr()
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    guard(|| unsafe { write_str(version, length, &sim()?.spec().driver) })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    guard(|| unsafe { write_str(version, length, &sim()?.spec().nvml_version) })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(version: *mut c_int) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        *unsafe { out(version) }? = s.spec().cuda;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> nvmlReturn_t {
    unsafe { nvmlSystemGetCudaDriverVersion(version) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        *unsafe { out(count) }? = s.device_count();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCount(count: *mut c_uint) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetCount_v2(count) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        let device = unsafe { out(device) }?;
        if index >= s.device_count() {
            return Err(INVALID_ARGUMENT);
        }
        *device = handle_of(index);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetHandleByIndex_v2(index, device) }
}

/// Find the first GPU whose facts match, or NOT_FOUND.
fn find(
    s: &Simulation,
    matches: impl Fn(&gpudeck_sim_model::SimDevice) -> bool,
) -> Result<u32, nvmlReturn_t> {
    (0..s.device_count())
        .find(|i| s.device(*i).is_some_and(&matches))
        .ok_or(NOT_FOUND)
}

/// The handle of the MIG device whose UUID is `uuid`.
fn find_mig(s: &Simulation, uuid: &str) -> Option<nvmlDevice_t> {
    (0..s.device_count()).find_map(|gpu| {
        let mig = s.mig(gpu).filter(|m| m.current)?;
        let inst = mig
            .instances
            .iter()
            .find(|i| i.uuid.eq_ignore_ascii_case(uuid))?;
        Some(mig_handle_of(gpu, inst.index))
    })
}

/// Read a C string argument; null or non-UTF-8 is an invalid argument.
unsafe fn text<'a>(s: *const c_char) -> Result<&'a str, nvmlReturn_t> {
    if s.is_null() {
        return Err(INVALID_ARGUMENT);
    }
    // SAFETY: non-null and, per the NVML contract, NUL-terminated.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| INVALID_ARGUMENT)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        let device = unsafe { out(device) }?;
        let uuid = unsafe { text(uuid) }?;
        // MIG device UUIDs are accepted too, as on drivers since R470.
        *device = match find(&s, |d| d.uuid.eq_ignore_ascii_case(uuid)) {
            Ok(index) => handle_of(index),
            Err(e) => find_mig(&s, uuid).ok_or(e)?,
        };
        Ok(())
    })
}

/// Parse NVML's accepted bus-id forms: `domain:bus:device.function`, `domain:bus:device`
/// and `bus:device.function`, all hex.
fn parse_bus_id(s: &str) -> Option<(u32, u32, u32)> {
    let hex = |x: &str| u32::from_str_radix(x.trim(), 16).ok();
    let parts: Vec<&str> = s.split(':').collect();
    let (domain, bus, rest) = match parts.as_slice() {
        [domain, bus, rest] => (hex(domain)?, hex(bus)?, *rest),
        [bus, rest] => (0, hex(bus)?, *rest),
        _ => return None,
    };
    let device = hex(rest.split('.').next()?)?;
    Some((domain, bus, device))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    pci_bus_id: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        let device = unsafe { out(device) }?;
        let wanted = parse_bus_id(unsafe { text(pci_bus_id) }?).ok_or(INVALID_ARGUMENT)?;
        *device = handle_of(find(&s, |d| {
            (d.pci_domain, d.pci_bus, d.pci_device) == wanted
        })?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId(
    pci_bus_id: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id, device) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetHandleBySerial(
    serial: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        let device = unsafe { out(device) }?;
        let serial = unsafe { text(serial) }?;
        *device = handle_of(find(&s, |d| d.serial.as_deref() == Some(serial))?);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetIndex(
    device: nvmlDevice_t,
    index: *mut c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        *unsafe { out(index) }? = gpu.index;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::parse_bus_id;

    #[test]
    fn bus_id_forms() {
        assert_eq!(parse_bus_id("00000000:18:00.0"), Some((0, 0x18, 0)));
        assert_eq!(parse_bus_id("0000:DB:00.0"), Some((0, 0xDB, 0)));
        assert_eq!(parse_bus_id("0:2a:0"), Some((0, 0x2A, 0)));
        assert_eq!(parse_bus_id("18:00.0"), Some((0, 0x18, 0)));
        assert_eq!(parse_bus_id("nonsense"), None);
    }
}
