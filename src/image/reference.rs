//! Image references (`[registry/]repository[:tag][@digest]`): parsing by the distribution grammar, normalising and printing.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The registry an image comes from when its reference names none.
pub const DEFAULT_REGISTRY: &str = "docker.io";
/// The tag an image gets when its reference names neither a tag nor a digest.
pub const DEFAULT_TAG: &str = "latest";

const NAME_MAX: usize = 255;
const TAG_MAX: usize = 128;

/// A valid image reference, normalised the way the Docker Engine normalises it: Docker Hub is
/// `registry: None` and its single-component names live under `library/`, so `ubuntu`,
/// `docker.io/ubuntu` and `docker.io/library/ubuntu:latest` are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImageRef {
    registry: Option<String>,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

/// Why a string is not an image reference, worded for the person who typed it.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RefError {
    #[error("the image reference is empty")]
    Empty,
    #[error(
        "uppercase letters are not allowed in repository names: use lowercase (`{suggestion}`)"
    )]
    Uppercase { suggestion: String },
    #[error("`{component}` is not a valid repository path component: use lowercase letters and digits, joined by `.`, `_`, `__` or `-`")]
    InvalidComponent { component: String },
    #[error("the repository path has an empty component (a leading, trailing or doubled `/`)")]
    EmptyComponent,
    #[error("`{host}` is not a valid registry host[:port]")]
    InvalidRegistry { host: String },
    #[error("too many `:`: write `name:tag`, or `host:port/name:tag` for a registry with a port")]
    TooManyColons,
    #[error("tag `{tag}` is invalid: a tag starts with a letter, digit or `_` and holds only letters, digits, `_`, `.` and `-`")]
    InvalidTag { tag: String },
    #[error("tag too long: {length} characters, at most {TAG_MAX}")]
    TagTooLong { length: usize },
    #[error("repository name too long: {length} characters, at most {NAME_MAX}")]
    NameTooLong { length: usize },
    #[error(
        "digest `{digest}` is invalid: expected `sha256:` followed by 64 lowercase hex digits"
    )]
    InvalidDigest { digest: String },
}

impl ImageRef {
    /// Parses a reference as `docker pull` accepts it.
    pub fn parse(input: &str) -> Result<ImageRef, RefError> {
        let input = input.trim();
        if input.is_empty() {
            return Err(RefError::Empty);
        }
        let (rest, digest) = match input.split_once('@') {
            Some((rest, digest)) => (rest, Some(parse_digest(digest)?)),
            None => (input, None),
        };
        let (name, tag) = split_tag(rest)?;
        let (registry, path) = split_registry(name);
        if let Some(host) = registry {
            check_registry(host)?;
        }
        check_path(path)?;
        if name.len() > NAME_MAX {
            return Err(RefError::NameTooLong { length: name.len() });
        }
        Ok(normalise(registry, path, tag, digest))
    }

    /// The registry as written, or `None` for Docker Hub.
    pub fn registry(&self) -> Option<&str> {
        self.registry.as_deref()
    }

    /// The registry host[:port] the image is pulled from; `docker.io` when none is written.
    pub fn registry_host(&self) -> &str {
        self.registry.as_deref().unwrap_or(DEFAULT_REGISTRY)
    }

    /// The repository path inside its registry (`library/ubuntu`, `nvidia/pytorch`).
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag as written, if any.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest as written, if any.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The tag a pull resolves: the written one, or `latest` when neither tag nor digest is given.
    pub fn effective_tag(&self) -> Option<&str> {
        match (&self.tag, &self.digest) {
            (Some(tag), _) => Some(tag),
            (None, None) => Some(DEFAULT_TAG),
            (None, Some(_)) => None,
        }
    }

    /// The full name without tag or digest (`docker.io/library/ubuntu`), for the Engine's `fromImage`.
    pub fn api_image(&self) -> String {
        format!("{}/{}", self.registry_host(), self.repository)
    }

    /// What the Engine's `tag` parameter takes: the digest when there is one (it wins, as in
    /// `docker pull`), else the tag, else `latest`. Never empty: an empty tag pulls every tag.
    pub fn api_tag(&self) -> String {
        self.digest
            .as_deref()
            .or(self.effective_tag())
            .unwrap_or(DEFAULT_TAG)
            .to_string()
    }

    /// The short form people type and `docker images` shows (`ubuntu:latest`, `nvcr.io/nvidia/pytorch:24.05-py3`).
    pub fn familiar(&self) -> String {
        with_suffixes(
            self.familiar_name(),
            self.effective_tag(),
            self.digest.as_deref(),
        )
    }

    /// The short form without tag or digest (`ubuntu`, `nvcr.io/nvidia/pytorch`).
    pub fn familiar_name(&self) -> String {
        match &self.registry {
            None => self
                .repository
                .strip_prefix("library/")
                .filter(|rest| !rest.contains('/'))
                .unwrap_or(&self.repository)
                .to_string(),
            Some(host) => format!("{host}/{}", self.repository),
        }
    }
}

