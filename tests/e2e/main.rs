//! End to end: gpudeck in tmux, driven with keys like a user would, on simulated GPUs
//! and the real Docker Engine.
//!
//! One test binary of several (each `tests/*.rs` file would be a binary linking the whole
//! program); each module here was once a binary of its own. Helpers are shared in `tests/support`.

// Helpers outside `#[test]` functions unwrap too: clippy.toml's allow-unwrap-in-tests covers
// only the test functions themselves.
#![allow(clippy::unwrap_used)]

#[path = "../support/mod.rs"]
mod support;

mod e2e_docker;
mod e2e_tmux;
mod metrics_tui;
mod runs_tui;
mod services_tui;
