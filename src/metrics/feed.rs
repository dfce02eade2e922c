//! What keeps the endpoint's latest snapshot current: the collector's updates go through a feed,
//! which adds the live runs and hands the result to the server.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::runs::live_runs;
use super::server::{bind, serve, Latest, MetricsError, Snapshot};
use crate::gpu::collector::GpuUpdate;
use crate::gpu::Inventory;
use crate::runs::{RunIndex, RunStore};

/// A running endpoint and the snapshot it serves; dropping it stops the endpoint.
pub struct MetricsFeed {
    latest: Latest,
    inventory: Option<Arc<Inventory>>,
    /// The run store, read again only where it changed at each sample.
    runs: RunIndex,
    stop: CancellationToken,
    addr: SocketAddr,
}

impl MetricsFeed {
    /// Binds `addr` and starts serving on the current tokio runtime (503 until the first sample).
    pub async fn start(addr: SocketAddr, store: RunStore) -> Result<MetricsFeed, MetricsError> {
        let listener = bind(addr).await?;
        let addr = listener.local_addr().unwrap_or(addr);
        let latest = Latest::default();
        let stop = CancellationToken::new();
        tokio::spawn(serve(listener, latest.clone(), stop.clone()));
        Ok(MetricsFeed {
            latest,
            inventory: None,
            runs: store.index(),
            stop,
            addr,
        })
    }

    /// The address it listens on (the real port when port 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Takes in one collector update; a sample becomes the snapshot scrapes are served from.
    pub fn observe(&mut self, update: &GpuUpdate) {
        match update {
            GpuUpdate::Ready(inventory) => self.inventory = Some(Arc::new((**inventory).clone())),
            GpuUpdate::Failed(_) => {}
            GpuUpdate::Sampled(samples) => {
                if let Some(inventory) = &self.inventory {
                    self.latest.set(Snapshot {
                        inventory: Arc::clone(inventory),
                        samples: samples.clone(),
                        runs: live_runs(&mut self.runs, samples),
                    });
                }
            }
        }
    }
}

impl Drop for MetricsFeed {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
