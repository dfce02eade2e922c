//! After a "manifest unknown", asks a plain-HTTP registry whether the repository exists, to tell a wrong name from a wrong tag.
//!
//! Registries such as distribution 2.8 answer MANIFEST_UNKNOWN for a missing repository and a
//! missing tag alike, and the Engine passes that on word for word. Only the registry's tag list
//! can tell them apart. Only registries the Engine itself reaches over plain HTTP (loopback and
//! configured insecure registries) are asked; others are left alone.

use std::time::Duration;

use bollard::auth::DockerCredentials;
use bollard::Docker;

use crate::image::ImageRef;
use crate::registry::{fetch_tags, served_over_http, FetchOptions};

pub use crate::registry::TagListing;

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The repository's tags when the registry is reachable over plain HTTP and answers; `None`
/// whenever it cannot be known (TLS registry, login refused, timeout, anything unexpected).
pub async fn list_tags(
    docker: &Docker,
    image: &ImageRef,
    credentials: Option<&DockerCredentials>,
) -> Option<TagListing> {
    let host = image.registry()?;
    if !served_over_http(docker, host).await {
        return None;
    }
    let options = FetchOptions {
        plain_http: true,
        timeout: PROBE_TIMEOUT,
    };
    fetch_tags(image, credentials, &options).await.ok()
}
