//! Cancelling a pull mid-download against the real Engine: the job says Interrupted and no image is left;
//! a pull cut by the Engine going away (a socket proxy cut) says so, and works again once it is back.

use crate::support;

use std::time::{Duration, Instant};

use bollard::Docker;
use gpudeck::pull::{start_pull, ImageRef, PullError, PullEvent, PullHandle};
use support::engine_proxy::Proxy;
use support::registry::{image_id, remove_image, Registry, TestImage};

/// An uncancelled pull of the test image takes about a second here; a pull the Engine kept
/// going after the cancel would show up well within this.
const STAYS_ABSENT_FOR: Duration = Duration::from_secs(4);

fn pull(reference: &str) -> PullHandle {
    start_pull(
        Docker::connect_with_local_defaults().unwrap(),
        ImageRef::parse(reference).unwrap(),
        None,
    )
}

/// Waits for the first progress event with downloaded bytes; false if the pull ended first.
async fn wait_for_bytes(handle: &mut PullHandle) -> bool {
    let first_bytes = async {
        while let Some(event) = handle.events.recv().await {
            match event {
                PullEvent::Progress(p) if p.bytes_done > 0 => return true,
                PullEvent::Progress(_) => {}
                _ => return false,
            }
        }
        false
    };
    tokio::time::timeout(Duration::from_secs(120), first_bytes)
        .await
        .expect("bytes move within the deadline")
}

/// The image must not appear: a pull the Engine kept going would finish within the window.
async fn assert_stays_absent(reference: &str) {
    let watch_until = Instant::now() + STAYS_ABSENT_FOR;
    while Instant::now() < watch_until {
        if image_id(reference).is_some() {
            remove_image(reference);
            panic!("the Engine finished the pull of {reference} after it was cancelled");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn cancelling_mid_download_interrupts_and_leaves_no_image() {
    if !support::docker::engine_or_skip("cancelling_mid_download_interrupts_and_leaves_no_image") {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build("pull-cancel", &["CUDA_VERSION=12.4.1"], &[30, 30, 30]);
    let reference = registry.push_and_forget(&image, "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-devel");

    let mut handle = pull(&reference);
    assert!(
        wait_for_bytes(&mut handle).await,
        "the pull was still running when bytes came"
    );
    handle.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(30), handle.finish())
        .await
        .expect("the job ends soon after the cancel");
    assert_eq!(outcome, Err(PullError::Interrupted));
    assert_eq!(PullError::Interrupted.title(), "Pull cancelled");
    assert_stays_absent(&reference).await;

    // Dropping the handle is a cancel too: nobody is left to see the result.
    let mut dropped = pull(&reference);
    assert!(wait_for_bytes(&mut dropped).await);
    drop(dropped);
    assert_stays_absent(&reference).await;
}

#[tokio::test]
async fn a_pull_cut_by_the_engine_going_away_says_so_and_pulls_again_once_it_is_back() {
    if !support::docker::engine_or_skip(
        "a_pull_cut_by_the_engine_going_away_says_so_and_pulls_again_once_it_is_back",
    ) {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build("pull-cut", &["CUDA_VERSION=12.4.1"], &[30, 30, 30]);
    let reference = registry.push_and_forget(&image, "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-cut");
    let sockets = tempfile::tempdir().expect("tempdir");
    let sock = sockets.path().join("docker.sock");
    let through = |sock: &std::path::Path| {
        start_pull(
            Docker::connect_with_unix(
                &sock.display().to_string(),
                120,
                bollard::API_DEFAULT_VERSION,
            )
            .unwrap(),
            ImageRef::parse(&reference).unwrap(),
            None,
        )
    };

    let proxy = Proxy::start(&sock);
    let mut handle = through(&sock);
    assert!(
        wait_for_bytes(&mut handle).await,
        "the pull was still running when bytes came"
    );
    proxy.cut();
    let outcome = tokio::time::timeout(Duration::from_secs(30), handle.finish())
        .await
        .expect("the job ends soon after the engine goes away");
    let Err(error) = outcome else {
        panic!("a cut pull succeeded: {outcome:?}");
    };
    assert_eq!(error.kind(), "engine_went_away", "{error:?}");
    assert_eq!(error.title(), "Docker Engine went away");
    assert!(!error.fix().contains("usermod"), "{}", error.fix());
    assert!(error.fix().contains("Pull again"), "{}", error.fix());

    // Back again, the same pull works.
    let proxy = Proxy::start(&sock);
    let again = tokio::time::timeout(Duration::from_secs(120), through(&sock).finish())
        .await
        .expect("the second pull ends");
    assert!(again.is_ok(), "{again:?}");
    assert!(image_id(&reference).is_some());
    remove_image(&reference);
    proxy.cut();
}
