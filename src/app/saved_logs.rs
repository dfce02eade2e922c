//! Logs saved with `w`: a new private file under `<data dir>/logs/`, never written through a
//! symbolic link or over a file already there.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::private_files;

/// How many names (`NAME-STAMP.log`, then `-2`, `-3`, ...) are tried before giving up.
const NAME_TRIES: usize = 16;

/// Saves `text` as `<data_dir>/logs/<name>-<stamp>.log` (0600, in a 0700 directory). A name
/// already taken, by an earlier save in the same second or by a link someone planted, is left
/// alone and the next free one (`-2`, `-3`, ...) is used.
pub(super) fn save_logs(
    data_dir: &Path,
    name: &str,
    text: &str,
    stamp: i64,
) -> io::Result<PathBuf> {
    let dir = data_dir.join("logs");
    private_files::create_own_dir(&dir)?;
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    for n in 1..=NAME_TRIES {
        let file = if n == 1 {
            format!("{safe}-{stamp}.log")
        } else {
            format!("{safe}-{stamp}-{n}.log")
        };
        let path = dir.join(file);
        match private_files::create_new(&path) {
            Ok(mut f) => {
                f.write_all(text.as_bytes())?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{} already holds {NAME_TRIES} files named {safe}-{stamp}; move some away",
        dir.display()
    )))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt};

    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn saved_logs_are_private_in_a_private_directory() {
        let data = tempfile::tempdir().unwrap();
        let path = save_logs(data.path(), "web/1", "HF_TOKEN=hf_abc\n", 100).unwrap();
        assert_eq!(path, data.path().join("logs/web_1-100.log"));
        assert_eq!(fs::read_to_string(&path).unwrap(), "HF_TOKEN=hf_abc\n");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&data.path().join("logs")), 0o700);
    }

    #[test]
    fn a_logs_directory_left_open_by_an_older_gpudeck_is_made_private() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("logs");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        save_logs(data.path(), "web", "x", 100).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_link_planted_at_the_name_is_not_followed_and_a_free_name_is_used() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("logs");
        fs::create_dir(&dir).unwrap();
        let victim = data.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        symlink(&victim, dir.join("web-100.log")).unwrap();

        let path = save_logs(data.path(), "web", "secret output", 100).unwrap();
        assert_eq!(path, dir.join("web-100-2.log"));
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(fs::symlink_metadata(dir.join("web-100.log"))
            .unwrap()
            .is_symlink());
        assert_eq!(fs::read_to_string(&path).unwrap(), "secret output");
    }

    #[test]
    fn a_second_save_in_the_same_second_keeps_the_first() {
        let data = tempfile::tempdir().unwrap();
        let first = save_logs(data.path(), "web", "one", 100).unwrap();
        let second = save_logs(data.path(), "web", "two", 100).unwrap();
        assert_ne!(first, second);
        assert_eq!(fs::read_to_string(&first).unwrap(), "one");
        assert_eq!(fs::read_to_string(&second).unwrap(), "two");
    }
}
