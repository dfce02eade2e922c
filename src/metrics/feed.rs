//! What keeps the endpoint's latest snapshot current: the collector's updates go through a feed,
//! which adds the live runs and hands the result to the server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::conns::Limits;
use super::health::XidCounts;
use super::runs::live_runs;
use super::server::{bind, serve, Latest, MetricsError, Serving, Snapshot};
use super::web_config::WebConfig;
use crate::gpu::collector::GpuUpdate;
use crate::gpu::xid_watch::XidUpdate;
use crate::gpu::Inventory;
use crate::runs::{RunIndex, RunStore};
use crate::services::{look_at_all, services_of, ServiceRow};

/// Where and how to serve: `--metrics ADDR` / `[metrics] listen`, and `--web-config FILE` /
/// `[metrics] web_config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub web_config: Option<PathBuf>,
}

impl Endpoint {
    /// What to warn about before serving: metrics open to the network with no TLS and no users.
    pub fn warning(&self) -> Option<String> {
        if self.addr.ip().is_loopback() || self.web_config.is_some() {
            return None;
        }
        Some(format!(
            "serving metrics on {} without TLS or users: anyone who can reach this port reads \
             them. Give a web configuration (--web-config FILE or [metrics] web_config), or \
             listen on 127.0.0.1",
            self.addr
        ))
    }
}

/// A running endpoint and the snapshot it serves; dropping it stops the endpoint.
pub struct MetricsFeed {
    latest: Latest,
    inventory: Option<Arc<Inventory>>,
    /// The run store, read again only where it changed at each sample.
    runs: RunIndex,
    /// The Xids seen since it started.
    xids: XidCounts,
    /// The services, as the task that looks at them every `SERVICE_LOOK` last saw them.
    services: Arc<std::sync::RwLock<Vec<ServiceRow>>>,
    stop: CancellationToken,
    addr: SocketAddr,
    tls: bool,
}

impl MetricsFeed {
    /// Reads the web configuration, binds the address and starts serving on the current tokio
    /// runtime (503 until the first sample).
    pub async fn start(endpoint: &Endpoint, store: RunStore) -> Result<MetricsFeed, MetricsError> {
        Self::start_with(endpoint, Limits::default(), store).await
    }

    /// `start` with other connection limits.
    pub async fn start_with(
        endpoint: &Endpoint,
        limits: Limits,
        store: RunStore,
    ) -> Result<MetricsFeed, MetricsError> {
        let web = match &endpoint.web_config {
            Some(path) => Some(WebConfig::load(path)?),
            None => None,
        };
        let listener = bind(endpoint.addr).await?;
        let addr = listener.local_addr().unwrap_or(endpoint.addr);
        let latest = Latest::default();
        let stop = CancellationToken::new();
        let tls = web.as_ref().is_some_and(|w| w.tls.is_some());
        let serving = Serving { web, limits };
        tokio::spawn(serve(listener, latest.clone(), serving, stop.clone()));
        let services = Arc::default();
        tokio::spawn(look_at_services(
            store.clone(),
            Arc::clone(&services),
            stop.clone(),
        ));
        Ok(MetricsFeed {
            latest,
            inventory: None,
            runs: store.index(),
            xids: XidCounts::default(),
            services,
            stop,
            addr,
            tls,
        })
    }

    /// Whether it answers over TLS (`https://`).
    pub fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }

    /// The address it listens on (the real port when port 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Takes in one collector update; a sample becomes the snapshot scrapes are served from.
    pub fn observe(&mut self, update: &GpuUpdate) {
        match update {
            GpuUpdate::Ready(inventory) => self.inventory = Some(Arc::new((**inventory).clone())),
            GpuUpdate::Failed(_) | GpuUpdate::Xid(XidUpdate::Unavailable(_)) => {}
            GpuUpdate::Xid(XidUpdate::Event(event)) => self.xids.record(event),
            GpuUpdate::Sampled(samples) => {
                if let Some(inventory) = &self.inventory {
                    self.latest.set(Snapshot {
                        inventory: Arc::clone(inventory),
                        samples: samples.clone(),
                        runs: live_runs(&mut self.runs, samples),
                        xids: self.xids.clone(),
                        services: self.services.read().map(|s| s.clone()).unwrap_or_default(),
                    });
                }
            }
        }
    }
}

/// How often the endpoint looks at the services (each look is one HTTP request or three per
/// live service, on loopback).
const SERVICE_LOOK: std::time::Duration = std::time::Duration::from_secs(15);

/// Looks at the store's services every `SERVICE_LOOK` until `stop`, keeping the rows in `slot`.
async fn look_at_services(
    store: RunStore,
    slot: Arc<std::sync::RwLock<Vec<ServiceRow>>>,
    stop: CancellationToken,
) {
    loop {
        let scan = store.clone();
        let runs = tokio::task::spawn_blocking(move || scan.scan().map(|(runs, _)| runs))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let live: Vec<_> = services_of(runs)
            .into_iter()
            .filter(|r| !r.state().is_finished())
            .collect();
        let rows = look_at_all(&live, crate::runs::now_ms(), None).await;
        if let Ok(mut s) = slot.write() {
            *s = rows;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(SERVICE_LOOK) => {}
        }
    }
}

impl Drop for MetricsFeed {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
