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
#[path = "manifest_tests.rs"]
mod tests;
