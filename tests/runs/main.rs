//! Training runs end to end: local processes, containers on the real engine, and Slurm (a real
//! one-node cluster where one can be started).
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

mod runs_cli;
mod runs_container;
mod runs_container_lifecycle;
mod runs_container_service;
mod runs_full_disk;
mod runs_lifecycle;
mod runs_record;
mod runs_slurm;
mod runs_slurm_cluster;
mod runs_torchrun;
mod runs_xids;
mod services_container_notebook;
mod services_neighbour;
mod services_notebook;
mod services_programs;
mod services_triton;
