//! gpudeck: see every GPU on a workstation, diagnose it and use it, without leaving the terminal.

#[macro_use]
pub mod output;

pub mod app;
pub mod claims;
pub mod cli;
pub mod cli_docs;
pub mod compat;
pub mod config;
pub mod docker;
pub mod doctor;
#[cfg(test)]
pub(crate) mod fuzz;
pub mod gpu;
pub mod health;
pub mod host;
pub mod image;
pub mod launch_check;
#[cfg(test)]
mod layers_tests;
pub mod logging;
pub mod metrics;
pub mod private_files;
pub mod pull;
pub mod read_only;
pub mod registry;
pub mod runs;
pub mod sanitise;
pub mod secrets;
pub mod services;
pub mod shell;
pub mod text_table;
pub mod ui;
pub mod units;
