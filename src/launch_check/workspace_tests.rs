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
    for path in [
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
    ] {
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
