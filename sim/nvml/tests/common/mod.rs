//! Test support: build the simulator library once and load it through nvml-wrapper.
//!
//! NVML state is per process, so each test file (one process) uses one `GPUDECK_SIM` spec.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use nvml_wrapper::Nvml;

/// The target directory this test binary was built into (`<target>/debug/deps/<test>`).
fn target_dir() -> PathBuf {
    let from_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()));
    from_exe
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// Build `libgpudeck_nvml_sim.so` (debug) once per test process and return its path.
pub fn library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let target = target_dir();
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "gpudeck-nvml-sim", "--target-dir"])
            .arg(&target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the simulator library failed");
        let lib = target.join("debug").join("libgpudeck_nvml_sim.so");
        assert!(lib.exists(), "{} was not built", lib.display());
        lib
    })
}

/// Initialise NVML from the simulator with `spec` as `GPUDECK_SIM`.
pub fn init(spec: &str) -> Result<Nvml, nvml_wrapper::error::NvmlError> {
    let lib = library();
    // Only this test file's single spec is ever set, before the first init.
    std::env::set_var("GPUDECK_SIM", spec);
    Nvml::builder().lib_path(lib.as_os_str()).init()
}

/// One NVML instance per test process, shared by its tests.
pub fn shared(spec: &'static str) -> &'static Nvml {
    static NVML: OnceLock<Nvml> = OnceLock::new();
    NVML.get_or_init(|| init(spec).expect("simulator initialises"))
}
