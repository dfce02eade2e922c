//! Files and directories only their owner can read: every file gpudeck writes is created 0600
//! (directories 0700) without following a symbolic link at its path, so logs, run records and
//! exports that hold tokens or paths stay private even in a shared or planted directory.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of every file gpudeck creates.
pub const FILE_MODE: u32 = 0o600;
/// The mode of every directory gpudeck creates.
pub const DIR_MODE: u32 = 0o700;

/// Creates `dir` and its missing parents, each new one 0700. Directories that already exist
/// are left as they are (the user may have made them shared on purpose).
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Creates `dir` inside a parent gpudeck owns (the run store, saved logs): new ones 0700, and
/// one left readable by others by an older gpudeck is made private again. A symbolic link there
/// is used only when it is the user's own (a store moved to a bigger disk) and leads to a
/// directory, whose mode is then left alone; anything else in its place is refused.
pub fn create_own_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent() {
        create_dir_all(parent)?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let own_link_to_dir =
        || meta.uid() == current_uid() && std::fs::metadata(dir).is_ok_and(|m| m.is_dir());
    if meta.file_type().is_symlink() {
        return if own_link_to_dir() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "{} is a symbolic link that is not yours or leads to no directory; remove it",
                dir.display()
            )))
        };
    }
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory; move it away",
            dir.display()
        )));
    }
    if meta.mode() & 0o077 != 0 && meta.uid() == current_uid() {
        std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

/// Options that create a private file and refuse a symbolic link in the path's last component;
/// add what to do (`append`, `truncate`, `create_new`) and open with [`open`].
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .write(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    options
}

/// Opens `path` with `options` (from [`options`]): it must be a regular file, and one that
/// already existed readable by others (an older gpudeck's log) is made 0600.
pub fn open(options: &OpenOptions, path: &Path) -> io::Result<File> {
    let file = options.open(path).map_err(|e| explain(path, e))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file; move it away",
            path.display()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    }
    Ok(file)
}

/// A log to append to: created 0600 if missing.
pub fn open_append(path: &Path) -> io::Result<File> {
    open(options().append(true).create(true), path)
}

/// A new file that must not exist yet (nor a symbolic link in its place).
pub fn create_new(path: &Path) -> io::Result<File> {
    open(options().create_new(true), path)
}

/// Replaces `path` with `bytes` so that a reader sees the old file or the new one, never half:
/// a private temporary file in the same directory, synced, renamed over `path`, then the
/// directory synced so the rename survives a crash. A file at `path` becomes 0600 whatever its
/// mode was; a symbolic link at `path` is replaced, and the file it pointed to is not touched.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".gpudeck-")
        .suffix(".tmp")
        .permissions(Permissions::from_mode(FILE_MODE))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// ELOOP from O_NOFOLLOW reads "too many levels of symbolic links"; say what it means.
fn explain(path: &Path, e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        return io::Error::other(format!(
            "{} is a symbolic link, which gpudeck does not follow when it writes a file; \
             remove the link (or write somewhere else)",
            path.display()
        ));
    }
    e
}

/// The user gpudeck runs as (its effective uid): whose files and directories count as its own.
#[allow(unsafe_code)]
pub(crate) fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
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
    fn new_files_and_directories_are_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/c");
        create_dir_all(&dir).unwrap();
        for d in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&root.path().join(d)), 0o700, "{d}");
        }
        create_new(&dir.join("new")).unwrap();
        open_append(&dir.join("log")).unwrap();
        replace(&dir.join("replaced"), b"x").unwrap();
        for f in ["new", "log", "replaced"] {
            assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
        }
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn an_existing_open_file_or_directory_is_made_private() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("old.log");
        fs::write(&log, "before\n").unwrap();
        fs::set_permissions(&log, Permissions::from_mode(0o644)).unwrap();
        let mut file = open_append(&log).unwrap();
        file.write_all(b"after\n").unwrap();
        assert_eq!(mode(&log), 0o600);
        assert_eq!(fs::read_to_string(&log).unwrap(), "before\nafter\n");

        let export = root.path().join("export.json");
        fs::write(&export, "old").unwrap();
        fs::set_permissions(&export, Permissions::from_mode(0o644)).unwrap();
        replace(&export, b"new").unwrap();
        assert_eq!(mode(&export), 0o600);
        assert_eq!(fs::read_to_string(&export).unwrap(), "new");

        let dir = root.path().join("logs");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        create_own_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_symbolic_link_is_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("victim");
        fs::write(&target, "precious").unwrap();
        fs::set_permissions(&target, Permissions::from_mode(0o644)).unwrap();
        let link = root.path().join("link");
        symlink(&target, &link).unwrap();

        let err = open_append(&link).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        assert!(create_new(&link).is_err());
        replace(&link, b"mine").unwrap();
        assert!(!fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(fs::read_to_string(&link).unwrap(), "mine");
        assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
        assert_eq!(mode(&target), 0o644, "the link's target keeps its mode");

        let file_in_place = root.path().join("logs");
        fs::write(&file_in_place, "").unwrap();
        let err = create_own_dir(&file_in_place).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn the_users_own_link_to_a_directory_is_used_as_it_is_and_anothers_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let bigger_disk = root.path().join("scratch");
        fs::create_dir(&bigger_disk).unwrap();
        fs::set_permissions(&bigger_disk, Permissions::from_mode(0o750)).unwrap();
        let link = root.path().join("runs");
        symlink(&bigger_disk, &link).unwrap();
        create_own_dir(&link).unwrap();
        assert_eq!(
            mode(&bigger_disk),
            0o750,
            "a directory the user placed keeps its mode"
        );

        let dangling = root.path().join("dangling");
        symlink(root.path().join("nowhere"), &dangling).unwrap();
        let err = create_own_dir(&dangling).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");

        if current_uid() == 0 {
            let planted = root.path().join("planted");
            symlink(&bigger_disk, &planted).unwrap();
            std::os::unix::fs::lchown(&planted, Some(4242), None).unwrap();
            let err = create_own_dir(&planted).unwrap_err().to_string();
            assert!(err.contains("not yours"), "{err}");
        }
    }

    #[allow(unsafe_code)]
    #[test]
    fn only_regular_files_are_written() {
        let root = tempfile::tempdir().unwrap();
        let fifo = root.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // Read and write, so that Linux opens the FIFO at once instead of waiting for a reader.
        let mut opts = options();
        opts.read(true).append(true);
        let err = open(&opts, &fifo).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }
}
