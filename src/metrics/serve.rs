//! `gpudeck serve`: the GPU collector feeding the metrics endpoint until SIGINT or SIGTERM.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::runs::live_runs;
use super::server::{serve, Latest, Snapshot};
use crate::gpu::collector::{self, GpuUpdate, Opener};
use crate::gpu::{GpuError, Inventory};
use crate::host::ProcessTable;
use crate::runs::RunStore;

/// What the collector behind the endpoint needs.
pub struct ServeSetup {
    pub open_gpus: Opener,
    pub processes: Arc<dyn ProcessTable>,
    pub interval: Duration,
    pub store: RunStore,
}

/// Serves `listener` from the collector's samples until `stop` is cancelled. Fails when the GPU
/// source cannot be opened, since there would be nothing to serve.
pub async fn run(
    listener: TcpListener,
    setup: ServeSetup,
    stop: CancellationToken,
) -> Result<(), GpuError> {
    let latest = Latest::default();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let _collector = collector::spawn(setup.open_gpus, setup.processes, setup.interval, tx);
    let server = tokio::spawn(serve(listener, latest.clone(), stop.clone()));
    let mut inventory: Option<Arc<Inventory>> = None;
    let outcome = loop {
        let update = tokio::select! {
            () = stop.cancelled() => break Ok(()),
            update = rx.recv() => update,
        };
        match update {
            Some(GpuUpdate::Ready(inv)) => inventory = Some(Arc::new(*inv)),
            Some(GpuUpdate::Failed(e)) => break Err(e),
            Some(GpuUpdate::Sampled(samples)) => {
                if let Some(inventory) = &inventory {
                    let runs = live_runs(&setup.store, &samples);
                    latest.set(Snapshot {
                        inventory: Arc::clone(inventory),
                        samples,
                        runs,
                    });
                }
            }
            None => break Ok(()),
        }
    };
    stop.cancel();
    let _ = server.await;
    outcome
}

/// Cancels `stop` on the first SIGINT or SIGTERM.
pub async fn cancel_on_signal(stop: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("could not install the signal handlers; stop gpudeck serve with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        () = stop.cancelled() => {}
    }
    stop.cancel();
}
