//! The one check every directory mounted into a container passes (shells, container runs; later
//! notebooks): not a system directory, not near the engine's own socket, no Unix socket below it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use walkdir::WalkDir;

use super::error::ShellError;
use super::spec::refuse_dangerous_workdir;
use crate::docker::resolve_host;

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

/// Every check a directory passes before it is mounted into a container: `path` is absolute
/// with its symlinks resolved. `--force` skips none of them.
pub fn check_workspace(path: &Path, guard: &WorkspaceGuard) -> Result<(), ShellError> {
    refuse_dangerous_workdir(path)?;
    refuse_engine_dir(path, guard)?;
    refuse_sockets_below(path, &guard.limits)
}

/// Refuses the engine's socket's own directory, anything below it, and anything holding it.
pub fn refuse_engine_dir(path: &Path, guard: &WorkspaceGuard) -> Result<(), ShellError> {
    let refuse = |why: String| {
        Err(ShellError::DangerousWorkdir {
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
pub fn refuse_sockets_below(root: &Path, limits: &ScanLimits) -> Result<(), ShellError> {
    let started = Instant::now();
    let mut seen: u64 = 0;
    let stopped = |why: String| {
        Err(ShellError::WorkspaceUnchecked {
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
            return Err(ShellError::WorkspaceSocket {
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

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
