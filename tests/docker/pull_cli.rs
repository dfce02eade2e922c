//! The `gpudeck pull` twin: exit codes, an unreachable Engine, and a JSON pull from a real registry.

use crate::support;

use std::time::Duration;

use bollard::{Docker, API_DEFAULT_VERSION};
use gpudeck::pull::cli::{EXIT_BAD_REFERENCE, EXIT_OK, EXIT_PULL_FAILED};
use gpudeck::pull::{pull_cli, start_pull, ImageRef, PullError};
use support::registry::{image_id, remove_image, Registry, TestImage};

/// A client for a socket nobody serves. bollard checks that the socket file exists when
/// connecting, so it is there while connecting and gone before any request.
fn unreachable_engine() -> (Docker, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nonexistent.sock");
    std::fs::write(&socket, "").unwrap();
    let docker = Docker::connect_with_unix(
        &format!("unix://{}", socket.display()),
        5,
        API_DEFAULT_VERSION,
    )
    .expect("connecting sends nothing yet");
    std::fs::remove_file(&socket).unwrap();
    (docker, dir)
}

#[tokio::test]
async fn a_bad_reference_exits_2_before_anything_is_sent() {
    let (docker, _dir) = unreachable_engine();
    for bad in ["UPPER/case", "a:b:c", "x@sha256:short", ""] {
        assert_eq!(
            pull_cli(docker.clone(), bad, None, false).await,
            EXIT_BAD_REFERENCE,
            "{bad}"
        );
        assert_eq!(
            pull_cli(docker.clone(), bad, None, true).await,
            EXIT_BAD_REFERENCE,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_engine_is_daemon_unreachable() {
    let (docker, _dir) = unreachable_engine();
    let image = ImageRef::parse("nvcr.io/nvidia/pytorch:24.05-py3").unwrap();
    let error = tokio::time::timeout(
        Duration::from_secs(30),
        start_pull(docker.clone(), image, None).finish(),
    )
    .await
    .expect("the failure comes quickly")
    .unwrap_err();
    assert!(
        matches!(error, PullError::DaemonUnreachable { .. }),
        "{error:?}"
    );
    assert!(
        error.fix().contains("systemctl start docker"),
        "{}",
        error.fix()
    );

    let empty_config = tempfile::tempdir().unwrap();
    let code = pull_cli(docker, "ubuntu:24.04", Some(empty_config.path()), true).await;
    assert_eq!(code, EXIT_PULL_FAILED);
}

#[tokio::test]
async fn the_cli_pulls_from_a_registry_and_exits_0() {
    if !support::docker::engine_or_skip("the_cli_pulls_from_a_registry_and_exits_0") {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build("pull-cli", &["CUDA_VERSION=12.6.3"], &[1]);
    let reference = registry.push_and_forget(&image, "nvidia/cuda:12.6.3-base-ubuntu24.04");
    let docker = Docker::connect_with_local_defaults().unwrap();
    let empty_config = tempfile::tempdir().unwrap();
    assert_eq!(
        pull_cli(docker.clone(), &reference, Some(empty_config.path()), false).await,
        EXIT_OK
    );
    assert!(image_id(&reference).is_some());
    remove_image(&reference);

    let missing = format!("{}/nvidia/cuda:0.0-nothing", registry.host());
    assert_eq!(
        pull_cli(docker, &missing, Some(empty_config.path()), true).await,
        EXIT_PULL_FAILED
    );
}
