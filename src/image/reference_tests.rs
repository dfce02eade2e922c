//! Valid and invalid references against the distribution grammar.

use super::*;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn canonical(input: &str) -> String {
    match ImageRef::parse(input) {
        Ok(image) => image.to_string(),
        Err(e) => panic!("`{input}` should parse: {e}"),
    }
}

fn error(input: &str) -> RefError {
    match ImageRef::parse(input) {
        Ok(image) => panic!("`{input}` should be rejected, got {image}"),
        Err(e) => e,
    }
}

#[test]
fn valid_references_print_in_canonical_form() {
    let cases = [
        ("ubuntu", "docker.io/library/ubuntu:latest"),
        ("ubuntu:22.04", "docker.io/library/ubuntu:22.04"),
        ("library/ubuntu", "docker.io/library/ubuntu:latest"),
        ("docker.io/ubuntu", "docker.io/library/ubuntu:latest"),
        (
            "index.docker.io/library/ubuntu",
            "docker.io/library/ubuntu:latest",
        ),
        (
            "tensorflow/tensorflow:2.17.0-gpu",
            "docker.io/tensorflow/tensorflow:2.17.0-gpu",
        ),
        (
            "nvcr.io/nvidia/pytorch:24.05-py3",
            "nvcr.io/nvidia/pytorch:24.05-py3",
        ),
        ("localhost:5000/a/b:tag", "localhost:5000/a/b:tag"),
        ("localhost/a", "localhost/a:latest"),
        ("127.0.0.1:5000/x", "127.0.0.1:5000/x:latest"),
        ("[::1]:5000/x:1", "[::1]:5000/x:1"),
        (
            "ghcr.io/a-b/c__d.e_f--g:V1_x.y-z",
            "ghcr.io/a-b/c__d.e_f--g:V1_x.y-z",
        ),
        (
            "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime",
            "docker.io/pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime",
        ),
        (
            "nvidia/cuda:12.4.1-base-ubuntu22.04",
            "docker.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
        ),
        ("a", "docker.io/library/a:latest"),
    ];
    for (input, expected) in cases {
        assert_eq!(canonical(input), expected, "canonical form of `{input}`");
    }
    assert_eq!(canonical("a:_x"), "docker.io/library/a:_x");
}

#[test]
fn digests_are_kept_and_win_over_tags_for_the_api() {
    let by_digest = ImageRef::parse(&format!("ubuntu@{DIGEST}")).unwrap();
    assert_eq!(
        by_digest.to_string(),
        format!("docker.io/library/ubuntu@{DIGEST}")
    );
    assert_eq!(by_digest.effective_tag(), None);
    assert_eq!(by_digest.api_tag(), DIGEST);

    let both = ImageRef::parse(&format!("127.0.0.1:5000/x:1@{DIGEST}")).unwrap();
    assert_eq!(both.to_string(), format!("127.0.0.1:5000/x:1@{DIGEST}"));
    assert_eq!(both.api_image(), "127.0.0.1:5000/x");
    assert_eq!(both.api_tag(), DIGEST);
}

#[test]
fn parts_and_api_parameters() {
    let image = ImageRef::parse("nvcr.io/nvidia/pytorch:24.05-py3").unwrap();
    assert_eq!(image.registry(), Some("nvcr.io"));
    assert_eq!(image.registry_host(), "nvcr.io");
    assert_eq!(image.repository(), "nvidia/pytorch");
    assert_eq!(image.tag(), Some("24.05-py3"));
    assert_eq!(image.api_image(), "nvcr.io/nvidia/pytorch");
    assert_eq!(image.api_tag(), "24.05-py3");

    let hub = ImageRef::parse("ubuntu").unwrap();
    assert_eq!(hub.registry(), None);
    assert_eq!(hub.registry_host(), "docker.io");
    assert_eq!(hub.repository(), "library/ubuntu");
    assert_eq!(hub.tag(), None);
    assert_eq!(hub.api_image(), "docker.io/library/ubuntu");
    assert_eq!(hub.api_tag(), "latest");
}

#[test]
fn familiar_form_is_what_docker_images_shows() {
    let familiar = |s: &str| ImageRef::parse(s).unwrap().familiar();
    assert_eq!(familiar("docker.io/library/ubuntu"), "ubuntu:latest");
    assert_eq!(
        familiar("tensorflow/tensorflow:2.17.0-gpu"),
        "tensorflow/tensorflow:2.17.0-gpu"
    );
    assert_eq!(familiar("127.0.0.1:5000/x"), "127.0.0.1:5000/x:latest");
}

