//! Registry behaviour Debian's docker-registry does not show, against a scripted server: the Bearer token flow, multi-platform indexes, bad digests, oversized and slow answers.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bollard::auth::DockerCredentials;
use gpudeck::pull::ImageRef;
use gpudeck::registry::{fetch_config, FetchOptions, Platform, RemoteError, RemoteImage};
use support::fake_registry::{digest, error_body, FakeRegistry, Reply, Request};

const TOKEN: &str = "tok-123";
const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";
const MANIFEST_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// The documents of one image, linked by their digests.
struct Documents {
    index: String,
    manifest: String,
    config: String,
}

/// An index with this host's platform (unless `with_host` is false), another CPU and a buildx
/// attestation entry; the host's manifest has two layers of 1000 and 234 bytes.
fn documents(with_host: bool) -> Documents {
    let config = r#"{"architecture":"ARCH","os":"linux","created":"2025-01-20T00:00:00Z","config":{"Env":["PATH=/usr/bin","CUDA_VERSION=12.8.0","TF_VERSION=2.18.0"],"Labels":{"com.nvidia.cudnn.version":"9.7.0"}}}"#
        .replace("ARCH", &Platform::host().architecture);
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_TYPE}","config":{{"mediaType":"application/vnd.docker.container.image.v1+json","size":{},"digest":"{}"}},"layers":[{{"size":1000,"digest":"sha256:{}"}},{{"size":234,"digest":"sha256:{}"}}]}}"#,
        config.len(),
        digest(config.as_bytes()),
        "1".repeat(64),
        "2".repeat(64),
    );
    let host_arch = if with_host {
        Platform::host().architecture
    } else {
        "mips64le".to_string()
    };
    let entry = |arch: &str, digest: &str| {
        format!(
            r#"{{"mediaType":"{MANIFEST_TYPE}","size":1,"digest":"{digest}","platform":{{"architecture":"{arch}","os":"linux"}}}}"#
        )
    };
    let index = format!(
        r#"{{"schemaVersion":2,"mediaType":"{INDEX_TYPE}","manifests":[{},{},{}]}}"#,
        entry("riscv64", &format!("sha256:{}", "9".repeat(64))),
        entry(&host_arch, &digest(manifest.as_bytes())),
        r#"{"size":1,"digest":"sha256:aaaa","platform":{"architecture":"unknown","os":"unknown"}}"#,
    );
    Documents {
        index,
        manifest,
        config,
    }
}

