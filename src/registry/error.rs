//! Why reading an image from its registry failed, told apart from status codes and error bodies, each with a fix.

use std::time::Duration;

use serde::Deserialize;
use thiserror::Error;

/// A failed registry read, in the terms a user can act on. `fix()` says what to do.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RemoteError {
    #[error("the registry {registry} cannot be reached: {detail}")]
    Unreachable { registry: String, detail: String },
    #[error("the registry {registry} wants a login to read {repository} (or the repository does not exist): {detail}")]
    AuthRequired {
        registry: String,
        repository: String,
        detail: String,
    },
    #[error("the registry {registry} refused the saved login for {repository}: {detail}")]
    AuthDenied {
        registry: String,
        repository: String,
        detail: String,
    },
    #[error("{image} was not found: the registry {registry} has no repository {repository}")]
    UnknownRepository {
        image: String,
        registry: String,
        repository: String,
    },
    #[error("{image} has no tag or manifest `{reference}`")]
    UnknownTag {
        image: String,
        reference: String,
        /// Some tags the repository has, when the registry lists them (empty otherwise).
        available: Vec<String>,
    },
    #[error("{image} has no image for {wanted}; it is built for {}", available.join(", "))]
    NoMatchingPlatform {
        image: String,
        wanted: String,
        available: Vec<String>,
    },
    #[error("the registry {registry} did not answer within {timeout:?}")]
    Timeout { registry: String, timeout: Duration },
    #[error("the registry {registry} refuses more requests for now (HTTP 429, rate limit)")]
    RateLimited { registry: String },
    #[error("the registry {registry} sent {what} that cannot be read: {detail}")]
    Malformed {
        registry: String,
        what: String,
        detail: String,
    },
    #[error("the registry {registry} sent {what} whose digest is {actual}, not {expected}")]
    DigestMismatch {
        registry: String,
        what: String,
        expected: String,
        actual: String,
    },
    #[error("the registry {registry} answered HTTP {status} for {what}: {detail}")]
    Unexpected {
        registry: String,
        what: String,
        status: u16,
        detail: String,
    },
}

impl RemoteError {
    /// What to do about it, in concrete steps.
    pub fn fix(&self) -> String {
        match self {
            RemoteError::Unreachable { registry, .. } => format!(
                "Check the host name and port of {registry}, your network and HTTPS_PROXY, and that \
                 the registry is running. A registry served over plain HTTP must be listed in \
                 `insecure-registries` in /etc/docker/daemon.json."
            ),
            RemoteError::AuthRequired { registry, .. } => format!(
                "Check the image name; if the repository is private, log in with \
                 `docker login {registry}` (gpudeck reads the same ~/.docker/config.json)."
            ),
            RemoteError::AuthDenied { registry, .. } => format!(
                "Log in again with `docker login {registry}`: the saved password or token is wrong, \
                 expired, or not allowed to read this repository."
            ),
            RemoteError::UnknownRepository { image, .. } => format!(
                "Check the spelling of {image}: repository names are lowercase, and official Docker \
                 Hub images have no owner (`ubuntu`, not `ubuntu/ubuntu`)."
            ),
            RemoteError::UnknownTag { available, .. } if !available.is_empty() => {
                format!("Pick an existing tag, for example: {}.", available.join(", "))
            }
            RemoteError::UnknownTag { image, .. } => format!(
                "Check the tag on the registry's page for {image}; tags are case-sensitive and \
                 framework images often end in -gpu, -py3 or -runtime."
            ),
            RemoteError::NoMatchingPlatform { available, .. } => format!(
                "Use a tag built for this machine, or run it elsewhere: this one exists for {}.",
                available.join(", ")
            ),
            RemoteError::Timeout { .. } => "Try again; if it keeps happening, check your network \
                 and proxy, or whether the registry is overloaded."
                .to_string(),
            RemoteError::RateLimited { registry } => format!(
                "Wait a while, or log in with `docker login {registry}`: logged-in users get a \
                 higher limit."
            ),
            RemoteError::Malformed { .. } | RemoteError::Unexpected { .. } => "Try again; if it \
                 persists, compare with `docker manifest inspect` and report it to the registry's \
                 operator."
                .to_string(),
            RemoteError::DigestMismatch { .. } => "Do not trust this image's data: try again, and \
                 if the digest still differs, something between you and the registry alters \
                 responses (a proxy or cache)."
                .to_string(),
        }
    }

    /// The registry could not be asked at all (as opposed to answering no), so other sources
    /// of facts may stand in for it.
    pub fn unreachable(&self) -> bool {
        matches!(
            self,
            RemoteError::Unreachable { .. }
                | RemoteError::Timeout { .. }
                | RemoteError::RateLimited { .. }
        )
    }

