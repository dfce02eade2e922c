//! Programs on this machine: whether a file may be run, and where `PATH` finds one.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Whether `path` is a file someone may execute.
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where this process's `PATH` finds `program`, as a shell would.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_found_on_path_and_a_missing_one_is_not() {
        assert!(find_program("sh").is_some_and(|p| p.is_absolute() && is_executable(&p)));
        assert_eq!(find_program("gpudeck-no-such-program"), None);
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("plain");
        std::fs::write(&file, "data").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(!is_executable(&file), "a 0644 file is not executable");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(is_executable(&file), "a 0755 file is");
        assert!(!is_executable(dir.path()), "a directory is not a program");
    }
}
