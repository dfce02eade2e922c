//! Pulls from a registry that wants a login: refused without credentials, done with those from a Docker config.

use crate::support;

use bollard::Docker;
use gpudeck::pull::{credentials_for, start_pull, ImageRef, PullError};
use support::registry::{image_id, remove_image, Registry, TestImage, USER};

#[tokio::test]
async fn an_auth_registry_refuses_an_anonymous_pull_and_accepts_a_saved_login() {
    if !support::docker::engine_or_skip(
        "an_auth_registry_refuses_an_anonymous_pull_and_accepts_a_saved_login",
    ) {
        return;
    }
    let registry = Registry::start_with_auth();
    let image = TestImage::build("pull-auth", &["CUDA_VERSION=12.8.0"], &[1]);
    let reference = registry.push_and_forget(&image, "nvidia/tensorflow:25.01-tf2-py3");
    let parsed = ImageRef::parse(&reference).unwrap();
    let engine = || Docker::connect_with_local_defaults().unwrap();

    let error = start_pull(engine(), parsed.clone(), None)
        .finish()
        .await
        .unwrap_err();
    let PullError::AuthRequired { registry: host, .. } = &error else {
        panic!("expected AuthRequired, got {error:?}");
    };
    assert_eq!(host, &registry.host());
    assert!(
        error
            .fix()
            .contains(&format!("docker login {}", registry.host())),
        "{}",
        error.fix()
    );
    assert!(image_id(&reference).is_none());

    let config = registry.docker_config();
    let credentials = credentials_for(&registry.host(), Some(&config))
        .expect("the config reads")
        .expect("it has a login for the registry");
    assert_eq!(credentials.username.as_deref(), Some(USER));
    let digest = start_pull(engine(), parsed, Some(credentials))
        .finish()
        .await
        .expect("the pull with the saved login succeeds");
    assert!(digest.is_some_and(|d| d.starts_with("sha256:")));
    assert!(image_id(&reference).is_some());
    remove_image(&reference);
}
