use super::*;

fn platform(os: &str, architecture: &str, variant: Option<&str>) -> Platform {
    Platform {
        os: os.into(),
        architecture: architecture.into(),
        variant: variant.map(str::to_string),
    }
}

/// An index the shape of Docker Hub's (with buildx attestation entries).
const INDEX: &str = r#"{
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.index.v1+json",
  "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:aaa", "size": 1,
     "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:bbb", "size": 2,
     "platform": {"architecture": "amd64", "os": "linux"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:ccc", "size": 3,
     "platform": {"architecture": "unknown", "os": "unknown"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:ddd", "size": 4,
     "platform": {"architecture": "s390x", "os": "linux"}}
  ]
}"#;

fn index() -> ImageIndex {
    match parse_manifest(INDEX.as_bytes(), None).expect("parses") {
        Manifest::Index(index) => index,
        other => panic!("expected an index, got {other:?}"),
    }
}

#[test]
fn the_host_platform_is_picked_from_an_index() {
    let index = index();
    let amd64 = platform("linux", "amd64", None);
    assert_eq!(
        select_platform(&index, &amd64).unwrap().digest,
        "sha256:bbb"
    );
    let arm64 = platform("linux", "arm64", None);
    assert_eq!(
        select_platform(&index, &arm64).unwrap().digest,
        "sha256:aaa"
    );
}

#[test]
fn a_missing_platform_lists_the_real_ones() {
    let offered = select_platform(&index(), &platform("linux", "ppc64le", None)).unwrap_err();
    assert_eq!(offered, ["linux/arm64/v8", "linux/amd64", "linux/s390x"]);
    assert!(select_platform(&index(), &platform("windows", "amd64", None)).is_err());
}

#[test]
fn variants_must_fit() {
    assert!(platform("linux", "arm64", Some("v8")).runs_on(&platform("linux", "arm64", None)));
    assert!(!platform("linux", "arm64", Some("v9")).runs_on(&platform("linux", "arm64", None)));
    assert!(!platform("linux", "arm", Some("v6")).runs_on(&platform("linux", "arm", Some("v7"))));
    assert!(platform("linux", "amd64", None).runs_on(&platform("linux", "amd64", None)));
    assert_eq!(
        platform("linux", "arm64", Some("v8")).to_string(),
        "linux/arm64/v8"
    );
}

#[test]
fn the_host_is_linux_with_a_go_architecture_name() {
    let host = Platform::host();
    assert_eq!(host.os, "linux");
    if cfg!(target_arch = "x86_64") {
        assert_eq!(host.architecture, "amd64");
    }
    if cfg!(target_arch = "aarch64") {
        assert_eq!(host.architecture, "arm64");
    }
}

#[test]
fn image_manifests_are_told_from_indexes_by_media_type_header_or_shape() {
    let manifest = r#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
      "config":{"mediaType":"application/vnd.docker.container.image.v1+json","size":7,"digest":"sha256:cfg"},
      "layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":100,"digest":"sha256:l1"},
                {"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":23,"digest":"sha256:l2"}]}"#;
    let Manifest::Image(image) = parse_manifest(manifest.as_bytes(), None).unwrap() else {
        panic!("an image manifest");
    };
    assert_eq!(image.config.digest, "sha256:cfg");
    assert_eq!(image.layers.iter().map(|l| l.size).sum::<u64>(), 123);

    // OCI manifests may leave mediaType out of the body; the header or the shape decides.
    let bare = r#"{"schemaVersion":2,"manifests":[]}"#;
    assert!(matches!(
        parse_manifest(bare.as_bytes(), None),
        Ok(Manifest::Index(_))
    ));
    let bare = r#"{"schemaVersion":2,"config":{"digest":"sha256:c","size":1},"layers":[]}"#;
    let header = Some("application/vnd.oci.image.manifest.v1+json; charset=utf-8");
    assert!(matches!(
        parse_manifest(bare.as_bytes(), header),
        Ok(Manifest::Image(_))
    ));
}

#[test]
fn schema1_and_garbage_are_refused_with_a_reason() {
    let schema1 = r#"{"schemaVersion":1,"name":"x","tag":"1","fsLayers":[]}"#;
    let why = parse_manifest(schema1.as_bytes(), None).unwrap_err();
    assert!(why.contains("schema 1"), "{why}");
    assert!(parse_manifest(b"<html>", None)
        .unwrap_err()
        .contains("not a JSON"));
    let no_config =
        r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#;
    assert!(parse_manifest(no_config.as_bytes(), None).is_err());
}

#[test]
fn image_configs_give_env_labels_and_platform() {
    let config = r#"{"architecture":"amd64","os":"linux","created":"2024-05-01T10:00:00Z",
      "config":{"Env":["PATH=/usr/bin","CUDA_VERSION=12.4.1"],"Labels":{"maintainer":"NVIDIA CORPORATION"},"Cmd":["bash"]},
      "rootfs":{"type":"layers","diff_ids":[]},"history":[]}"#;
    let parsed = parse_config(config.as_bytes()).unwrap();
    assert_eq!(parsed.architecture, "amd64");
    assert_eq!(parsed.created.as_deref(), Some("2024-05-01T10:00:00Z"));
    let run = parsed.config.unwrap();
    assert_eq!(run.env.unwrap()[1], "CUDA_VERSION=12.4.1");
    assert_eq!(run.labels.unwrap()["maintainer"], "NVIDIA CORPORATION");

    // `docker import` images have null Labels; scratch images may have no config at all.
    let sparse = r#"{"architecture":"amd64","os":"linux","config":{"Env":null,"Labels":null}}"#;
    let parsed = parse_config(sparse.as_bytes()).unwrap();
    assert_eq!(parsed.config.unwrap(), RunConfig::default());
    assert!(parse_config(b"[1,2]").is_err());
}

#[test]
fn digests_are_checked() {
    let bytes = b"hello";
    let sha256 = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    assert_eq!(sha256_digest(bytes), sha256);
    assert_eq!(verify_digest(bytes, sha256), Ok(()));
    assert_eq!(
        verify_digest(b"hellO", sha256),
        Err(DigestProblem::Mismatch(sha256_digest(b"hellO")))
    );
    let sha512 = format!("sha512:{:x}", Sha512::digest(bytes));
    assert_eq!(verify_digest(bytes, &sha512), Ok(()));
    assert!(matches!(
        verify_digest(bytes, "md5:abc"),
        Err(DigestProblem::Unsupported(_))
    ));
    assert!(matches!(
        verify_digest(bytes, "nocolon"),
        Err(DigestProblem::Unsupported(_))
    ));
}
