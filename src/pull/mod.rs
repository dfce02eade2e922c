//! Image pulls as jobs: the GPU image catalog, registry credentials, progress and the CLI twin.

pub mod auth;
pub mod catalog;
pub mod cli;
mod cli_view;
pub mod error;
pub mod job;
pub mod probe;
pub mod progress;

pub use crate::image::{ImageRef, RefError};
pub use auth::{credentials_for, AuthError};
pub use catalog::{Catalog, CatalogEntry, CatalogSource, Framework};
pub use cli::pull_cli;
pub use error::PullError;
pub use job::{start_pull, PullCanceller, PullEvent, PullHandle, PullOutcome};
pub use progress::{LayerProgress, LayerStatus, PullProgress, PullState};
