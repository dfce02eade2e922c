//! The dashboard in process: the app's state, actions and commands on fake sources, and what
//! each tab draws (panels and insta snapshots).
//!
//! One test binary of several (each `tests/*.rs` file would be a binary linking the whole
//! program); each module here was once a binary of its own. Helpers are shared in `tests/support`.

// Helpers outside `#[test]` functions unwrap too: clippy.toml's allow-unwrap-in-tests covers
// only the test functions themselves.
#![allow(clippy::unwrap_used)]

#[path = "../support/mod.rs"]
mod support;

mod app_whole;
mod compat_views;
mod docker_views;
mod doctor_views;
mod messages_views;
mod panes_fit;
mod processes_tab;
mod runs_slurm_views;
mod runs_views;
mod runs_xid_views;
mod services_views;
mod shell_views;
mod tables_truth;
mod tables_views;
mod tui_state;
mod ui_panels;
