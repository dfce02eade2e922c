//! Prometheus metrics: the text format of a sample, the endpoint that serves it, and `gpudeck serve`.

mod families;
pub mod feed;
pub mod render;
pub mod runs;
pub mod serve;
pub mod server;

pub use feed::MetricsFeed;
pub use render::{render, CONTENT_TYPE};
pub use runs::{RunInfo, RunProcess};
pub use server::{bind, Latest, MetricsError, Snapshot};
