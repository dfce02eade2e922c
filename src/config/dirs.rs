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
mod tests {
    use std::ffi::OsString;
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};

    use super::*;

    fn me() -> u32 {
        crate::private_files::current_uid()
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn refusal(temp: &Path) -> String {
        let err = Dirs::fallback_in(temp, me()).expect_err("refused");
        let text = err.to_string();
        for name in DIR_VARIABLES {
            assert!(text.contains(name), "{text}");
        }
        for line in text.lines().filter(|l| !l.contains(temp.to_str().unwrap())) {
            assert!(line.len() + "gpudeck: ".len() <= 80, "{line:?} is too wide");
        }
        text
    }

    #[test]
    fn a_missing_fallback_is_created_private_and_used() {
        let temp = tempfile::tempdir().unwrap();
        let dirs = Dirs::fallback_in(temp.path(), me()).unwrap();
        let root = temp.path().join(format!("gpudeck-{}", me()));
        assert_eq!(mode(&root), 0o700);
        assert_eq!(dirs.config, root.join("config"));
        assert_eq!(dirs.data, root.join("data"));
        assert_eq!(dirs.state, root.join("state"));
        // And again, now that it exists and is ours.
        assert_eq!(Dirs::fallback_in(temp.path(), me()).unwrap(), dirs);
    }

    #[test]
    fn a_fallback_open_to_others_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join(format!("gpudeck-{}", me()));
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let text = refusal(temp.path());
        assert!(
            text.contains("others may read or write it (mode 777)"),
            "{text}"
        );
        assert_eq!(mode(&root), 0o777, "left as it was");
    }

    #[test]
    fn a_fallback_that_is_a_symbolic_link_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let elsewhere = temp.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o700)).unwrap();
        symlink(&elsewhere, temp.path().join(format!("gpudeck-{}", me()))).unwrap();
        let text = refusal(temp.path());
        assert!(text.contains("it is a symbolic link"), "{text}");
    }

    #[test]
    fn a_fallback_of_another_owner_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join(format!("gpudeck-{}", me()));
        fs::create_dir(&root).unwrap();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
        // Another owner: as root, hand it to another uid; as anyone else, ask for another uid's.
        let (uid, other) = if me() == 0 {
            std::os::unix::fs::chown(&root, Some(4242), None).unwrap();
            (0, 4242)
        } else {
            let other = me() + 1;
            fs::rename(&root, temp.path().join(format!("gpudeck-{other}"))).unwrap();
            (other, me())
        };
        let err = Dirs::fallback_in(temp.path(), uid).expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "it belongs to uid {other}, not to you (uid {uid})"
            )),
            "{text}"
        );
    }

    #[test]
    fn no_fallback_is_made_when_every_variable_names_a_directory() {
        let env = |name: &str| -> Option<OsString> {
            DIR_VARIABLES
                .iter()
                .position(|v| *v == name)
                .map(|i| format!("/somewhere/{i}").into())
        };
        let dirs = Dirs::resolve(env).unwrap();
        assert_eq!(dirs.config, Path::new("/somewhere/0"));
        assert_eq!(dirs.data, Path::new("/somewhere/1"));
        assert_eq!(dirs.state, Path::new("/somewhere/2"));
    }
}
