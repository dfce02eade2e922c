//! An image's config read from its registry without pulling layers: tag -> manifest (-> this platform's) -> config.

use std::collections::BTreeMap;

use bollard::auth::DockerCredentials;

use super::client::{Answer, Session};
use super::endpoint::{api_base, FetchOptions};
use super::error::{classify, Refusal, RemoteError};
use super::manifest::{
    manifest_accept, parse_config, parse_manifest, select_platform, sha256_digest, verify_digest,
    DigestProblem, ImageConfig, ImageManifest, Manifest, Platform,
};
use super::tags::{closest_tags, list_tags, TagListing};
use crate::image::{image_facts, ImageFacts, ImageRef, DEFAULT_TAG};

/// How many existing tags an unknown-tag error suggests.
const SUGGESTED_TAGS: usize = 10;

/// What the registry says about an image, read without pulling it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteImage {
    pub reference: ImageRef,
    /// The digest the reference resolves to (a multi-platform index's when there is one): what
    /// `docker pull` prints and `docker images --digests` shows.
    pub manifest_digest: String,
    /// The digest of this platform's manifest, when `manifest_digest` is an index.
    pub platform_manifest_digest: Option<String>,
    /// The image config's digest, which is the image id `docker images` will show once pulled.
    pub config_digest: String,
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
    /// `KEY=value` lines, as `docker inspect` shows them.
    pub env: Vec<String>,
    pub labels: BTreeMap<String, String>,
    /// When the image was built (RFC 3339), if the config says.
    pub created: Option<String>,
    /// The sum of the compressed layer sizes: about what a pull downloads.
    pub compressed_size: u64,
    pub layer_count: usize,
}

impl RemoteImage {
    /// CUDA, cuDNN and framework versions from the env, labels and tag, as for a local image.
    pub fn facts(&self) -> ImageFacts {
        image_facts(&self.env, &self.labels, &[self.reference.familiar()])
    }

    /// The platform the config says the image is built for.
    pub fn platform(&self) -> Platform {
        Platform {
            os: self.os.clone(),
            architecture: self.architecture.clone(),
            variant: self.variant.clone(),
        }
    }

    /// Whether it runs natively here (a single-platform image may be built for another CPU).
    pub fn runs_here(&self) -> bool {
        self.platform().runs_on(&Platform::host())
    }

    fn new(
        reference: &ImageRef,
        digests: (String, Option<String>),
        manifest: &ImageManifest,
        config: ImageConfig,
    ) -> RemoteImage {
        let run = config.config.unwrap_or_default();
        RemoteImage {
            reference: reference.clone(),
            manifest_digest: digests.0,
            platform_manifest_digest: digests.1,
            config_digest: manifest.config.digest.clone(),
            os: config.os,
            architecture: config.architecture,
            variant: config.variant,
            env: run.env.unwrap_or_default(),
            labels: run.labels.unwrap_or_default(),
            created: config.created,
            compressed_size: manifest.layers.iter().map(|l| l.size).sum(),
            layer_count: manifest.layers.len(),
        }
    }
}

/// Reads `image`'s config from its registry (OCI distribution API), picking this machine's
/// platform from a multi-platform index, and checking every digest on the way. Nothing is
/// pulled: a manifest or two and the config blob, each at most a few MiB.
pub async fn fetch_config(
    image: &ImageRef,
    credentials: Option<&DockerCredentials>,
    options: &FetchOptions,
) -> Result<RemoteImage, RemoteError> {
    let timed_out = || RemoteError::Timeout {
        registry: image.registry_host().to_string(),
        timeout: options.timeout,
    };
    tokio::time::timeout(options.timeout, fetch(image, credentials, options))
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

/// The tags of `image`'s repository, or that it does not exist.
pub async fn fetch_tags(
    image: &ImageRef,
    credentials: Option<&DockerCredentials>,
    options: &FetchOptions,
) -> Result<TagListing, RemoteError> {
    let mut session = open(image, credentials, options)?;
    let listing = tokio::time::timeout(options.timeout, list_tags(&mut session)).await;
    listing.unwrap_or_else(|_| {
        Err(RemoteError::Timeout {
            registry: image.registry_host().to_string(),
            timeout: options.timeout,
        })
    })
}

fn open<'a>(
    image: &ImageRef,
    credentials: Option<&'a DockerCredentials>,
    options: &FetchOptions,
) -> Result<Session<'a>, RemoteError> {
    let base = api_base(image, options.plain_http);
    Session::new(base, image.registry_host(), image.repository(), credentials)
}

