//! Reading images from their registry without pulling them: manifests, this platform's image, its config, auth.

mod challenge;
mod client;
pub mod endpoint;
mod error;
mod manifest;
mod remote;
mod tags;

pub use endpoint::{served_over_http, FetchOptions, DEFAULT_TIMEOUT, DOCKER_HUB_API};
pub use error::RemoteError;
pub use manifest::Platform;
pub use remote::{fetch_config, fetch_tags, RemoteImage};
pub use tags::TagListing;
