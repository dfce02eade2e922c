//! Prometheus metrics: the text format of a sample, the endpoint that serves it (TLS, users and
//! limits from a web configuration), and `gpudeck serve`.

mod auth;
pub mod conns;
mod families;
pub mod feed;
pub mod health;
pub mod render;
pub mod runs;
pub mod serve;
pub mod server;
pub mod web_config;

pub use conns::Limits;
pub use feed::MetricsFeed;
pub use health::XidCounts;
pub use render::{render, render_with, CONTENT_TYPE};
pub use runs::{RunInfo, RunProcess};
pub use server::{bind, Latest, MetricsError, Serving, Snapshot};
pub use web_config::{WebConfig, WebConfigError};
