//! Image configs read from a real registry (Debian's docker-registry) without pulling: env, labels, digests, size, and the failures told apart.

use crate::support;

use bollard::auth::DockerCredentials;
use gpudeck::pull::{credentials_for, ImageRef};
use gpudeck::registry::{fetch_config, FetchOptions, Platform, RemoteError, RemoteImage};
use support::docker::docker;
use support::registry::{image_id, Registry, TestImage, PASSWORD, USER};

const REQUIRE_CUDA: &str = "cuda>=12.4 brand=tesla,driver>=470,driver<471";

async fn fetch(
    reference: &str,
    credentials: Option<&DockerCredentials>,
) -> Result<RemoteImage, RemoteError> {
    let image = ImageRef::parse(reference).expect("valid reference");
    fetch_config(&image, credentials, &FetchOptions::for_image(&image)).await
}

/// The image id (config digest) of a local image, read before it is pushed and forgotten.
fn local_id(tag: &str) -> String {
    image_id(tag).expect("the test image exists locally")
}

#[tokio::test]
async fn a_pushed_image_is_read_from_the_registry_and_nothing_is_pulled() {
    if !support::docker::engine_or_skip(
        "a_pushed_image_is_read_from_the_registry_and_nothing_is_pulled",
    ) {
        return;
    }
    let registry = Registry::start();
    let require = format!(r#"NVIDIA_REQUIRE_CUDA="{REQUIRE_CUDA}""#);
    let image = TestImage::build_labelled(
        "remote-config",
        &["CUDA_VERSION=12.4.1", &require],
        &[r#"com.nvidia.cudnn.version="9.1.0.70""#],
        &[1],
    );
    let config_digest = local_id(&image.tag);
    let reference = registry.push_and_forget(&image, "nvidia/cuda-test:12.4.1-runtime");

    let remote = fetch(&reference, None).await.expect("the config is read");

    assert_eq!(remote.config_digest, config_digest);
    assert!(
        remote.env.contains(&"CUDA_VERSION=12.4.1".to_string()),
        "{:?}",
        remote.env
    );
    assert!(remote
        .env
        .contains(&format!("NVIDIA_REQUIRE_CUDA={REQUIRE_CUDA}")));
    assert_eq!(remote.labels["com.nvidia.cudnn.version"], "9.1.0.70");
    let facts = remote.facts();
    assert_eq!(facts.cuda.as_deref(), Some("12.4.1"));
    assert_eq!(facts.require_cuda.as_deref(), Some(REQUIRE_CUDA));
    assert_eq!(facts.cudnn.as_deref(), Some("9.1.0.70"));
    assert_eq!(remote.platform().to_string(), Platform::host().to_string());
    assert!(remote.runs_here());
    assert!(remote.manifest_digest.starts_with("sha256:"));
    assert_eq!(
        remote.platform_manifest_digest, None,
        "docker push makes no index"
    );
    assert!(remote.created.is_some());
    // busybox import, the naming layer and 1 MB of random data (incompressible).
    assert_eq!(remote.layer_count, 3);
    assert!(
        (1 << 20..8 << 20).contains(&remote.compressed_size),
        "{}",
        remote.compressed_size
    );

    assert!(
        image_id(&reference).is_none(),
        "fetching the config pulled nothing"
    );
    let listed = docker(&["images", "-q", &reference.replace(":12.4.1-runtime", "")]);
    assert!(listed.is_empty(), "docker images lists {listed}");

    // The same image by digest: the digest is checked and kept.
    let pinned = reference.replace(":12.4.1-runtime", &format!("@{}", remote.manifest_digest));
    let by_digest = fetch(&pinned, None)
        .await
        .expect("the pinned image is read");
    assert_eq!(by_digest.manifest_digest, remote.manifest_digest);
    assert_eq!(by_digest.config_digest, config_digest);
    assert!(image_id(&pinned).is_none());
}

#[tokio::test]
async fn unknown_tags_and_repositories_are_told_apart() {
    if !support::docker::engine_or_skip("unknown_tags_and_repositories_are_told_apart") {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build("remote-unknown", &["CUDA_VERSION=12.8.0"], &[]);
    registry.push_and_forget(&image, "acme/trainer:1.0");

    let error = fetch(&format!("{}/acme/trainer:1.1", registry.host()), None)
        .await
        .unwrap_err();
    let RemoteError::UnknownTag {
        reference,
        available,
        ..
    } = &error
    else {
        panic!("expected UnknownTag, got {error:?}");
    };
    assert_eq!(reference, "1.1");
    assert_eq!(available, &["1.0"]);
    assert!(error.fix().contains("1.0"), "{}", error.fix());

    let error = fetch(&format!("{}/acme/no-such-thing:1.0", registry.host()), None)
        .await
        .unwrap_err();
    let RemoteError::UnknownRepository { repository, .. } = &error else {
        panic!("expected UnknownRepository, got {error:?}");
    };
    assert_eq!(repository, "acme/no-such-thing");
    assert_eq!(error.kind(), "unknown_repository");
}

#[tokio::test]
async fn an_auth_registry_wants_the_saved_login_and_refuses_a_wrong_one() {
    if !support::docker::engine_or_skip(
        "an_auth_registry_wants_the_saved_login_and_refuses_a_wrong_one",
    ) {
        return;
    }
    let registry = Registry::start_with_auth();
    let image = TestImage::build("remote-auth", &["CUDA_VERSION=12.6.3"], &[]);
    let reference = registry.push_and_forget(&image, "private/cuda:12.6");

    let error = fetch(&reference, None).await.unwrap_err();
    let RemoteError::AuthRequired { registry: host, .. } = &error else {
        panic!("expected AuthRequired, got {error:?}");
    };
    assert_eq!(host, &registry.host());
    assert!(error
        .fix()
        .contains(&format!("docker login {}", registry.host())));

    let saved = credentials_for(&registry.host(), Some(&registry.docker_config()))
        .expect("the config reads")
        .expect("it has a login for the registry");
    let remote = fetch(&reference, Some(&saved))
        .await
        .expect("the saved login is accepted");
    assert!(remote.env.contains(&"CUDA_VERSION=12.6.3".to_string()));
    assert!(image_id(&reference).is_none());

    let wrong = DockerCredentials {
        username: Some(USER.to_string()),
        password: Some(format!("not-{PASSWORD}")),
        ..Default::default()
    };
    let error = fetch(&reference, Some(&wrong)).await.unwrap_err();
    assert!(
        matches!(error, RemoteError::AuthDenied { .. }),
        "expected AuthDenied, got {error:?}"
    );
}

#[tokio::test]
async fn a_port_where_nothing_listens_is_unreachable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let host = format!("127.0.0.1:{port}");
    let error = fetch(&format!("{host}/x/y:1"), None).await.unwrap_err();
    let RemoteError::Unreachable { registry, detail } = &error else {
        panic!("expected Unreachable, got {error:?}");
    };
    assert_eq!(registry, &host);
    assert!(detail.to_lowercase().contains("connect"), "{detail}");
    assert!(error.to_string().contains(&host));
}
