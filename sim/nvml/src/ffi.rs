//! C-boundary helpers: return codes, panic guard, out-pointer checks, strings, device handles.

use std::ffi::c_char;
use std::os::raw::c_uint;
use std::panic::{catch_unwind, AssertUnwindSafe};

use gpudeck_sim_model::{MAX_GPUS, MAX_MIG_DEVICES};
use nvml_wrapper_sys::bindings::{self as b, nvmlDevice_st, nvmlDevice_t, nvmlReturn_t};

pub(crate) const SUCCESS: nvmlReturn_t = b::nvmlReturn_enum_NVML_SUCCESS;
pub(crate) const UNINITIALIZED: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
pub(crate) const INVALID_ARGUMENT: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
pub(crate) const NOT_SUPPORTED: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
pub(crate) const NO_PERMISSION: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_NO_PERMISSION;
pub(crate) const NOT_FOUND: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
pub(crate) const INSUFFICIENT_SIZE: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
pub(crate) const DRIVER_NOT_LOADED: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED;
pub(crate) const GPU_IS_LOST: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST;
pub(crate) const LIB_RM_VERSION_MISMATCH: nvmlReturn_t =
    b::nvmlReturn_enum_NVML_ERROR_LIB_RM_VERSION_MISMATCH;
pub(crate) const ARGUMENT_VERSION_MISMATCH: nvmlReturn_t =
    b::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
pub(crate) const UNKNOWN: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_UNKNOWN;

/// What an export body returns: `Err(code)` for any NVML error.
pub(crate) type NvmlResult = Result<(), nvmlReturn_t>;

/// Run an export body, turning its result and any panic into an NVML return code.
pub(crate) fn guard(body: impl FnOnce() -> NvmlResult) -> nvmlReturn_t {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => UNKNOWN,
    }
}

/// Borrow an out-pointer, rejecting null.
pub(crate) unsafe fn out<'a, T>(ptr: *mut T) -> Result<&'a mut T, nvmlReturn_t> {
    // SAFETY: NVML callers pass either null or a valid, writable, aligned `T`.
    unsafe { ptr.as_mut() }.ok_or(INVALID_ARGUMENT)
}

/// Write a NUL-terminated string into a caller buffer of `len` bytes.
pub(crate) unsafe fn write_str(buf: *mut c_char, len: c_uint, s: &str) -> NvmlResult {
    if buf.is_null() {
        return Err(INVALID_ARGUMENT);
    }
    let bytes = s.as_bytes();
    if bytes.len() + 1 > len as usize {
        return Err(INSUFFICIENT_SIZE);
    }
    // SAFETY: the caller promised `len` writable bytes at `buf`, and we write len(s) + 1 <= len.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    Ok(())
}

/// Copy `s` into a fixed C array (as in `nvmlPciInfo_t.busId`), truncating and NUL-terminating.
pub(crate) fn fill_array(dst: &mut [c_char], s: &str) {
    dst.fill(0);
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, c) in dst.iter_mut().zip(s.as_bytes()[..n].iter()) {
        *d = *c as c_char;
    }
}

/// The memory device handles point into: one slot per possible GPU, so a handle is stable,
/// non-null, and maps back to its index by address.
static HANDLES: [u64; MAX_GPUS as usize] = [0; MAX_GPUS as usize];

/// The handle of GPU `index`.
pub(crate) fn handle_of(index: u32) -> nvmlDevice_t {
    let slot = HANDLES.get(index as usize).unwrap_or(&HANDLES[0]);
    // The handle is opaque to callers: NVML never writes through it.
    (slot as *const u64).cast::<nvmlDevice_st>().cast_mut()
}

/// The GPU index a handle stands for, if it is one of ours.
pub(crate) fn index_of(handle: nvmlDevice_t) -> Option<u32> {
    let base = HANDLES.as_ptr() as usize;
    let offset = (handle as usize).checked_sub(base)?;
    let slot = std::mem::size_of::<u64>();
    if offset % slot != 0 {
        return None;
    }
    u32::try_from(offset / slot).ok().filter(|i| *i < MAX_GPUS)
}

/// The memory MIG device handles point into: one slot per possible MIG device of each GPU,
/// apart from the GPU handles so that a handle says which kind it is.
static MIG_HANDLES: [u64; (MAX_GPUS * MAX_MIG_DEVICES) as usize] =
    [0; (MAX_GPUS * MAX_MIG_DEVICES) as usize];

