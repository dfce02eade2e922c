//! The simulated backend of the Xid watcher (`--demo`): the `xid=` errors of the simulation,
//! raised at or after the watch starts, in time order, as NVML's event set delivers them.

use std::sync::Arc;
use std::time::Duration;

use gpudeck_sim_model::{Metric, Simulation};

use super::xid_watch::{no_event_api, RawXid, Watch, XidBackend, XidEvents};

/// Watches the Xids `sim` raises from now on.
pub fn backend(sim: Arc<Simulation>) -> XidBackend {
    Box::new(move |watch: &mut Watch| {
        if !sim.is_supported(Metric::Events) {
            return watch.unavailable(no_event_api("the simulated driver"));
        }
        let now = sim.now();
        let next = sim.xids().iter().take_while(|x| x.at < now).count();
        watch.run(&mut SimXids { sim, next });
    })
}

struct SimXids {
    sim: Arc<Simulation>,
    /// The first of `sim.xids()` not handed out yet.
    next: usize,
}

impl XidEvents for SimXids {
    fn wait(&mut self, timeout: Duration) -> Result<Option<RawXid>, String> {
        let now = self.sim.now();
        let Some(xid) = self.sim.xids().get(self.next).copied() else {
            std::thread::sleep(timeout);
            return Ok(None);
        };
        if xid.at <= now {
            self.next += 1;
            let pci_bus_id = self
                .sim
                .device(xid.gpu)
                .map(|d| d.pci_bus_id.clone())
                .unwrap_or_default();
            return Ok(Some(RawXid {
                pci_bus_id,
                xid: xid.xid,
            }));
        }
        // Frozen time never reaches the next Xid: sleep out the timeout.
        let until = if self.sim.spec().frozen.is_some() {
            timeout
        } else {
            Duration::from_secs_f64(xid.at - now).min(timeout)
        };
        std::thread::sleep(until);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use gpudeck_sim_model::SimSpec;

    use super::*;
    use crate::gpu::sim::SimSource;
    use crate::gpu::source::GpuSource;
    use crate::gpu::xid_watch::{XidUpdate, XidWatcher};

    fn watch(spec: &str) -> (XidWatcher, mpsc::Receiver<XidUpdate>) {
        let mut source = SimSource::new(SimSpec::parse(spec).expect("spec"));
        let gpus = source.inventory().expect("inventory").gpus;
        let (tx, rx) = mpsc::channel();
        let backend = source.xid_backend().expect("the demo has an event API");
        let watcher = XidWatcher::spawn(backend, &gpus, Box::new(move |u| tx.send(u).is_ok()));
        (watcher, rx)
    }

    #[test]
    fn the_demo_raises_its_xids_in_time_order_named_by_bus_id() {
        let (watcher, rx) = watch("gpus=4,xid=2:79@0.3;1:13@0.1");
        let got: Vec<(u32, u64, String)> = (0..2)
            .map(|_| match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(XidUpdate::Event(e)) => (e.gpu, e.xid, e.pci_bus_id),
                other => panic!("expected an Xid, got {other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 13, "00000000:30:00.0".to_string()),
                (2, 79, "00000000:48:00.0".to_string())
            ]
        );
        watcher.stop();
    }

    #[test]
    fn xids_raised_before_the_watch_are_not_live_events() {
        let (watcher, rx) = watch("gpus=2,xid=0:48@0,frozen=5");
        assert!(rx.recv_timeout(Duration::from_millis(600)).is_err());
        watcher.stop();
    }

    #[test]
    fn no_event_api_is_said_once() {
        let (watcher, rx) = watch("gpus=2,unsupported=events");
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(XidUpdate::Unavailable(why)) => assert!(why.contains("no event API"), "{why}"),
            other => panic!("expected unavailable, got {other:?}"),
        }
        assert!(
            rx.recv_timeout(Duration::from_secs(10)).is_err(),
            "said once"
        );
        watcher.stop();
    }
}
