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
#[path = "reference_tests.rs"]
mod tests;
