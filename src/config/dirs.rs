//! Where gpudeck keeps its configuration, data and state, with an env override for each, and
//! the private fallback under the temp dir for a user with no home directory.

use std::ffi::OsString;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use directories::ProjectDirs;

/// The variables that place gpudeck's directories anywhere but the default.
pub const DIR_VARIABLES: [&str; 3] = [
    "GPUDECK_CONFIG_DIR",
    "GPUDECK_DATA_DIR",
    "GPUDECK_STATE_DIR",
];

/// There is no home directory and the fallback under the temp dir is not safe to use.
#[derive(Debug, thiserror::Error)]
#[error(
    "there is no home directory, and gpudeck will not use the fallback\n  {}\n\
     because {why}.\n\
     Set GPUDECK_CONFIG_DIR, GPUDECK_DATA_DIR and GPUDECK_STATE_DIR to\n\
     directories of your own (or set HOME), then start gpudeck again.",
    path.display()
)]
pub struct UnsafeFallback {
    pub path: PathBuf,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// `config.toml` and `themes/`.
    pub config: PathBuf,
    /// Data gpudeck keeps (run records).
    pub data: PathBuf,
    /// State that may be lost (logs).
    pub state: PathBuf,
}

impl Dirs {
    /// The platform directories (`~/.config/gpudeck`, `~/.local/share/gpudeck`,
    /// `~/.local/state/gpudeck` on Linux), each replaced by `GPUDECK_CONFIG_DIR`,
    /// `GPUDECK_DATA_DIR` or `GPUDECK_STATE_DIR` when that is set.
    pub fn from_env() -> Result<Self, UnsafeFallback> {
        Self::resolve(|name| std::env::var_os(name))
    }

    /// `from_env` with the environment supplied by the caller, so tests need not mutate the
    /// process environment.
    /// Without a home directory, the fallback under the temp dir is used for the directories no
    /// variable names, and only when it is safe (`fallback_in`).
    pub fn resolve(env: impl Fn(&str) -> Option<OsString>) -> Result<Self, UnsafeFallback> {
        let set = |name: &str| {
            env(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        let [config, data, state] = DIR_VARIABLES.map(set);
        if let (Some(config), Some(data), Some(state)) = (&config, &data, &state) {
            return Ok(Self {
                config: config.clone(),
                data: data.clone(),
                state: state.clone(),
            });
        }
        let defaults = match ProjectDirs::from("", "", "gpudeck") {
            Some(project) => Self {
                config: project.config_dir().to_path_buf(),
                data: project.data_dir().to_path_buf(),
                // Only Linux has a state directory; elsewhere state lives with the data.
                state: project
                    .state_dir()
                    .unwrap_or(project.data_dir())
                    .to_path_buf(),
            },
            None => Self::fallback(crate::private_files::current_uid())?,
        };
        Ok(Self {
            config: config.unwrap_or(defaults.config),
            data: data.unwrap_or(defaults.data),
            state: state.unwrap_or(defaults.state),
        })
    }

    /// For a user with no home directory (a system account, a bare container): a private
    /// directory per uid under the temp dir (`$TMPDIR`, else `/tmp`), see `fallback_in`.
    pub fn fallback(uid: u32) -> Result<Self, UnsafeFallback> {
        Self::fallback_in(&std::env::temp_dir(), uid)
    }

    /// `<temp>/gpudeck-<uid>`, created 0700 when missing. One that already exists is used only
    /// when it is a real directory (not a symbolic link) owned by `uid` and closed to everyone
    /// else: another local user could otherwise pre-create it and plant a run whose spec runs
    /// their command as this user on `gpudeck rerun`.
    pub fn fallback_in(temp: &Path, uid: u32) -> Result<Self, UnsafeFallback> {
        let root = temp.join(format!("gpudeck-{uid}"));
        let refuse = |why: String| UnsafeFallback {
            path: root.clone(),
            why,
        };
        match std::fs::DirBuilder::new().mode(0o700).create(&root) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(refuse(format!("it could not be created ({e})"))),
        }
        let meta = std::fs::symlink_metadata(&root)
            .map_err(|e| refuse(format!("it could not be read ({e})")))?;
        if meta.file_type().is_symlink() {
            return Err(refuse("it is a symbolic link".into()));
        }
        if !meta.is_dir() {
            return Err(refuse("it is not a directory".into()));
        }
        if meta.uid() != uid {
            return Err(refuse(format!(
                "it belongs to uid {}, not to you (uid {uid})",
                meta.uid()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(refuse(format!(
                "others may read or write it (mode {:o})",
                meta.mode() & 0o777
            )));
        }
        Ok(Self {
            config: root.join("config"),
            data: root.join("data"),
            state: root.join("state"),
        })
    }

    /// The config file read when `--config` is not given.
    pub fn config_file(&self) -> PathBuf {
        self.config.join("config.toml")
    }

    /// Where user themes live, one `<name>.toml` each.
    pub fn themes_dir(&self) -> PathBuf {
        self.config.join("themes")
    }
}

#[cfg(test)]
#[path = "dirs_tests.rs"]
mod tests;
