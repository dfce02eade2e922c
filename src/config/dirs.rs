//! Where gpudeck keeps its configuration, data and state, with an env override for each.

use std::ffi::OsString;
use std::path::PathBuf;

use directories::ProjectDirs;

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
    pub fn from_env() -> Self {
        Self::resolve(|name| std::env::var_os(name))
    }

    /// `from_env` with the environment supplied by the caller, so tests need not mutate the
    /// process environment.
    pub fn resolve(env: impl Fn(&str) -> Option<OsString>) -> Self {
        let defaults = ProjectDirs::from("", "", "gpudeck")
            .map(|project| Self {
                config: project.config_dir().to_path_buf(),
                data: project.data_dir().to_path_buf(),
                // Only Linux has a state directory; elsewhere state lives with the data.
                state: project
                    .state_dir()
                    .unwrap_or(project.data_dir())
                    .to_path_buf(),
            })
            .unwrap_or_else(|| Self::fallback(current_uid()));
        let pick = |name: &str, default: PathBuf| {
            env(name)
                .filter(|value| !value.is_empty())
                .map_or(default, PathBuf::from)
        };
        Self {
            config: pick("GPUDECK_CONFIG_DIR", defaults.config),
            data: pick("GPUDECK_DATA_DIR", defaults.data),
            state: pick("GPUDECK_STATE_DIR", defaults.state),
        }
    }

    /// For a user with no home directory (a system account, a bare container): a private
    /// directory per uid, so two users on one machine do not share files.
    pub fn fallback(uid: u32) -> Self {
        let root = std::env::temp_dir().join(format!("gpudeck-{uid}"));
        Self {
            config: root.join("config"),
            data: root.join("data"),
            state: root.join("state"),
        }
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

fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}
