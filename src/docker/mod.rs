//! The Docker Engine source: connecting, containers, images, events, logs, stats and actions (bollard),
//! and the collector task that feeds the Containers and Images tabs.

mod actions;
pub mod cli;
pub mod collector;
mod connect;
mod containers;
mod error;
mod events;
mod gpus;
mod images;
mod info;
mod logs;
mod render;
mod stats;
mod tasks;
mod time;
pub mod types;
pub mod update;

pub use connect::{resolve_host, Engine, HostSpec, TlsFiles, DEFAULT_HOST, MIN_API};
pub(crate) use error::classify;
pub use error::DockerError;
pub use gpus::gpu_grants;
pub use render::{gpus_summary, render_containers_text, render_images_text, ContainerListing};
pub(crate) use time::unix_seconds;
pub use types::*;
