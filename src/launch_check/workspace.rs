//! The one check every directory mounted into a container passes (shells, container runs; later
//! notebooks): not a system directory, not near the engine's own socket, no Unix socket below it.

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use walkdir::WalkDir;

use super::error::LaunchError;
use crate::docker::resolve_host;

/// Docker sockets that must never end up inside a container.
const DOCKER_SOCKETS: [&str; 2] = ["/var/run/docker.sock", "/run/docker.sock"];

/// Directories that are never a workspace, nor is anything below them ("/" itself only: every
/// path is below it).
pub const SYSTEM_DIRS: [&str; 9] = [
    "/etc", "/proc", "/sys", "/dev", "/boot", "/usr", "/var", "/run", "/root",
];

/// Deeper than this the walk stops and the workspace counts as not fully checked.
pub const MAX_DEPTH: usize = 64;

/// How much of a workspace the socket walk may look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanLimits {
    pub entries: u64,
    pub depth: usize,
    pub time: Duration,
}

impl Default for ScanLimits {
    /// config/default.toml's `workspace_scan_entries` and `workspace_scan_seconds`.
    fn default() -> Self {
        ScanLimits {
            entries: 200_000,
            depth: MAX_DEPTH,
            time: Duration::from_secs(10),
        }
    }
}

/// What a workspace is checked against: the engine's socket and how far to look.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceGuard {
    /// The engine's Unix socket as written and with its symlinks resolved; empty for a TCP engine.
    pub engine_sockets: Vec<PathBuf>,
    pub limits: ScanLimits,
}

impl WorkspaceGuard {
    /// The guard for the engine `docker_host` (else `DOCKER_HOST`, else the local socket) names.
    pub fn for_engine(docker_host: Option<&str>, limits: ScanLimits) -> WorkspaceGuard {
        let host = resolve_host(docker_host, |k| std::env::var(k).ok()).ok();
        let socket = host.and_then(|h| h.uri.strip_prefix("unix://").map(PathBuf::from));
        let mut engine_sockets = Vec::new();
        if let Some(socket) = socket {
            if let Ok(real) = socket.canonicalize() {
                if real != socket {
                    engine_sockets.push(real);
                }
            }
            engine_sockets.insert(0, socket);
        }
        WorkspaceGuard {
            engine_sockets,
            limits,
        }
    }
}