/// The canonical, fully qualified form: `docker.io/library/ubuntu:latest`.
impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = with_suffixes(
            self.api_image(),
            self.effective_tag(),
            self.digest.as_deref(),
        );
        f.write_str(&full)
    }
}

impl FromStr for ImageRef {
    type Err = RefError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ImageRef::parse(s)
    }
}

fn with_suffixes(mut name: String, tag: Option<&str>, digest: Option<&str>) -> String {
    if let Some(tag) = tag {
        name.push(':');
        name.push_str(tag);
    }
    if let Some(digest) = digest {
        name.push('@');
        name.push_str(digest);
    }
    name
}

fn normalise(
    registry: Option<&str>,
    path: &str,
    tag: Option<&str>,
    digest: Option<String>,
) -> ImageRef {
    let registry = registry
        .filter(|host| !matches!(*host, "docker.io" | "index.docker.io"))
        .map(str::to_string);
    let repository = if registry.is_none() && !path.contains('/') {
        format!("library/{path}")
    } else {
        path.to_string()
    };
    ImageRef {
        registry,
        repository,
        tag: tag.map(str::to_string),
        digest,
    }
}

/// Splits `name[:tag]`; a `:` before the last `/` belongs to a registry port.
fn split_tag(rest: &str) -> Result<(&str, Option<&str>), RefError> {
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let Some(colon) = rest[last_slash..].rfind(':').map(|i| i + last_slash) else {
        return Ok((rest, None));
    };
    let (name, tag) = (&rest[..colon], &rest[colon + 1..]);
    if !name.contains('/') && name.contains(':') {
        return Err(RefError::TooManyColons);
    }
    check_tag(tag)?;
    Ok((name, Some(tag)))
}

/// The first component is a registry when it looks like a host: it has a `.` or `:`, or is `localhost`.
fn split_registry(name: &str) -> (Option<&str>, &str) {
    match name.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    }
}

fn check_tag(tag: &str) -> Result<(), RefError> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let valid = tag.chars().next().is_some_and(word)
        && tag.chars().all(|c| word(c) || c == '.' || c == '-');
    if !valid {
        return Err(RefError::InvalidTag {
            tag: tag.to_string(),
        });
    }
    if tag.len() > TAG_MAX {
        return Err(RefError::TagTooLong { length: tag.len() });
    }
    Ok(())
}

fn parse_digest(digest: &str) -> Result<String, RefError> {
    let invalid = || RefError::InvalidDigest {
        digest: digest.to_string(),
    };
    let hex = digest.strip_prefix("sha256:").ok_or_else(invalid)?;
    let lower_hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    if hex.len() != 64 || !hex.chars().all(lower_hex) {
        return Err(invalid());
    }
    Ok(digest.to_string())
}

fn check_registry(host: &str) -> Result<(), RefError> {
    let invalid = || RefError::InvalidRegistry {
        host: host.to_string(),
    };
    let (name_ok, port) = match host.strip_prefix('[') {
        Some(rest) => {
            let (ip, after) = rest.split_once(']').ok_or_else(invalid)?;
            let ip_ok = !ip.is_empty() && ip.chars().all(|c| c.is_ascii_hexdigit() || c == ':');
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or_else(invalid)?),
            };
            (ip_ok, port)
        }
        None => match host.split_once(':') {
            Some((name, port)) => (name.split('.').all(valid_domain_component), Some(port)),
            None => (host.split('.').all(valid_domain_component), None),
        },
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    if name_ok && port_ok {
        Ok(())
    } else {
        Err(invalid())
    }
}

fn valid_domain_component(part: &str) -> bool {
    !part.is_empty()
        && !part.starts_with('-')
        && !part.ends_with('-')
        && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn check_path(path: &str) -> Result<(), RefError> {
    if path.chars().any(|c| c.is_ascii_uppercase()) {
        let lower = path.to_ascii_lowercase();
        if lower.split('/').all(valid_path_component) {
            return Err(RefError::Uppercase { suggestion: lower });
        }
    }
    for component in path.split('/') {
        if component.is_empty() {
            return Err(RefError::EmptyComponent);
        }
        if !valid_path_component(component) {
            return Err(RefError::InvalidComponent {
                component: component.to_string(),
            });
        }
    }
    Ok(())
}

/// `[a-z0-9]+ (([_.]|__|-+) [a-z0-9]+)*`
fn valid_path_component(component: &str) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = component.as_bytes();
    let mut i = 0;
    loop {
        let start = i;
        while i < bytes.len() && alnum(&bytes[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == bytes.len() {
            return true;
        }
        let sep_start = i;
        while i < bytes.len() && !alnum(&bytes[i]) {
            i += 1;
        }
        let separator = &component[sep_start..i];
        let dashes = separator.bytes().all(|b| b == b'-');
        if !(matches!(separator, "." | "_" | "__") || dashes) {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
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
            message.starts_with(
                "uppercase letters are not allowed in repository names: use lowercase"
            ),
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
}