/// The handle of MIG device `mig_index` of GPU `gpu`.
pub(crate) fn mig_handle_of(gpu: u32, mig_index: u32) -> nvmlDevice_t {
    let slot = (gpu * MAX_MIG_DEVICES + mig_index) as usize;
    let slot = MIG_HANDLES.get(slot).unwrap_or(&MIG_HANDLES[0]);
    (slot as *const u64).cast::<nvmlDevice_st>().cast_mut()
}

/// The (GPU index, MIG device index) a MIG device handle stands for, if it is one of ours.
pub(crate) fn mig_index_of(handle: nvmlDevice_t) -> Option<(u32, u32)> {
    let base = MIG_HANDLES.as_ptr() as usize;
    let offset = (handle as usize).checked_sub(base)?;
    let size = std::mem::size_of::<u64>();
    if offset % size != 0 {
        return None;
    }
    let slot = u32::try_from(offset / size)
        .ok()
        .filter(|s| *s < MAX_GPUS * MAX_MIG_DEVICES)?;
    Some((slot / MAX_MIG_DEVICES, slot % MAX_MIG_DEVICES))
}

/// NVML_FEATURE_ENABLED / DISABLED.
pub(crate) fn enable_state(on: bool) -> b::nvmlEnableState_t {
    if on {
        b::nvmlEnableState_enum_NVML_FEATURE_ENABLED
    } else {
        b::nvmlEnableState_enum_NVML_FEATURE_DISABLED
    }
}

/// The text of an NVML return code, as `nvmlErrorString` gives it.
pub(crate) fn error_text(code: nvmlReturn_t) -> &'static std::ffi::CStr {
    match code {
        0 => c"Success",
        1 => c"Uninitialized",
        2 => c"Invalid Argument",
        3 => c"Not Supported",
        4 => c"Insufficient Permissions",
        5 => c"Already Initialized",
        6 => c"Not Found",
        7 => c"Insufficient Size",
        8 => c"Insufficient External Power",
        9 => c"Driver Not Loaded",
        10 => c"Timeout",
        11 => c"Interrupt request issue",
        12 => c"NVML Shared Library Not Found",
        13 => c"Function Not Found",
        14 => c"Corrupted infoROM",
        15 => c"GPU is lost",
        16 => c"GPU requires restart",
        17 => c"GPU access blocked by the operating system",
        18 => c"RM has detected an NVML/RM version mismatch.",
        19 => c"In use by another client",
        20 => c"Insufficient Memory",
        21 => c"No data",
        22 => c"ECC is not supported",
        23 => c"Insufficient Resources",
        24 => c"Frequency not supported",
        25 => c"Argument version mismatch",
        26 => c"Deprecated",
        27 => c"Not Ready",
        28 => c"GPU not found",
        29 => c"Invalid state",
        _ => c"Unknown Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip() {
        for i in [0, 1, 7, MAX_GPUS - 1] {
            assert_eq!(index_of(handle_of(i)), Some(i));
        }
        assert_eq!(index_of(std::ptr::null_mut()), None);
        let odd = (handle_of(1) as usize + 3) as nvmlDevice_t;
        assert_eq!(index_of(odd), None);
    }

    #[test]
    fn mig_handles_round_trip_and_are_not_gpu_handles() {
        for (g, m) in [(0, 0), (0, 6), (5, 3), (MAX_GPUS - 1, MAX_MIG_DEVICES - 1)] {
            let h = mig_handle_of(g, m);
            assert_eq!(mig_index_of(h), Some((g, m)));
            assert_eq!(index_of(h), None);
        }
        assert_eq!(mig_index_of(handle_of(0)), None);
    }

    #[test]
    fn strings_respect_the_buffer() {
        let mut buf = [1 as c_char; 4];
        let r = unsafe { write_str(buf.as_mut_ptr(), 4, "abcd") };
        assert_eq!(r, Err(INSUFFICIENT_SIZE));
        let r = unsafe { write_str(buf.as_mut_ptr(), 4, "abc") };
        assert_eq!(r, Ok(()));
        assert_eq!(buf, [97, 98, 99, 0]);
    }
}
