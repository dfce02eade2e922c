//! Give the library the soname of the real NVML, so it can stand in for libnvidia-ml.so.1.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvidia-ml.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
