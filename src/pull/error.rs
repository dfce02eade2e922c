//! Why a pull failed, told apart from the Engine's messages and explained with a title and a fix.

use thiserror::Error;

use crate::image::ImageRef;

/// A failed pull, in the terms a user can act on.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PullError {
    #[error(
        "{image} was not found: the repository does not exist or you may not pull it ({detail})"
    )]
    UnknownImage {
        image: String,
        registry: String,
        detail: String,
    },
    #[error("{image} has no tag `{tag}` ({detail})")]
    UnknownTag {
        image: String,
        tag: String,
        /// Tags the registry offers, when it could be asked (empty otherwise).
        available: Vec<String>,
        detail: String,
    },
    #[error("the registry {registry} cannot be reached: {detail}")]
    RegistryUnreachable { registry: String, detail: String },
    #[error("the registry {registry} wants credentials: {detail}")]
    AuthRequired { registry: String, detail: String },
    #[error("the Docker Engine ran out of disk space: {detail}")]
    DiskFull { detail: String },
    #[error("the pull was cancelled")]
    Interrupted,
    #[error("the Docker Engine cannot be reached: {detail}")]
    DaemonUnreachable { detail: String },
    #[error("the Docker Engine went away during the pull: {detail}")]
    EngineWentAway { detail: String },
    #[error("the pull failed: {0}")]
    Other(String),
}

impl PullError {
    /// A one-line heading for the pull view.
    pub fn title(&self) -> &'static str {
        match self {
            PullError::UnknownImage { .. } => "Image not found",
            PullError::UnknownTag { .. } => "Tag not found",
            PullError::RegistryUnreachable { .. } => "Registry unreachable",
            PullError::AuthRequired { .. } => "Registry login required",
            PullError::DiskFull { .. } => "No space left for the image",
            PullError::Interrupted => "Pull cancelled",
            PullError::DaemonUnreachable { .. } => "Docker Engine unreachable",
            PullError::EngineWentAway { .. } => "Docker Engine went away",
            PullError::Other(_) => "Pull failed",
        }
    }

    /// What to do about it, in concrete steps.
    pub fn fix(&self) -> String {
        match self {
            PullError::UnknownImage {
                image, registry, ..
            } => format!(
                "Check the spelling of {image} (repository names are lowercase). If the repository is \
                 private, log in first with `docker login {registry}`."
            ),
            PullError::UnknownTag { image, available, .. } if !available.is_empty() => format!(
                "Pick one of the tags {image} has: {}.",
                available.join(", ")
            ),
            PullError::UnknownTag { image, .. } => format!(
                "Check the tag on the registry's page for {image}; tags are case-sensitive and \
                 framework images often end in -gpu, -py3 or -runtime. If the repository name itself \
                 is wrong, the registry reports it the same way."
            ),
            PullError::RegistryUnreachable { registry, .. } => format!(
                "Check the host name and port of {registry}, your network and proxy (the Engine's \
                 HTTPS_PROXY, not your shell's), and that the registry is running. A registry served \
                 over plain HTTP must be listed in `insecure-registries` in /etc/docker/daemon.json."
            ),
            PullError::AuthRequired { registry, .. } => format!(
                "Log in with `docker login {registry}` (gpudeck reads the same ~/.docker/config.json \
                 and credential helpers), then pull again."
            ),
            PullError::DiskFull { .. } => "Free space where the Engine keeps images (`docker info -f \
                 '{{.DockerRootDir}}'`): `docker image prune` removes unused images, `docker system df` \
                 shows what uses the space."
                .to_string(),
            PullError::Interrupted => "No image was created; pull again to start over.".to_string(),
            PullError::DaemonUnreachable { .. } => "Start the Engine (`sudo systemctl start docker`), \
                 check DOCKER_HOST, and that you may use its socket: \
                 `sudo usermod -aG docker $USER`, then log in again."
                .to_string(),
            PullError::EngineWentAway { .. } => "The Engine stopped or restarted during the pull; no \
                 image was made, and the layers it finished stay in its cache. Pull again once \
                 `docker version` answers (the dashboard's r on the Images tab retries it)."
                .to_string(),
            PullError::Other(_) => "Try `docker pull` with the same reference to see the Engine's own \
                 message, and check `journalctl -u docker`."
                .to_string(),
        }
    }

    /// A stable machine-readable name, for JSON output.
    pub fn kind(&self) -> &'static str {
        match self {
            PullError::UnknownImage { .. } => "unknown_image",
            PullError::UnknownTag { .. } => "unknown_tag",
            PullError::RegistryUnreachable { .. } => "registry_unreachable",
            PullError::AuthRequired { .. } => "auth_required",
            PullError::DiskFull { .. } => "disk_full",
            PullError::Interrupted => "interrupted",
            PullError::DaemonUnreachable { .. } => "daemon_unreachable",
            PullError::EngineWentAway { .. } => "engine_went_away",
            PullError::Other(_) => "other",
        }
    }

    /// Classifies an error the Engine reported about pulling `image` (an HTTP error body or a
    /// stream's errorDetail). Transport failures to the Engine itself are not messages and never
    /// come here.
    pub fn from_engine_message(message: &str, image: &ImageRef) -> PullError {
        let lower = message.to_ascii_lowercase();
        let detail = message.trim().to_string();
        let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
        let registry = image.registry_host().to_string();
        if has(&["no space left on device"]) {
            PullError::DiskFull { detail }
        } else if has(&[
            "pull access denied",
            "repository does not exist",
            "name unknown",
            "repository name not known",
        ]) {
            PullError::UnknownImage {
                image: image.familiar_name(),
                registry,
                detail,
            }
        } else if has(&[
            "unauthorized",
            "authentication required",
            "no basic auth credentials",
            "incorrect username or password",
        ]) {
            PullError::AuthRequired { registry, detail }
        } else if has(&["manifest unknown", "not found: manifest"])
            || (lower.starts_with("manifest for") && has(&["not found"]))
        {
            unknown_manifest(image, detail)
        } else if has(&[
            "connection refused",
            "no such host",
            "i/o timeout",
            "timeout",
            "network is unreachable",
            "no route to host",
            "connection reset",
            "server gave http response to https client",
            "tls: ",
            "x509: ",
        ]) {
            PullError::RegistryUnreachable { registry, detail }
        } else {
            PullError::Other(detail)
        }
    }
}