async fn fetch(
    image: &ImageRef,
    credentials: Option<&DockerCredentials>,
    options: &FetchOptions,
) -> Result<RemoteImage, RemoteError> {
    let mut session = open(image, credentials, options)?;
    let reference = image
        .digest()
        .or(image.effective_tag())
        .unwrap_or(DEFAULT_TAG);
    let top = get_manifest(&mut session, image, reference).await?;
    let top_digest = match image.digest() {
        Some(wanted) => {
            check(&session, &top.body, wanted, "the manifest")?;
            wanted.to_string()
        }
        None => sha256_digest(&top.body),
    };
    let (manifest, platform_digest) = match parse(&session, &top, "the manifest")? {
        Manifest::Image(manifest) => (manifest, None),
        Manifest::Index(index) => {
            let host = Platform::host();
            let entry = select_platform(&index, &host).map_err(|available| {
                RemoteError::NoMatchingPlatform {
                    image: image.familiar(),
                    wanted: host.to_string(),
                    available,
                }
            })?;
            let what = format!("the {host} manifest");
            let answer = get_manifest(&mut session, image, &entry.digest).await?;
            check(&session, &answer.body, &entry.digest, &what)?;
            let Manifest::Image(manifest) = parse(&session, &answer, &what)? else {
                return Err(session.malformed(&what, "an index where an image manifest belongs"));
            };
            (manifest, Some(entry.digest.clone()))
        }
    };
    let config_digest = &manifest.config.digest;
    let config = session
        .get(&format!("blobs/{config_digest}"), "*/*")
        .await?;
    if !config.ok() {
        return Err(session.refused(&classify(config.status, &config.body)));
    }
    check(&session, &config.body, config_digest, "the image config")?;
    let parsed =
        parse_config(&config.body).map_err(|e| session.malformed("the image config", e))?;
    Ok(RemoteImage::new(
        image,
        (top_digest, platform_digest),
        &manifest,
        parsed,
    ))
}

async fn get_manifest(
    session: &mut Session<'_>,
    image: &ImageRef,
    reference: &str,
) -> Result<Answer, RemoteError> {
    let answer = session
        .get(&format!("manifests/{reference}"), &manifest_accept())
        .await?;
    if answer.ok() {
        return Ok(answer);
    }
    match classify(answer.status, &answer.body) {
        Refusal::UnknownManifest(_) => Err(unknown_manifest(session, image, reference).await),
        Refusal::UnknownName(_) => Err(unknown_repository(session, image)),
        other => Err(session.refused(&other)),
    }
}

/// Registries such as distribution 2.8 answer MANIFEST_UNKNOWN for a missing repository as well
/// as a missing tag; only the tag list tells them apart (and offers tags to pick instead).
async fn unknown_manifest(
    session: &mut Session<'_>,
    image: &ImageRef,
    reference: &str,
) -> RemoteError {
    let available = match list_tags(session).await {
        Ok(TagListing::NoSuchRepository) => return unknown_repository(session, image),
        Ok(TagListing::Tags(tags)) => closest_tags(&tags, reference, SUGGESTED_TAGS),
        Err(_) => Vec::new(),
    };
    RemoteError::UnknownTag {
        image: image.familiar_name(),
        reference: reference.to_string(),
        available,
    }
}

fn unknown_repository(session: &Session<'_>, image: &ImageRef) -> RemoteError {
    RemoteError::UnknownRepository {
        image: image.familiar_name(),
        registry: session.registry.clone(),
        repository: session.repository.clone(),
    }
}

fn parse(session: &Session<'_>, answer: &Answer, what: &str) -> Result<Manifest, RemoteError> {
    parse_manifest(&answer.body, answer.content_type.as_deref())
        .map_err(|e| session.malformed(what, e))
}

fn check(
    session: &Session<'_>,
    bytes: &[u8],
    expected: &str,
    what: &str,
) -> Result<(), RemoteError> {
    match verify_digest(bytes, expected) {
        Ok(()) => Ok(()),
        Err(DigestProblem::Mismatch(actual)) => Err(RemoteError::DigestMismatch {
            registry: session.registry.clone(),
            what: what.to_string(),
            expected: expected.to_string(),
            actual,
        }),
        Err(DigestProblem::Unsupported(digest)) => Err(session.malformed(
            what,
            format!("its digest `{digest}` is not sha256 or sha512"),
        )),
    }
}