#[test]
fn equal_references_compare_equal() {
    let a = ImageRef::parse("ubuntu").unwrap();
    let b = ImageRef::parse("docker.io/library/ubuntu").unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a.to_string(),
        ImageRef::parse("ubuntu:latest").unwrap().to_string()
    );
    assert_eq!("ubuntu".parse::<ImageRef>(), Ok(a));
}

#[test]
fn uppercase_repositories_are_rejected_with_a_suggestion() {
    assert_eq!(
        error("UPPER/case"),
        RefError::Uppercase {
            suggestion: "upper/case".into()
        }
    );
    let message = error("Ubuntu").to_string();
    assert!(
        message.starts_with("uppercase letters are not allowed in repository names: use lowercase"),
        "{message}"
    );
    assert!(message.contains("`ubuntu`"), "{message}");
    assert!(matches!(error("ghcr.io/Org/x"), RefError::Uppercase { .. }));
}

#[test]
fn colons_digests_and_tags_are_checked() {
    assert_eq!(error("a:b:c"), RefError::TooManyColons);
    assert!(matches!(
        error("x@sha256:short"),
        RefError::InvalidDigest { .. }
    ));
    assert!(matches!(
        error(&format!("x@md5:{}", &DIGEST[7..])),
        RefError::InvalidDigest { .. }
    ));
    assert!(matches!(
        error(&format!("x@{}", DIGEST.to_uppercase())),
        RefError::InvalidDigest { .. }
    ));
    assert!(matches!(error("x:"), RefError::InvalidTag { .. }));
    assert!(matches!(error("x:-dash"), RefError::InvalidTag { .. }));
    assert!(matches!(error("x:.dot"), RefError::InvalidTag { .. }));
    assert!(matches!(error("x:a/b"), RefError::InvalidRegistry { .. }));
    assert!(matches!(error("x:tag+plus"), RefError::InvalidTag { .. }));
    let long_tag = "t".repeat(129);
    assert_eq!(
        error(&format!("x:{long_tag}")),
        RefError::TagTooLong { length: 129 }
    );
    assert_eq!(
        error(&format!("x:{long_tag}")).to_string(),
        "tag too long: 129 characters, at most 128"
    );
    assert!(ImageRef::parse(&format!("x:{}", "t".repeat(128))).is_ok());
}

#[test]
fn bad_paths_and_hosts_are_rejected() {
    assert_eq!(error(""), RefError::Empty);
    assert_eq!(error("   "), RefError::Empty);
    assert_eq!(error("a//b"), RefError::EmptyComponent);
    assert_eq!(error("a/"), RefError::EmptyComponent);
    assert_eq!(error("/a"), RefError::EmptyComponent);
    for bad in [
        "-a", "a-", "a..b", "a___b", "a._b", "a b", "a$b", ".a", "a_",
    ] {
        assert!(
            matches!(error(bad), RefError::InvalidComponent { .. }),
            "`{bad}` should be an invalid component"
        );
    }
    for bad in [
        "my_host.io/x",
        "-host.io/x",
        "host.io:port/x",
        "host.io:123456/x",
        "host.io:/x",
        "[zz]:5000/x",
    ] {
        assert!(
            matches!(error(bad), RefError::InvalidRegistry { .. }),
            "`{bad}` should be an invalid registry, got {:?}",
            ImageRef::parse(bad)
        );
    }
    let long_name = format!("{}/{}", "a".repeat(200), "b".repeat(60));
    assert_eq!(error(&long_name), RefError::NameTooLong { length: 261 });
    assert!(ImageRef::parse(&format!("{}/{}", "a".repeat(200), "b".repeat(54))).is_ok());
}

#[test]
fn separators_follow_the_grammar() {
    for ok in [
        "a.b",
        "a_b",
        "a__b",
        "a-b",
        "a---b",
        "a0.b1_c2__d3-e4",
        "0",
        "a/b/c/d",
    ] {
        assert!(
            ImageRef::parse(ok).is_ok(),
            "`{ok}` should parse: {:?}",
            ImageRef::parse(ok)
        );
    }
}
