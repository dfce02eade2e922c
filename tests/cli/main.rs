//! The command line: gpudeck's subcommands, config loading, the host's /proc, NVML through the
//! simulator library, the example scripts and the README.
//!
//! One test binary of several (each `tests/*.rs` file would be a binary linking the whole
//! program); each module here was once a binary of its own. Helpers are shared in `tests/support`.

// Helpers outside `#[test]` functions unwrap too: clippy.toml's allow-unwrap-in-tests covers
// only the test functions themselves.
#![allow(clippy::unwrap_used)]
// libc: the tests' own uid, gid and session, pipes, and signals to processes they started.
#![allow(unsafe_code)]

#[path = "../support/mod.rs"]
mod support;

mod cli;
mod compat_cli;
mod config_env;
mod config_load;
mod control_chars;
mod doctor_cli;
mod doctor_counters;
mod doctor_xid;
mod examples;
mod host_procfs;
mod kernel_log_bounds;
mod nvml_real_path;
mod readme;
mod suggested_commands;
