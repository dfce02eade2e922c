//! Manifests, indexes and image configs as the OCI and Docker v2 formats write them; platform choice and digests.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use sha2::{Digest as _, Sha256, Sha512};

pub(crate) const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub(crate) const DOCKER_MANIFEST_LIST: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";
pub(crate) const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub(crate) const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// The Accept header for a manifest: every single-image and multi-platform format gpudeck reads.
pub(crate) fn manifest_accept() -> String {
    [
        OCI_INDEX,
        DOCKER_MANIFEST_LIST,
        OCI_MANIFEST,
        DOCKER_MANIFEST,
    ]
    .join(", ")
}

/// An OS / CPU pair as registries name them (`linux/amd64`, `linux/arm64/v8`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    #[serde(default)]
    pub variant: Option<String>,
}

impl Platform {
    /// The platform `docker pull` picks on this machine: Linux (the Engine's containers are
    /// Linux even on other hosts) and this CPU under its Go name.
    pub fn host() -> Platform {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" => "ppc64le",
            "arm" => "arm",
            other => other,
        };
        Platform {
            os: "linux".to_string(),
            architecture: architecture.to_string(),
            variant: None,
        }
    }

    /// Whether an image built for `self` runs natively on `host`. A host without a variant takes
    /// any variant except arm64's later ones (arm64 means v8 unless it says otherwise).
    pub fn runs_on(&self, host: &Platform) -> bool {
        let variant_ok = match (&host.variant, &self.variant) {
            (None, None) | (Some(_), None) => true,
            (None, Some(variant)) => self.architecture != "arm64" || variant == "v8",
            (Some(wanted), Some(variant)) => wanted == variant,
        };
        self.os == host.os && self.architecture == host.architecture && variant_ok
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        match &self.variant {
            Some(variant) => write!(f, "/{variant}"),
            None => Ok(()),
        }
    }
}

/// A pointer to a blob or manifest by digest.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Descriptor {
    pub digest: String,
    #[serde(default)]
    pub size: u64,
    #[serde(default)]
    pub platform: Option<Platform>,
}

/// One image: its config and layers.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ImageManifest {
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
}

/// A multi-platform image: one manifest per platform.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ImageIndex {
    pub manifests: Vec<Descriptor>,
}

#[derive(Debug)]
pub(crate) enum Manifest {
    Image(ImageManifest),
    Index(ImageIndex),
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default, rename = "schemaVersion")]
    schema_version: Option<u32>,
    #[serde(default, rename = "mediaType")]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Option<serde_json::Value>,
}

/// Reads a manifest by its media type (from the body, else the Content-Type header, else its
/// shape). The error says why, for `RemoteError::Malformed`.
pub(crate) fn parse_manifest(body: &[u8], content_type: Option<&str>) -> Result<Manifest, String> {
    let envelope: Envelope =
        serde_json::from_slice(body).map_err(|e| format!("not a JSON manifest: {e}"))?;
    if envelope.schema_version == Some(1) {
        return Err("a schema 1 manifest, which is deprecated and not read by gpudeck".into());
    }
    let media_type = envelope
        .media_type
        .or_else(|| content_type.map(|c| c.split(';').next().unwrap_or(c).trim().to_string()));
    let is_index = match media_type.as_deref() {
        Some(OCI_INDEX | DOCKER_MANIFEST_LIST) => true,
        Some(OCI_MANIFEST | DOCKER_MANIFEST) => false,
        _ => envelope.manifests.is_some(),
    };
    if is_index {
        serde_json::from_slice(body)
            .map(Manifest::Index)
            .map_err(|e| format!("an index that does not parse: {e}"))
    } else {
        serde_json::from_slice(body)
            .map(Manifest::Image)
            .map_err(|e| format!("an image manifest that does not parse: {e}"))
    }
}

/// The entry of an index that runs on `host`, or the platforms it offers instead (attestation
/// entries, `unknown/unknown`, are not platforms).
pub(crate) fn select_platform<'a>(
    index: &'a ImageIndex,
    host: &Platform,
) -> Result<&'a Descriptor, Vec<String>> {
    let fits = |d: &&Descriptor| d.platform.as_ref().is_some_and(|p| p.runs_on(host));
    // Prefer an exact variant match (arm64 with no variant over arm64/v9 when the host is plain).
    let exact = index.manifests.iter().filter(fits).find(|d| {
        d.platform
            .as_ref()
            .is_some_and(|p| p.variant == host.variant)
    });
    if let Some(found) = exact.or_else(|| index.manifests.iter().find(fits)) {
        return Ok(found);
    }
    let offered = index
        .manifests
        .iter()
        .filter_map(|d| d.platform.as_ref())
        .filter(|p| p.os != "unknown")
        .map(Platform::to_string)
        .collect();
    Err(offered)
}

/// The parts of an image config (`application/vnd.oci.image.config.v1+json`) gpudeck reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct ImageConfig {
    #[serde(default)]
    pub os: String,
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub created: Option<String>,
    #[serde(default)]
    pub config: Option<RunConfig>,
}

/// `config` inside the image config: what a container starts with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct RunConfig {
    #[serde(default, rename = "Env")]
    pub env: Option<Vec<String>>,
    #[serde(default, rename = "Labels")]
    pub labels: Option<BTreeMap<String, String>>,
}

pub(crate) fn parse_config(body: &[u8]) -> Result<ImageConfig, String> {
    serde_json::from_slice(body).map_err(|e| format!("not an image config: {e}"))
}

/// Checks `bytes` against `expected` (`sha256:<hex>` or `sha512:<hex>`); `Err` carries the
/// digest the bytes really have, or why `expected` cannot be checked.
pub(crate) fn verify_digest(bytes: &[u8], expected: &str) -> Result<(), DigestProblem> {
    let (algorithm, _) = expected
        .split_once(':')
        .ok_or_else(|| DigestProblem::Unsupported(expected.to_string()))?;
    let actual = match algorithm {
        "sha256" => format!("sha256:{:x}", Sha256::digest(bytes)),
        "sha512" => format!("sha512:{:x}", Sha512::digest(bytes)),
        _ => return Err(DigestProblem::Unsupported(expected.to_string())),
    };
    if actual == expected {
        Ok(())
    } else {
        Err(DigestProblem::Mismatch(actual))
    }
}

/// Why a digest check did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DigestProblem {
    /// The bytes hash to this instead.
    Mismatch(String),
    /// Not `algorithm:hex` with an algorithm gpudeck knows.
    Unsupported(String),
}

/// The digest a registry would give these bytes (`sha256:<hex>`).
pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
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
        assert!(!platform("linux", "arm", Some("v6")).runs_on(&platform(
            "linux",
            "arm",
            Some("v7")
        )));
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
}
