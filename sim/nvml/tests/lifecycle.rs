//! Init and shutdown: calls before init, injected init failures, a bad spec, and the init
//! refcount. One sequential test, since each step changes `GPUDECK_SIM` for this process.

// The C ABI under test: raw NVML symbols called through pointers this test owns.
#![allow(unsafe_code)]

mod common;

use std::ffi::c_uint;

use nvml_wrapper::error::NvmlError;

type CountFn = unsafe extern "C" fn(*mut c_uint) -> c_uint;
type VoidFn = unsafe extern "C" fn() -> c_uint;

fn count_raw(lib: &libloading::Library) -> (c_uint, c_uint) {
    let mut count: c_uint = 99;
    let code = unsafe {
        let f = lib
            .get::<CountFn>(b"nvmlDeviceGetCount_v2\0")
            .expect("symbol");
        f(&mut count)
    };
    (code, count)
}

#[test]
fn init_lifecycle() {
    let path = common::library();
    let lib = unsafe { libloading::Library::new(path) }.expect("library loads");

    // Before any init: UNINITIALIZED (1), and shutdown too.
    assert_eq!(count_raw(&lib).0, 1);
    let shutdown = unsafe { lib.get::<VoidFn>(b"nvmlShutdown\0") }.expect("symbol");
    assert_eq!(unsafe { shutdown() }, 1);

    assert!(matches!(
        common::init("init=driver-not-loaded"),
        Err(NvmlError::DriverNotLoaded)
    ));
    assert!(matches!(
        common::init("init=rm-mismatch"),
        Err(NvmlError::LibRmVersionMismatch)
    ));
    assert!(matches!(
        common::init("init=no-permission"),
        Err(NvmlError::NoPermission)
    ));
    assert!(matches!(
        common::init("gpus=banana"),
        Err(NvmlError::Unknown)
    ));
    assert_eq!(
        count_raw(&lib).0,
        1,
        "failed inits leave NVML uninitialised"
    );

    // Refcounted: the library stays up until the last shutdown.
    let first = common::init("gpus=3").expect("first init");
    let second = common::init("gpus=5").expect("second init");
    assert_eq!(
        second.device_count().expect("count"),
        3,
        "the first init's spec holds"
    );
    drop(first);
    assert_eq!(count_raw(&lib), (0, 3));
    drop(second);
    assert_eq!(count_raw(&lib).0, 1);

    // A fresh init reads the spec again.
    let again = common::init("gpus=0").expect("init with no GPUs");
    assert_eq!(again.device_count().expect("count"), 0);
    assert!(matches!(
        again.device_by_index(0),
        Err(NvmlError::InvalidArg)
    ));
}
