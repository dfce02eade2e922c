//! gpudeck: see every GPU on a workstation, diagnose it and use it, without leaving the terminal.

pub mod app;
pub mod cli;
pub mod compat;
pub mod config;
pub mod docker;
pub mod doctor;
#[cfg(test)]
pub(crate) mod fuzz;
pub mod gpu;
pub mod host;
pub mod logging;
pub mod metrics;
pub mod pull;
pub mod registry;
pub mod runs;
pub mod shell;
pub mod ui;
pub mod units;
