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