/// The real directory behind a path (symlinks resolved, so a link to /var/run is seen as that),
/// refused when [`check_workspace`] refuses it.
pub fn resolve_workdir(path: &Path, guard: &WorkspaceGuard) -> Result<PathBuf, LaunchError> {
    let real = path.canonicalize().map_err(|e| LaunchError::BadWorkdir {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    if !real.is_dir() {
        return Err(LaunchError::BadWorkdir {
            path: real,
            why: "it is not a directory".into(),
        });
    }
    check_workspace(&real, guard)?;
    Ok(real)
}

/// Every check a directory passes before it is mounted into a container: `path` is absolute
/// with its symlinks resolved. `--force` skips none of them.
pub fn check_workspace(path: &Path, guard: &WorkspaceGuard) -> Result<(), LaunchError> {
    refuse_dangerous_workdir(path)?;
    refuse_engine_dir(path, guard)?;
    refuse_sockets_below(path, &guard.limits)
}

/// Refuses a workspace that is, contains or lives beside the Docker socket (mounting it would
/// hand the container root on the host), and the host's system directories.
pub fn refuse_dangerous_workdir(path: &Path) -> Result<(), LaunchError> {
    let refuse = |why: String| {
        Err(LaunchError::DangerousWorkdir {
            path: path.to_path_buf(),
            why,
        })
    };
    if !path.is_absolute() {
        return refuse("it is not an absolute path".into());
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return refuse("it contains `..`; pass the directory itself".into());
    }
    if path == Path::new("/") {
        return refuse("it is the whole host filesystem, Docker socket included".into());
    }
    if let Some(socket) = DOCKER_SOCKETS
        .iter()
        .find(|s| Path::new(s).starts_with(path))
    {
        return refuse(format!("it contains the Docker socket {socket}"));
    }
    if path.starts_with("/run") || path.starts_with("/var/run") {
        return refuse("it is under /run, where the Docker and containerd sockets live".into());
    }
    if let Some(dir) = SYSTEM_DIRS.iter().find(|d| path.starts_with(d)) {
        return refuse(format!(
            "{dir} and everything below it belong to the host system"
        ));
    }
    if path.components().any(|c| c.as_os_str() == "docker.sock") {
        return refuse("it is a Docker socket".into());
    }
    Ok(())
}

/// Refuses the engine's socket's own directory, anything below it, and anything holding it.
pub fn refuse_engine_dir(path: &Path, guard: &WorkspaceGuard) -> Result<(), LaunchError> {
    let refuse = |why: String| {
        Err(LaunchError::DangerousWorkdir {
            path: path.to_path_buf(),
            why,
        })
    };
    for socket in &guard.engine_sockets {
        if socket.starts_with(path) {
            return refuse(format!(
                "it contains the Docker Engine's socket\n{}",
                socket.display()
            ));
        }
        // A socket straight under / would make every path "beside" it: only containment counts.
        match socket.parent() {
            Some(dir) if dir != Path::new("/") && path.starts_with(dir) => {
                return refuse(format!(
                    "it is inside {},\nthe directory of the Docker Engine's socket",
                    dir.display()
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Walks `root` (symlinks not followed) and refuses it when a Unix socket is anywhere below it,
/// or when the walk could not look at everything within the limits.
pub fn refuse_sockets_below(root: &Path, limits: &ScanLimits) -> Result<(), LaunchError> {
    let started = Instant::now();
    let mut seen: u64 = 0;
    let stopped = |why: String| {
        Err(LaunchError::WorkspaceUnchecked {
            path: root.to_path_buf(),
            why,
        })
    };
    // Depth + 1 so that a directory at the last allowed depth is listed, then told apart below.
    for entry in WalkDir::new(root)
        .follow_links(false)
        .max_depth(limits.depth + 1)
    {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let at = e.path().unwrap_or(root).display().to_string();
                let why = e
                    .io_error()
                    .map_or_else(|| e.to_string(), |io| io.to_string());
                return stopped(format!("{at} could not be read ({why})"));
            }
        };
        seen += 1;
        if entry.depth() > limits.depth {
            return stopped(format!("it is more than {} levels deep", limits.depth));
        }
        if seen > limits.entries {
            return stopped(format!("it has more than {} entries", limits.entries));
        }
        if started.elapsed() > limits.time {
            return stopped(format!(
                "looking through it took more than {} s ({seen} entries seen)",
                limits.time.as_secs()
            ));
        }
        if is_socket(&entry) {
            return Err(LaunchError::WorkspaceSocket {
                path: root.to_path_buf(),
                socket: entry.into_path(),
            });
        }
    }
    Ok(())
}

fn is_socket(entry: &walkdir::DirEntry) -> bool {
    use std::os::unix::fs::FileTypeExt;
    entry.file_type().is_socket()
}

/// System directories and paths below them: every one is refused as a workspace, forced or
/// not (a shell's container body checks the same list).
#[cfg(test)]
pub(crate) const SYSTEM_PATHS_FOR_TESTS: &[&str] = &[
    "/",
    "/etc",
    "/etc/ssl",
    "/proc",
    "/proc/1",
    "/sys",
    "/sys/fs/cgroup",
    "/dev",
    "/dev/shm",
    "/boot",
    "/usr",
    "/usr/local/src",
    "/var",
    "/var/lib/docker",
    "/run",
    "/run/user/1000",
    "/root",
    "/root/project",
];

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;
    use std::path::Path;

    use super::*;

    /// A real Unix socket at `dir/rel` (parents made); the listener must live as long as the test.
    fn socket_at(dir: &Path, rel: &str) -> UnixListener {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        UnixListener::bind(&path).unwrap()
    }

    fn guard() -> WorkspaceGuard {
        WorkspaceGuard::default()
    }

    #[test]
    fn a_socket_named_anything_at_any_depth_is_refused() {
        for rel in ["engine.sock", "a/b/c/d/e/engine.sock", "data/.cache/x", "s"] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("empty/dir")).unwrap();
            std::fs::write(dir.path().join("train.py"), "print(1)").unwrap();
            let _listener = socket_at(dir.path(), rel);
            let real = dir.path().canonicalize().unwrap();
            match resolve_workdir(dir.path(), &guard()) {
                Err(e @ LaunchError::WorkspaceSocket { .. }) => {
                    let text = e.to_string();
                    assert!(
                        text.contains(&real.join(rel).display().to_string()),
                        "{text}"
                    );
                    assert!(e.fix().contains("--force does not"), "{}", e.fix());
                    // Printed as "gpudeck: {error}\n{fix}": only a long path may pass 80 columns.
                    for line in text.lines().map(|l| format!("gpudeck: {l}")) {
                        assert!(line.len() <= 80 || line.contains('/'), "{line}");
                    }
                    for line in e.fix().lines() {
                        assert!(line.len() <= 80, "{line}");
                    }
                }
                other => panic!("{rel}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_workspace_without_sockets_passes_and_symlinks_out_of_it_are_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        let _listener = socket_at(outside.path(), "sub/docker.sock");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        std::fs::write(dir.path().join("src/pkg/a.py"), "").unwrap();
        // A link shows up in the bind mount as the link itself; the container resolves its target in
        // its own filesystem, where a host path (or ../ out of the mount) leads nowhere on the host.
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linked-dir")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("sub/docker.sock"),
            dir.path().join("linked.sock"),
        )
        .unwrap();
        let real = resolve_workdir(dir.path(), &guard()).unwrap();
        assert_eq!(real, dir.path().canonicalize().unwrap());
        // The outside directory itself, reached directly, is refused.
        assert!(matches!(
            resolve_workdir(outside.path(), &guard()),
            Err(LaunchError::WorkspaceSocket { .. })
        ));
    }

    #[test]
    fn a_walk_that_stops_early_refuses_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..20 {
            std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
        }
        let few = ScanLimits {
            entries: 10,
            ..ScanLimits::default()
        };
        match refuse_sockets_below(dir.path(), &few) {
            Err(e @ LaunchError::WorkspaceUnchecked { .. }) => {
                assert!(e.to_string().contains("more than 10 entries"), "{e}");
                assert!(e.fix().contains("workspace_scan_entries"), "{}", e.fix());
            }
            other => panic!("{other:?}"),
        }
        let enough = ScanLimits {
            entries: 21,
            ..ScanLimits::default()
        };
        refuse_sockets_below(dir.path(), &enough).unwrap();

        // A socket deeper than the walk goes is not taken as absent.
        let deep = tempfile::tempdir().unwrap();
        let _listener = socket_at(deep.path(), "1/2/3/4/5/hidden");
        let shallow = ScanLimits {
            depth: 3,
            ..ScanLimits::default()
        };
        match refuse_sockets_below(deep.path(), &shallow) {
            Err(e @ LaunchError::WorkspaceUnchecked { .. }) => {
                assert!(e.to_string().contains("more than 3 levels deep"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        let timed = ScanLimits {
            time: Duration::ZERO,
            ..ScanLimits::default()
        };
        assert!(matches!(
            refuse_sockets_below(dir.path(), &timed),
            Err(LaunchError::WorkspaceUnchecked { why, .. }) if why.contains("took more than 0 s")
        ));
    }

    #[test]
    fn system_directories_and_their_children_are_refused_even_forced() {
        for path in SYSTEM_PATHS_FOR_TESTS {
            assert!(
                matches!(
                    check_workspace(Path::new(path), &guard()),
                    Err(LaunchError::DangerousWorkdir { .. })
                ),
                "{path}"
            );
        }
        for fine in ["/home/ada/project", "/srv/data", "/variable", "/usrdata"] {
            refuse_dangerous_workdir(Path::new(fine)).unwrap();
        }
    }

    #[test]
    fn the_engines_resolved_socket_and_its_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let _engine = socket_at(&base, "engine/run/real.sock");
        std::fs::create_dir_all(base.join("engine/run/sub")).unwrap();
        std::fs::create_dir_all(base.join("links")).unwrap();
        std::os::unix::fs::symlink(
            base.join("engine/run/real.sock"),
            base.join("links/docker.sock"),
        )
        .unwrap();
        let host = format!("unix://{}", base.join("links/docker.sock").display());
        let guard = WorkspaceGuard::for_engine(Some(&host), ScanLimits::default());
        assert_eq!(
            guard.engine_sockets,
            [
                base.join("links/docker.sock"),
                base.join("engine/run/real.sock")
            ]
        );
        for refused in ["engine", "engine/run", "engine/run/sub", "links"] {
            match refuse_engine_dir(&base.join(refused), &guard) {
                Err(e @ LaunchError::DangerousWorkdir { .. }) => {
                    assert!(e.to_string().contains("Docker Engine's socket"), "{e}");
                }
                other => panic!("{refused}: {other:?}"),
            }
        }
        std::fs::create_dir_all(base.join("project")).unwrap();
        refuse_engine_dir(&base.join("project"), &guard).unwrap();
        // A TCP engine has no socket to keep out.
        let tcp = WorkspaceGuard::for_engine(Some("tcp://127.0.0.1:2375"), ScanLimits::default());
        assert!(tcp.engine_sockets.is_empty());
    }
}