fn unknown_manifest(image: &ImageRef, detail: String) -> PullError {
    match image.effective_tag() {
        Some(tag) if image.digest().is_none() => PullError::UnknownTag {
            image: image.familiar_name(),
            tag: tag.to_string(),
            available: Vec::new(),
            detail,
        },
        _ => PullError::UnknownImage {
            image: image.familiar(),
            registry: image.registry_host().to_string(),
            detail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(message: &str, reference: &str) -> PullError {
        PullError::from_engine_message(message, &ImageRef::parse(reference).unwrap())
    }

    #[test]
    fn engine_messages_are_told_apart() {
        let local = "127.0.0.1:5123/probe/img:nosuch";
        assert!(matches!(
            classify("manifest for 127.0.0.1:5123/probe/img:nosuch not found: manifest unknown: manifest unknown", local),
            PullError::UnknownTag { ref tag, .. } if tag == "nosuch"
        ));
        assert!(matches!(
            classify("pull access denied for nosuchrepo, repository does not exist or may require 'docker login': denied: requested access to the resource is denied", "nosuchrepo"),
            PullError::UnknownImage { ref image, .. } if image == "nosuchrepo"
        ));
        assert!(matches!(
            classify("Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused", "127.0.0.1:1/x"),
            PullError::RegistryUnreachable { ref registry, .. } if registry == "127.0.0.1:1"
        ));
        assert!(matches!(
            classify("Get \"https://nosuch.invalid/v2/\": dial tcp: lookup nosuch.invalid on 10.255.255.53:53: no such host", "nosuch.invalid/x"),
            PullError::RegistryUnreachable { .. }
        ));
        assert!(matches!(
            classify("Head \"http://127.0.0.1:5124/v2/probe/img/manifests/1\": no basic auth credentials", "127.0.0.1:5124/probe/img:1"),
            PullError::AuthRequired { ref registry, .. } if registry == "127.0.0.1:5124"
        ));
        assert!(matches!(
            classify("unauthorized: authentication required", "x"),
            PullError::AuthRequired { .. }
        ));
        assert!(matches!(
            classify("failed to register layer: Error processing tar file(exit status 1): write /blob: no space left on device", "x"),
            PullError::DiskFull { .. }
        ));
        assert!(matches!(
            classify("something else entirely", "x"),
            PullError::Other(_)
        ));
    }

    #[test]
    fn a_missing_manifest_by_digest_is_an_unknown_image() {
        let digest = format!("sha256:{}", "a".repeat(64));
        assert!(matches!(
            classify("manifest unknown: manifest unknown", &format!("x@{digest}")),
            PullError::UnknownImage { .. }
        ));
    }

    #[test]
    fn every_error_has_a_title_a_fix_and_a_kind() {
        let errors = [
            classify("pull access denied", "x"),
            classify("manifest unknown", "x:1"),
            classify("connection refused", "x"),
            classify("unauthorized", "nvcr.io/nvidia/pytorch:24.05-py3"),
            classify("no space left on device", "x"),
            PullError::Interrupted,
            PullError::DaemonUnreachable {
                detail: "socket not found".into(),
            },
            PullError::EngineWentAway {
                detail: "connection reset".into(),
            },
            PullError::Other("?".into()),
        ];
        for error in &errors {
            assert!(
                !error.title().is_empty() && !error.fix().is_empty() && !error.kind().is_empty()
            );
        }
        assert!(
            errors[3].fix().contains("docker login nvcr.io"),
            "{}",
            errors[3].fix()
        );
        let with_tags = PullError::UnknownTag {
            image: "x".into(),
            tag: "2".into(),
            available: vec!["1".into(), "latest".into()],
            detail: String::new(),
        };
        assert_eq!(with_tags.fix(), "Pick one of the tags x has: 1, latest.");
    }
}