/// A registry that wants a token from its own `/token` realm and serves `docs` as
/// `acme/tf:2.18.0-gpu`; `tamper` changes the config it serves.
fn token_registry(docs: Documents, tamper: bool) -> FakeRegistry {
    let docs = Arc::new(docs);
    FakeRegistry::start(move |request: &Request| {
        let path = request.path.as_str();
        if path.starts_with("/token?") {
            return Reply::new(
                200,
                format!(r#"{{"access_token":"{TOKEN}","expires_in":60}}"#),
            );
        }
        let authorized = request.headers.get("authorization") == Some(&format!("Bearer {TOKEN}"));
        if !authorized {
            let realm = format!("http://{}/token", request.headers["host"]);
            let challenge = format!(
                r#"Bearer realm="{realm}",service="fake-registry",scope="repository:acme/tf:pull""#
            );
            return Reply::new(401, error_body("UNAUTHORIZED", "authentication required"))
                .header("WWW-Authenticate", &challenge);
        }
        let manifests = "/v2/acme/tf/manifests/";
        let blobs = "/v2/acme/tf/blobs/";
        match path {
            p if p == format!("{manifests}2.18.0-gpu") => {
                Reply::new(200, docs.index.clone()).header("Content-Type", INDEX_TYPE)
            }
            p if p == format!("{manifests}{}", digest(docs.manifest.as_bytes())) => {
                Reply::new(200, docs.manifest.clone()).header("Content-Type", MANIFEST_TYPE)
            }
            p if p == format!("{blobs}{}", digest(docs.config.as_bytes())) => {
                let config = if tamper {
                    docs.config.replace("12.8.0", "12.9.0")
                } else {
                    docs.config.clone()
                };
                Reply::new(200, config)
            }
            _ => Reply::new(404, error_body("MANIFEST_UNKNOWN", "manifest unknown")),
        }
    })
}

async fn fetch(
    registry: &FakeRegistry,
    credentials: Option<&DockerCredentials>,
) -> Result<RemoteImage, RemoteError> {
    let image = ImageRef::parse(&format!("{}/acme/tf:2.18.0-gpu", registry.host())).unwrap();
    fetch_config(&image, credentials, &FetchOptions::for_image(&image)).await
}

fn login() -> DockerCredentials {
    DockerCredentials {
        username: Some("robot".into()),
        password: Some("pw".into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_bearer_flow_gets_a_token_then_this_platforms_config() {
    let docs = documents(true);
    let (index_digest, manifest_digest) = (
        digest(docs.index.as_bytes()),
        digest(docs.manifest.as_bytes()),
    );
    let config_digest = digest(docs.config.as_bytes());
    let registry = token_registry(docs, false);

    let remote = fetch(&registry, Some(&login())).await.expect("config read");

    assert_eq!(remote.manifest_digest, index_digest);
    assert_eq!(remote.platform_manifest_digest, Some(manifest_digest));
    assert_eq!(remote.config_digest, config_digest);
    assert_eq!(remote.compressed_size, 1234);
    assert_eq!(remote.layer_count, 2);
    assert_eq!(remote.created.as_deref(), Some("2025-01-20T00:00:00Z"));
    let facts = remote.facts();
    assert_eq!(facts.cuda.as_deref(), Some("12.8.0"));
    assert_eq!(facts.tensorflow.as_deref(), Some("2.18.0"));
    assert_eq!(facts.cudnn.as_deref(), Some("9.7.0"));

    let requests = registry.requests();
    let token: Vec<&Request> = requests
        .iter()
        .filter(|r| r.path.starts_with("/token"))
        .collect();
    assert_eq!(token.len(), 1, "one token serves the whole read");
    assert!(token[0].path.contains("service=fake-registry"));
    assert!(token[0]
        .path
        .contains("scope=repository%3Aacme%2Ftf%3Apull"));
    let basic = base64::engine::general_purpose::STANDARD.encode("robot:pw");
    assert_eq!(
        token[0].headers.get("authorization"),
        Some(&format!("Basic {basic}"))
    );
    let manifest_request = requests
        .iter()
        .find(|r| r.path.ends_with("/manifests/2.18.0-gpu"))
        .expect("the tag was asked for");
    assert!(manifest_request.headers["accept"].contains(INDEX_TYPE));
    assert!(manifest_request.headers["accept"].contains(MANIFEST_TYPE));
}

#[tokio::test]
async fn an_anonymous_token_is_asked_for_without_a_login() {
    let registry = token_registry(documents(true), false);
    fetch(&registry, None).await.expect("config read");
    let requests = registry.requests();
    let token = requests
        .iter()
        .find(|r| r.path.starts_with("/token"))
        .expect("a token was asked for");
    assert!(!token.headers.contains_key("authorization"));
}

#[tokio::test]
async fn an_index_without_this_platform_lists_what_it_has() {
    let registry = token_registry(documents(false), false);
    let error = fetch(&registry, None).await.unwrap_err();
    let RemoteError::NoMatchingPlatform {
        wanted, available, ..
    } = &error
    else {
        panic!("expected NoMatchingPlatform, got {error:?}");
    };
    assert_eq!(wanted, &Platform::host().to_string());
    assert_eq!(available, &["linux/riscv64", "linux/mips64le"]);
}

#[tokio::test]
async fn a_config_that_does_not_match_its_digest_is_refused() {
    let registry = token_registry(documents(true), true);
    let error = fetch(&registry, None).await.unwrap_err();
    assert!(
        matches!(&error, RemoteError::DigestMismatch { what, .. } if what == "the image config"),
        "{error:?}"
    );
    assert_eq!(error.kind(), "digest_mismatch");
}

#[tokio::test]
async fn a_refused_token_with_a_login_is_auth_denied() {
    let registry = FakeRegistry::start(|request: &Request| {
        if request.path.starts_with("/token") {
            return Reply::new(401, r#"{"details":"incorrect username or password"}"#);
        }
        let realm = format!("http://{}/token", request.headers["host"]);
        Reply::new(401, "").header("WWW-Authenticate", &format!(r#"Bearer realm="{realm}""#))
    });
    let error = fetch(&registry, Some(&login())).await.unwrap_err();
    assert!(matches!(error, RemoteError::AuthDenied { .. }), "{error:?}");
    let error = fetch(&registry, None).await.unwrap_err();
    assert!(
        matches!(error, RemoteError::AuthRequired { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn oversized_rate_limited_and_slow_answers_fail_cleanly() {
    let registry = FakeRegistry::start(|request: &Request| match request.path.as_str() {
        p if p.contains("/huge/") => Reply::new(200, vec![b' '; 5 << 20]),
        p if p.contains("/busy/") => Reply::new(429, error_body("TOOMANYREQUESTS", "rate limit")),
        _ => {
            let mut reply = Reply::new(200, "{}");
            reply.delay = Some(Duration::from_secs(3));
            reply
        }
    });
    let get = |repo: &str, timeout: Duration| {
        let image = ImageRef::parse(&format!("{}/{repo}:1", registry.host())).unwrap();
        let options = FetchOptions {
            timeout,
            ..FetchOptions::for_image(&image)
        };
        async move { fetch_config(&image, None, &options).await.unwrap_err() }
    };
    let error = get("a/huge/x", Duration::from_secs(10)).await;
    assert!(
        matches!(&error, RemoteError::Malformed { detail, .. } if detail.contains("larger than")),
        "{error:?}"
    );
    let error = get("a/busy/x", Duration::from_secs(10)).await;
    assert!(
        matches!(error, RemoteError::RateLimited { .. }),
        "{error:?}"
    );
    let error = get("a/slow/x", Duration::from_millis(500)).await;
    assert!(
        matches!(error, RemoteError::Timeout { timeout, .. } if timeout == Duration::from_millis(500)),
        "{error:?}"
    );
}

#[tokio::test]
async fn https_to_a_server_that_is_not_tls_is_unreachable_not_a_panic() {
    // Answers plain HTTP to anything, so the TLS handshake reads garbage.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("local addr").port();
    std::thread::spawn(move || {
        use std::io::Write;
        if let Ok((mut stream, _)) = listener.accept() {
            let _ = stream.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
        }
    });
    let image = ImageRef::parse(&format!("127.0.0.1:{port}/acme/tf:1")).unwrap();
    let options = FetchOptions {
        plain_http: false,
        ..FetchOptions::for_image(&image)
    };
    let error = fetch_config(&image, None, &options).await.unwrap_err();
    let RemoteError::Unreachable { detail, .. } = &error else {
        panic!("expected Unreachable, got {error:?}");
    };
    assert!(detail.contains("https://127.0.0.1"), "{detail}");
    assert!(error.fix().contains("insecure-registries"));
}
