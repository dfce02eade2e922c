//! The Docker Engine, image registries and pulls, and shells: the real engine and registries
//! where the machine has them, scripted servers otherwise.
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

mod control_chars;
mod docker_containers;
mod docker_engine;
mod docker_images;
mod docker_streams;
mod docker_tls;
mod pull_auth;
mod pull_cancel;
mod pull_cli;
mod pull_registry;
mod pull_remote_config;
mod pull_remote_token;
mod shell_cli;
mod shell_engine;
