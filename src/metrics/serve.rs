//! `gpudeck serve`: the GPU collector feeding the metrics endpoint until SIGINT or SIGTERM.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::feed::MetricsFeed;
use crate::gpu::collector::{self, GpuUpdate, Opener};
use crate::gpu::GpuError;
use crate::host::ProcessTable;

/// What the collector behind the endpoint needs.
pub struct ServeSetup {
    pub open_gpus: Opener,
    pub processes: Arc<dyn ProcessTable>,
    pub interval: Duration,
}

/// Feeds the endpoint from the collector's samples until `stop` is cancelled, calling
/// `on_serving` once the first sample is in (so "serving" is said only once there is something
/// to serve). Fails when the GPU source cannot be opened, since there would be nothing to serve.
pub async fn run(
    mut feed: MetricsFeed,
    setup: ServeSetup,
    stop: CancellationToken,
    on_serving: impl FnOnce(&MetricsFeed),
) -> Result<(), GpuError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let _collector =
        collector::spawn_reading_health(setup.open_gpus, setup.processes, setup.interval, tx, true);
    let mut on_serving = Some(on_serving);
    loop {
        let update = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            update = rx.recv() => update,
        };
        match update {
            Some(GpuUpdate::Failed(e)) => return Err(e),
            Some(update) => {
                feed.observe(&update);
                if matches!(update, GpuUpdate::Sampled(_)) {
                    if let Some(say) = on_serving.take() {
                        say(&feed);
                    }
                }
            }
            None => return Ok(()),
        }
    }
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
