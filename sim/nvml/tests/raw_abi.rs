//! The C ABI checked with hand-written `#[repr(C)]` structs through plain dlopen: struct
//! sizes of the v1 and v2 process records, the two-call list protocol, string lengths, null
//! pointers, memory info versions, remapped rows and error strings.

// The C ABI under test: raw NVML symbols called through pointers this test owns.
#![allow(unsafe_code)]

mod common;

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr};
use std::sync::OnceLock;

use libloading::Library;

type Handle = *mut c_void;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct ProcV1 {
    pid: c_uint,
    used: c_ulonglong,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct ProcV2 {
    pid: c_uint,
    used: c_ulonglong,
    gpu_instance: c_uint,
    compute_instance: c_uint,
}

#[repr(C)]
#[derive(Default)]
struct MemV1 {
    total: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

#[repr(C)]
#[derive(Default)]
struct MemV2 {
    version: c_uint,
    total: c_ulonglong,
    reserved: c_ulonglong,
    free: c_ulonglong,
    used: c_ulonglong,
}

fn lib() -> &'static Library {
    static LIB: OnceLock<Library> = OnceLock::new();
    LIB.get_or_init(|| {
        std::env::set_var("GPUDECK_SIM", "gpus=8,frozen=400");
        let lib = unsafe { Library::new(common::library()) }.expect("library loads");
        let init = unsafe { lib.get::<unsafe extern "C" fn() -> c_uint>(b"nvmlInit_v2\0") };
        assert_eq!(unsafe { init.expect("symbol")() }, 0);
        lib
    })
}

/// Look up an export by name with the given signature.
fn sym<T: Copy>(name: &str) -> T {
    let name = format!("{name}\0");
    *unsafe { lib().get::<T>(name.as_bytes()) }.expect("exported")
}

fn handle(index: c_uint) -> Handle {
    let get: unsafe extern "C" fn(c_uint, *mut Handle) -> c_uint =
        sym("nvmlDeviceGetHandleByIndex_v2");
    let mut h: Handle = std::ptr::null_mut();
    assert_eq!(unsafe { get(index, &mut h) }, 0);
    assert!(!h.is_null());
    h
}

type ProcFn<T> = unsafe extern "C" fn(Handle, *mut c_uint, *mut T) -> c_uint;

fn list<T: Copy + Default>(name: &str, gpu: c_uint) -> Vec<T> {
    let f: ProcFn<T> = sym(name);
    let mut count: c_uint = 0;
    let first = unsafe { f(handle(gpu), &mut count, std::ptr::null_mut()) };
    if count == 0 {
        assert_eq!(first, 0, "{name}: an empty list is SUCCESS");
        return Vec::new();
    }
    assert_eq!(first, 7, "{name}: NVML_ERROR_INSUFFICIENT_SIZE");
    let mut short = vec![T::default(); count as usize - 1];
    let mut short_count = count - 1;
    assert_eq!(
        unsafe { f(handle(gpu), &mut short_count, short.as_mut_ptr()) },
        7
    );
    assert_eq!(short_count, count);
    let mut buf = vec![T::default(); count as usize + 3];
    let mut cap = count + 3;
    assert_eq!(unsafe { f(handle(gpu), &mut cap, buf.as_mut_ptr()) }, 0);
    assert_eq!(cap, count);
    buf.truncate(cap as usize);
    buf
}

#[test]
fn process_records_have_the_v1_and_v2_layouts() {
    assert_eq!(std::mem::size_of::<ProcV1>(), 16);
    assert_eq!(std::mem::size_of::<ProcV2>(), 24);
    let v1: Vec<ProcV1> = list("nvmlDeviceGetComputeRunningProcesses", 4);
    let v2: Vec<ProcV2> = list("nvmlDeviceGetComputeRunningProcesses_v2", 4);
    let v3: Vec<ProcV2> = list("nvmlDeviceGetComputeRunningProcesses_v3", 4);
    assert_eq!(v1.len(), 2);
    for ((a, b), c) in v1.iter().zip(&v2).zip(&v3) {
        assert_eq!((a.pid, a.used), (b.pid, b.used));
        assert_eq!((b.pid, b.used), (c.pid, c.used));
        assert_eq!((b.gpu_instance, b.compute_instance), (u32::MAX, u32::MAX));
        assert!(a.pid >= 4_200_000 && a.used > 1 << 30);
    }
    assert!(list::<ProcV1>("nvmlDeviceGetGraphicsRunningProcesses", 4).is_empty());
    assert!(list::<ProcV2>("nvmlDeviceGetGraphicsRunningProcesses_v3", 4).is_empty());
    assert!(list::<ProcV2>("nvmlDeviceGetComputeRunningProcesses_v3", 7).is_empty());
}

#[test]
fn memory_info_versions() {
    let v1f: unsafe extern "C" fn(Handle, *mut MemV1) -> c_uint = sym("nvmlDeviceGetMemoryInfo");
    let v2f: unsafe extern "C" fn(Handle, *mut MemV2) -> c_uint = sym("nvmlDeviceGetMemoryInfo_v2");
    let (mut m1, mut m2) = (MemV1::default(), MemV2::default());
    assert_eq!(
        unsafe { v2f(handle(0), &mut m2) },
        25,
        "ARGUMENT_VERSION_MISMATCH"
    );
    m2.version = 0x0200_0028;
    assert_eq!(unsafe { v2f(handle(0), &mut m2) }, 0);
    assert_eq!(unsafe { v1f(handle(0), &mut m1) }, 0);
    assert_eq!(m1.total, m2.total);
    assert_eq!(
        m1.used,
        m2.used + m2.reserved,
        "v1 counts reserved memory as used"
    );
    assert_eq!(m1.free, m2.free);
    assert_eq!(unsafe { v1f(handle(0), std::ptr::null_mut()) }, 2);
}

#[test]
fn strings_honour_the_buffer_length() {
    let name: unsafe extern "C" fn(Handle, *mut c_char, c_uint) -> c_uint =
        sym("nvmlDeviceGetName");
    let wanted = "NVIDIA H100 80GB HBM3";
    let mut buf = [0x7f as c_char; 64];
    assert_eq!(
        unsafe { name(handle(0), buf.as_mut_ptr(), wanted.len() as c_uint) },
        7
    );
    assert_eq!(
        unsafe { name(handle(0), buf.as_mut_ptr(), wanted.len() as c_uint + 1) },
        0
    );
    let got = unsafe { CStr::from_ptr(buf.as_ptr()) };
    assert_eq!(got.to_str().expect("utf8"), wanted);
    assert_eq!(unsafe { name(handle(0), std::ptr::null_mut(), 64) }, 2);
    let driver: unsafe extern "C" fn(*mut c_char, c_uint) -> c_uint =
        sym("nvmlSystemGetDriverVersion");
    assert_eq!(unsafe { driver(buf.as_mut_ptr(), 80) }, 0);
    assert_eq!(
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes(),
        b"580.65.06"
    );
}

#[test]
fn bad_handles_and_null_pointers_are_invalid_arguments() {
    let count: unsafe extern "C" fn(*mut c_uint) -> c_uint = sym("nvmlDeviceGetCount");
    assert_eq!(unsafe { count(std::ptr::null_mut()) }, 2);
    let util: unsafe extern "C" fn(Handle, *mut [c_uint; 2]) -> c_uint =
        sym("nvmlDeviceGetUtilizationRates");
    let mut u = [0; 2];
    let mut bogus = 0u64;
    assert_eq!(unsafe { util((&mut bogus as *mut u64).cast(), &mut u) }, 2);
    assert_eq!(unsafe { util(std::ptr::null_mut(), &mut u) }, 2);
    assert_eq!(unsafe { util(handle(0), &mut u) }, 0);
    let by_index: unsafe extern "C" fn(c_uint, *mut Handle) -> c_uint =
        sym("nvmlDeviceGetHandleByIndex");
    let mut h: Handle = std::ptr::null_mut();
    assert_eq!(unsafe { by_index(8, &mut h) }, 2);
    let cuda: unsafe extern "C" fn(*mut c_int) -> c_uint = sym("nvmlSystemGetCudaDriverVersion");
    let mut v = 0;
    assert_eq!(unsafe { cuda(&mut v) }, 0);
    assert_eq!(v, 13000);
}

#[test]
fn handles_are_stable() {
    assert_eq!(handle(3), handle(3));
    assert_ne!(handle(3), handle(4));
    let index: unsafe extern "C" fn(Handle, *mut c_uint) -> c_uint = sym("nvmlDeviceGetIndex");
    let mut i = 0;
    assert_eq!(unsafe { index(handle(6), &mut i) }, 0);
    assert_eq!(i, 6);
}

#[test]
fn remapped_rows_and_retired_pages() {
    type Rows =
        unsafe extern "C" fn(Handle, *mut c_uint, *mut c_uint, *mut c_uint, *mut c_uint) -> c_uint;
    let rows: Rows = sym("nvmlDeviceGetRemappedRows");
    let mut r = [9 as c_uint; 4];
    let [a, b, c, d] = &mut r;
    assert_eq!(unsafe { rows(handle(0), a, b, c, d) }, 0);
    assert_eq!(r, [0, 0, 0, 0]);
    type Pages = unsafe extern "C" fn(Handle, c_uint, *mut c_uint, *mut c_ulonglong) -> c_uint;
    let pages: Pages = sym("nvmlDeviceGetRetiredPages");
    let mut n = 0;
    assert_eq!(
        unsafe { pages(handle(0), 0, &mut n, std::ptr::null_mut()) },
        3
    );
}

#[test]
fn error_strings() {
    let text: unsafe extern "C" fn(c_uint) -> *const c_char = sym("nvmlErrorString");
    let s = |code| {
        unsafe { CStr::from_ptr(text(code)) }
            .to_str()
            .expect("utf8")
            .to_string()
    };
    assert_eq!(s(0), "Success");
    assert_eq!(s(3), "Not Supported");
    assert_eq!(s(15), "GPU is lost");
    assert_eq!(s(12345), "Unknown Error");
}

/// `nvmlGpmMetric_t` (nvml.h): id in, status and value out, three name pointers out.
#[repr(C)]
#[derive(Clone, Copy)]
struct GpmMetric {
    metric_id: c_uint,
    status: c_uint,
    value: f64,
    short_name: *const c_char,
    long_name: *const c_char,
    unit: *const c_char,
}

/// An `nvmlGpmMetricsGet_t` whose caller asks for two metrics, followed by a third entry the
/// library must not touch (its array may be shorter than the library's idea of it).
#[repr(C)]
struct GpmRequest {
    version: c_uint,
    num_metrics: c_uint,
    sample1: *mut c_void,
    sample2: *mut c_void,
    metrics: [GpmMetric; 3],
}

#[test]
fn gpm_writes_only_the_metrics_asked_for() {
    let alloc: unsafe extern "C" fn(*mut *mut c_void) -> c_uint = sym("nvmlGpmSampleAlloc");
    let get: unsafe extern "C" fn(Handle, *mut c_void) -> c_uint = sym("nvmlGpmSampleGet");
    let metrics: unsafe extern "C" fn(*mut GpmRequest) -> c_uint = sym("nvmlGpmMetricsGet");
    let free: unsafe extern "C" fn(*mut c_void) -> c_uint = sym("nvmlGpmSampleFree");
    let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
    unsafe {
        assert_eq!((alloc(&mut a), alloc(&mut b)), (0, 0));
        assert_eq!((get(handle(0), a), get(handle(0), b)), (0, 0));
    }
    let blank = GpmMetric {
        metric_id: 0,
        status: 77,
        value: -1.0,
        short_name: std::ptr::null(),
        long_name: std::ptr::null(),
        unit: std::ptr::null(),
    };
    let mut req = GpmRequest {
        version: 1,
        num_metrics: 2,
        sample1: a,
        sample2: b,
        metrics: [blank; 3],
    };
    req.metrics[0].metric_id = 2; // NVML_GPM_METRIC_SM_UTIL
    req.metrics[1].metric_id = 62; // NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC, not modelled
    req.metrics[2].metric_id = 2;
    assert_eq!(unsafe { metrics(&mut req) }, 0);
    let sm = req.metrics[0];
    assert_eq!(sm.status, 0);
    assert!(
        (0.0..=100.0).contains(&sm.value) && sm.value > 0.0,
        "{}",
        sm.value
    );
    let name = unsafe { CStr::from_ptr(sm.short_name) };
    assert_eq!(name.to_str().expect("utf-8"), "sm_util");
    assert_eq!(req.metrics[1].status, 3, "NOT_SUPPORTED");
    assert_eq!((req.metrics[2].status, req.metrics[2].value), (77, -1.0));
    req.version = 2;
    assert_eq!(
        unsafe { metrics(&mut req) },
        25,
        "ARGUMENT_VERSION_MISMATCH"
    );
    unsafe {
        assert_eq!((free(a), free(b)), (0, 0));
        assert_eq!(free(a), 2, "a freed sample is INVALID_ARGUMENT");
    }
}
