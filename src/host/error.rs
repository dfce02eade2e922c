//! Errors from the process-table seam, worded for the person at the keyboard.

use std::io;

use super::signal::KillSignal;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("process {pid} has already exited")]
    Exited { pid: u32 },

    #[error(
        "not allowed to signal process {pid} (owned by {owner}): run gpudeck as that user or with sudo"
    )]
    NotPermitted { pid: u32, owner: String },

    #[error(
        "process {pid} has exited and its PID now belongs to another process; nothing was sent"
    )]
    Replaced { pid: u32 },

    #[error(
        "the start time of process {pid} cannot be read, so gpudeck cannot make sure the PID \
         still names the process shown; nothing was sent"
    )]
    Unidentified { pid: u32 },

    /// Zero and values past `i32::MAX` would make kill(2) signal a whole process group.
    #[error("{pid} is not a valid process id")]
    InvalidPid { pid: u32 },

    #[error("could not send {signal} to process {pid}: {source}")]
    Signal {
        pid: u32,
        signal: KillSignal,
        #[source]
        source: io::Error,
    },
}
