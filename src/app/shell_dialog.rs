//! The dialog that turns an image into a shell: which GPUs (free ones suggested, busy ones
//! flagged), network and whether to keep the container; Enter hands it to the run loop.

use std::path::PathBuf;

/// One GPU as the dialog lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuChoice {
    pub index: u32,
    pub name: String,
    pub chosen: bool,
    /// Processes on it right now and how full its memory is: why it is not suggested.
    pub busy: Option<String>,
}

/// What the user is choosing.
#[derive(Clone, Debug, PartialEq)]
pub struct ShellDialog {
    pub image: String,
    pub gpus: Vec<GpuChoice>,
    pub selected: usize,
    pub network_none: bool,
    pub keep: bool,
    pub workdir: PathBuf,
}

/// A shell the run loop starts once the TUI has stepped aside.
#[derive(Clone, Debug, PartialEq)]
pub enum ShellLaunch {
    /// A new container from an image on these GPUs (indices; empty: none).
    New {
        image: String,
        gpus: Vec<u32>,
        network_none: bool,
        keep: bool,
        workdir: PathBuf,
    },
    /// Back into a kept shell container.
    Reenter { container: String, name: String },
}

/// A GPU counts as busy with a process on it or more than a tenth of its memory used.
pub const BUSY_MEMORY_FRACTION: f64 = 0.1;

/// The label every gpudeck shell container carries.
pub const SHELL_LABEL: &str = "gpudeck.shell";
