//! Pull jobs against the real Docker Engine and a real local registry: progress, digest, and the failures told apart.

use crate::support;

use std::time::Duration;

use bollard::Docker;
use gpudeck::pull::{start_pull, ImageRef, PullError, PullEvent, PullHandle};
use support::registry::{image_id, remove_image, Registry, TestImage};

const PULL_DEADLINE: Duration = Duration::from_secs(120);

fn engine() -> Docker {
    Docker::connect_with_local_defaults().expect("the Docker socket is there")
}

/// Every event of a pull, up to and including the final one.
async fn all_events(mut handle: PullHandle) -> Vec<PullEvent> {
    let mut events = Vec::new();
    let collect = async {
        while let Some(event) = handle.events.recv().await {
            let last = !matches!(event, PullEvent::Progress(_));
            events.push(event);
            if last {
                break;
            }
        }
    };
    tokio::time::timeout(PULL_DEADLINE, collect)
        .await
        .expect("the pull ends within the deadline");
    events
}

async fn failure(reference: &str) -> PullError {
    let image = ImageRef::parse(reference).expect("valid reference");
    match start_pull(engine(), image, None).finish().await {
        Ok(digest) => panic!("pulling {reference} should fail, got {digest:?}"),
        Err(error) => error,
    }
}

/// Checks the events of a successful pull: some layer moved, the last snapshot is complete and
/// the final event is Done with a digest, which it returns.
fn assert_progress_then_done(events: &[PullEvent]) -> String {
    let progress: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            PullEvent::Progress(p) => Some(p),
            _ => None,
        })
        .collect();
    // Progress is sent at most every 100 ms, and a 2 MB pull over loopback can finish within
    // one interval, so whether a Downloading or Extracting snapshot is seen depends on timing;
    // the reducer's handling of those messages is unit-tested in src/pull/progress_tests.rs.
    // What must hold: the layers are listed, each with its size, and all end finished.
    let last = progress.last().expect("at least one progress event");
    assert!(
        last.bytes_total > 2_000_000,
        "the random 2 MB layer is counted: {last:?}"
    );
    assert_eq!(last.bytes_done, last.bytes_total);
    assert!(!last.layers.is_empty(), "per-layer progress: {last:#?}");
    assert!(
        last.layers.iter().all(|l| l.status.is_finished()),
        "{last:#?}"
    );
    let Some(PullEvent::Done {
        digest: Some(digest),
        ..
    }) = events.last()
    else {
        panic!("the pull ends with Done and a digest: {:?}", events.last());
    };
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );

    digest.clone()
}

#[tokio::test]
async fn a_pull_reports_layer_progress_and_the_digest_and_leaves_the_image() {
    if !support::docker::engine_or_skip(
        "a_pull_reports_layer_progress_and_the_digest_and_leaves_the_image",
    ) {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build(
        "pull-ok",
        &["CUDA_VERSION=12.3.2", "TF_VERSION=2.17.0"],
        &[2],
    );
    let reference = registry.push_and_forget(&image, "tensorflow/tensorflow:2.17.0-gpu");
    assert!(
        image_id(&reference).is_none(),
        "no local copy before the pull"
    );

    let handle = start_pull(engine(), ImageRef::parse(&reference).unwrap(), None);
    let events = all_events(handle).await;

    let digest = assert_progress_then_done(&events);

    let repo_digests = support::docker::docker(&[
        "image",
        "inspect",
        "--format",
        "{{json .RepoDigests}}",
        &reference,
    ]);
    assert!(
        repo_digests.contains(digest.as_str()),
        "{repo_digests} has {digest}"
    );
    let env = support::docker::docker(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config.Env}}",
        &reference,
    ]);
    assert!(env.contains("CUDA_VERSION=12.3.2"), "{env}");
    remove_image(&reference);
}

#[tokio::test]
async fn an_unknown_tag_is_told_apart_and_lists_the_tags_there_are() {
    if !support::docker::engine_or_skip("an_unknown_tag_is_told_apart_and_lists_the_tags_there_are")
    {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build("pull-tag", &["CUDA_VERSION=12.4.1"], &[]);
    registry.push_and_forget(&image, "nvidia/pytorch:24.05-py3");

    let error = failure(&format!("{}/nvidia/pytorch:99.99-py3", registry.host())).await;
    let PullError::UnknownTag { tag, available, .. } = &error else {
        panic!("expected UnknownTag, got {error:?}");
    };
    assert_eq!(tag, "99.99-py3");
    assert_eq!(available, &["24.05-py3".to_string()]);
    assert!(error.fix().contains("24.05-py3"), "{}", error.fix());
}

#[tokio::test]
async fn an_unknown_repository_is_told_apart_from_an_unknown_tag() {
    if !support::docker::engine_or_skip("an_unknown_repository_is_told_apart_from_an_unknown_tag") {
        return;
    }
    let registry = Registry::start();
    let error = failure(&format!("{}/nosuch/repository:1.0", registry.host())).await;
    assert!(matches!(error, PullError::UnknownImage { .. }), "{error:?}");
    assert_eq!(error.title(), "Image not found");
    let login = format!("docker login {}", registry.host());
    assert!(error.fix().contains(&login), "{}", error.fix());
}

#[tokio::test]
async fn a_registry_on_a_dead_port_is_unreachable() {
    if !support::docker::engine_or_skip("a_registry_on_a_dead_port_is_unreachable") {
        return;
    }
    // Bound and closed at once: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = failure(&format!(
        "127.0.0.1:{port}/tensorflow/tensorflow:2.17.0-gpu"
    ))
    .await;
    let PullError::RegistryUnreachable { registry, detail } = &error else {
        panic!("expected RegistryUnreachable, got {error:?}");
    };
    assert_eq!(registry, &format!("127.0.0.1:{port}"));
    assert!(detail.contains("connection refused"), "{detail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pulls_at_once_both_complete() {
    if !support::docker::engine_or_skip("two_pulls_at_once_both_complete") {
        return;
    }
    let registry = Registry::start();
    let first = TestImage::build("pull-two-a", &["CUDA_VERSION=12.8.0"], &[4]);
    let second = TestImage::build("pull-two-b", &["CUDA_VERSION=13.1.0"], &[4]);
    let a = registry.push_and_forget(&first, "nvidia/pytorch:25.01-py3");
    let b = registry.push_and_forget(&second, "nvidia/pytorch:25.12-py3");

    let handle_a = start_pull(engine(), ImageRef::parse(&a).unwrap(), None);
    let handle_b = start_pull(engine(), ImageRef::parse(&b).unwrap(), None);
    assert_ne!(handle_a.id, handle_b.id, "each job has its own id");
    let (events_a, events_b) = tokio::join!(all_events(handle_a), all_events(handle_b));
    for (reference, events) in [(&a, events_a), (&b, events_b)] {
        assert!(
            matches!(
                events.last(),
                Some(PullEvent::Done {
                    digest: Some(_),
                    ..
                })
            ),
            "{reference}: {:?}",
            events.last()
        );
        assert!(
            image_id(reference).is_some(),
            "{reference} is local after the pull"
        );
        remove_image(reference);
    }
}
