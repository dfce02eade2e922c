//! What `gpudeck shell` was asked for on the command line, as plain values: the clap
//! definitions (`cli::ShellArgs`) fill it, so the shell's command face never names them.

use std::path::PathBuf;

/// The flags and arguments of `gpudeck shell`, as the user gave them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellOptions {
    /// The local image; `None` with `list` or `attach`.
    pub image: Option<String>,
    /// `none`, `all`, or indices such as `2,3`.
    pub gpus: String,
    /// The host directory mounted at /workspace (default: the current directory).
    pub workdir: Option<PathBuf>,
    /// Keep the container after the shell exits.
    pub keep: bool,
    /// The container's network (default from the config).
    pub network: Option<String>,
    /// A name for the container (default: Docker picks one).
    pub name: Option<String>,
    /// `host`, `root` or `image` (default from the config).
    pub user: Option<String>,
    /// Size of /dev/shm, e.g. `16GiB` (default from the config).
    pub shm: Option<String>,
    /// Start even when the compatibility verdict is "will not run".
    pub force: bool,
    /// List the kept shells instead.
    pub list: bool,
    /// Re-enter a kept shell by name (or id).
    pub attach: Option<String>,
    /// The command to run instead of a shell.
    pub command: Vec<String>,
}
