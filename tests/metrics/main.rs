//! `gpudeck serve --metrics`: the endpoint as a scraper sees it, per-run labels, a real
//! Prometheus scraping it, and the Grafana dashboard.
//!
//! One test binary of several (each `tests/*.rs` file would be a binary linking the whole
//! program); each module here was once a binary of its own. Helpers are shared in `tests/support`.

// Helpers outside `#[test]` functions unwrap too: clippy.toml's allow-unwrap-in-tests covers
// only the test functions themselves.
#![allow(clippy::unwrap_used)]

#[path = "../support/mod.rs"]
mod support;

mod metrics_grafana;
mod metrics_health;
mod metrics_prometheus;
mod metrics_runs;
mod metrics_serve;