    /// A stable machine-readable name, for JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            RemoteError::Unreachable { .. } => "registry_unreachable",
            RemoteError::AuthRequired { .. } => "auth_required",
            RemoteError::AuthDenied { .. } => "auth_denied",
            RemoteError::UnknownRepository { .. } => "unknown_repository",
            RemoteError::UnknownTag { .. } => "unknown_tag",
            RemoteError::NoMatchingPlatform { .. } => "no_matching_platform",
            RemoteError::Timeout { .. } => "timeout",
            RemoteError::RateLimited { .. } => "rate_limited",
            RemoteError::Malformed { .. } => "malformed_response",
            RemoteError::DigestMismatch { .. } => "digest_mismatch",
            RemoteError::Unexpected { .. } => "unexpected_status",
        }
    }
}

/// The distribution spec's error body: `{"errors":[{"code":"MANIFEST_UNKNOWN","message":...}]}`.
#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    errors: Vec<ErrorEntry>,
}

#[derive(Debug, Deserialize)]
struct ErrorEntry {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// How a failed answer reads, before it is put in the context of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401, or 403 / DENIED: a login is missing or not enough.
    Unauthorized(String),
    /// NAME_UNKNOWN: the repository does not exist.
    UnknownName(String),
    /// MANIFEST_UNKNOWN, or a 404 without a code: no such tag or manifest.
    UnknownManifest(String),
    RateLimited,
    /// Anything else, with its status and what the registry said.
    Other(u16, String),
}

/// Classifies a non-2xx answer by its error codes first (registries agree on those), then by
/// its status.
pub(crate) fn classify(status: u16, body: &[u8]) -> Refusal {
    let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
    let entries = parsed.map(|b| b.errors).unwrap_or_default();
    let has = |code: &str| entries.iter().any(|e| e.code == code);
    let detail = if entries.is_empty() {
        String::from_utf8_lossy(&body[..body.len().min(200)])
            .trim()
            .to_string()
    } else {
        let said: Vec<String> = entries
            .iter()
            .map(|e| format!("{}: {}", e.code, e.message))
            .collect();
        said.join("; ")
    };
    let detail = if detail.is_empty() {
        format!("HTTP {status}")
    } else {
        detail
    };
    if status == 429 || has("TOOMANYREQUESTS") {
        Refusal::RateLimited
    } else if has("NAME_UNKNOWN") {
        Refusal::UnknownName(detail)
    } else if has("MANIFEST_UNKNOWN") || (status == 404 && entries.is_empty()) {
        Refusal::UnknownManifest(detail)
    } else if status == 401 || status == 403 || has("UNAUTHORIZED") || has("DENIED") {
        Refusal::Unauthorized(detail)
    } else {
        Refusal::Other(status, detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_decide_before_statuses() {
        let body = br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown","detail":{"Tag":"nope"}}]}"#;
        assert_eq!(
            classify(404, body),
            Refusal::UnknownManifest("MANIFEST_UNKNOWN: manifest unknown".into())
        );
        let body = br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}"#;
        assert!(matches!(classify(404, body), Refusal::UnknownName(_)));
        let body = br#"{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}"#;
        assert!(matches!(classify(403, body), Refusal::Unauthorized(_)));
        let body = br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#;
        assert_eq!(
            classify(401, body),
            Refusal::Unauthorized("UNAUTHORIZED: authentication required".into())
        );
    }

    #[test]
    fn statuses_decide_without_codes() {
        assert!(matches!(
            classify(404, b"404 page not found"),
            Refusal::UnknownManifest(_)
        ));
        assert_eq!(classify(429, b""), Refusal::RateLimited);
        assert_eq!(classify(401, b""), Refusal::Unauthorized("HTTP 401".into()));
        assert_eq!(
            classify(502, b"<html>Bad Gateway</html>"),
            Refusal::Other(502, "<html>Bad Gateway</html>".into())
        );
    }

    #[test]
    fn every_error_has_a_fix_and_a_kind() {
        let error = RemoteError::NoMatchingPlatform {
            image: "x:1".into(),
            wanted: "linux/amd64".into(),
            available: vec!["linux/arm64/v8".into(), "linux/s390x".into()],
        };
        assert_eq!(
            error.to_string(),
            "x:1 has no image for linux/amd64; it is built for linux/arm64/v8, linux/s390x"
        );
        assert!(error.fix().contains("linux/arm64/v8"));
        assert_eq!(error.kind(), "no_matching_platform");
        let error = RemoteError::UnknownTag {
            image: "x".into(),
            reference: "2".into(),
            available: vec!["1".into()],
        };
        assert!(error.fix().contains("for example: 1."));
    }
}
