//! The NVML backend of the Xid watcher: an NVML handle of its own, one event set with the
//! critical Xid event of every GPU that supports it, and NVML's blocking event wait.

use std::ffi::OsString;

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{EventSet, Nvml};

use super::xid_watch::{no_event_api, RawXid, Watch, XidBackend, XidEvents};

/// NVML's eventData for an Xid it could not name.
const UNKNOWN_XID: u64 = 999;

/// Watches the Xids of every GPU NVML (from `library`, else the system's) knows.
pub fn backend(library: Option<OsString>) -> XidBackend {
    Box::new(move |watch: &mut Watch| {
        let mut builder = Nvml::builder();
        if let Some(path) = &library {
            builder.lib_path(path);
        }
        let nvml = match builder.init() {
            Ok(nvml) => nvml,
            Err(e) => {
                return watch.unavailable(format!(
                    "Live Xid events are not available: NVML could not be opened ({e})."
                ))
            }
        };
        let registered = NvmlXids::register(&nvml);
        match registered {
            Ok(mut events) => watch.run(&mut events),
            Err(why) => watch.unavailable(why),
        }
    })
}

/// The event set of the GPUs that take Xid events, and which those are (NVML indices).
struct NvmlXids<'n> {
    nvml: &'n Nvml,
    set: EventSet<'n>,
    gpus: Vec<u32>,
    /// The last wait said a GPU was lost and the set was rebuilt for it.
    rebuilt_for_lost: bool,
}

impl<'n> NvmlXids<'n> {
    fn register(nvml: &'n Nvml) -> Result<Self, String> {
        let count = nvml.device_count().map_err(|e| stopped(&e))?;
        let mut gpus = Vec::new();
        for index in 0..count {
            match xid_supported(nvml, index) {
                Ok(true) => gpus.push(index),
                Ok(false) => tracing::info!(index, "GPU takes no critical Xid events"),
                Err(NvmlError::FailedToLoadSymbol(_)) => return Err(no_event_api("NVML")),
                Err(e) => tracing::info!(index, error = %e, "GPU takes no events"),
            }
        }
        let (set, gpus) = build_set(nvml, gpus)?;
        Ok(NvmlXids {
            nvml,
            set,
            gpus,
            rebuilt_for_lost: false,
        })
    }

    /// A GPU fell off the bus: the set is made again with the GPUs that still answer.
    fn rebuild_without_lost(&mut self) -> Result<(), String> {
        let alive: Vec<u32> = self
            .gpus
            .iter()
            .copied()
            .filter(|&i| xid_supported(self.nvml, i).unwrap_or(false))
            .collect();
        if alive.len() == self.gpus.len() && self.rebuilt_for_lost {
            return Err(stopped(&NvmlError::GpuLost));
        }
        let (set, gpus) = build_set(self.nvml, alive)?;
        self.set = set;
        self.gpus = gpus;
        self.rebuilt_for_lost = true;
        Ok(())
    }
}

impl XidEvents for NvmlXids<'_> {
    fn wait(&mut self, timeout: std::time::Duration) -> Result<Option<RawXid>, String> {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        match self.set.wait(ms) {
            Ok(event) => {
                self.rebuilt_for_lost = false;
                let Some(xid) = event.event_data else {
                    return Ok(None);
                };
                // Identity queries answer even on a GPU that fell off the bus.
                let pci_bus_id = event
                    .device
                    .pci_info()
                    .map(|p| p.bus_id)
                    .unwrap_or_default();
                let xid = match xid {
                    XidError::Value(v) => v,
                    XidError::Unknown => UNKNOWN_XID,
                };
                Ok(Some(RawXid { pci_bus_id, xid }))
            }
            Err(NvmlError::Timeout) => Ok(None),
            Err(NvmlError::GpuLost) => self.rebuild_without_lost().map(|()| None),
            Err(NvmlError::FailedToLoadSymbol(_)) => Err(no_event_api("NVML")),
            Err(e) => Err(stopped(&e)),
        }
    }
}

/// Whether GPU `index` takes critical Xid events.
fn xid_supported(nvml: &Nvml, index: u32) -> Result<bool, NvmlError> {
    let types = nvml.device_by_index(index)?.supported_event_types()?;
    Ok(types.contains(EventTypes::CRITICAL_XID_ERROR))
}

/// An event set with the critical Xid event of each of `gpus` that takes it. NVML frees a set
/// whose registration fails, so a GPU that refuses is left out and the set made again.
fn build_set(nvml: &Nvml, mut gpus: Vec<u32>) -> Result<(EventSet<'_>, Vec<u32>), String> {
    'again: loop {
        if gpus.is_empty() {
            return Err(no_event_api("the NVIDIA driver"));
        }
        let mut set = match nvml.create_event_set() {
            Ok(set) => set,
            Err(NvmlError::FailedToLoadSymbol(_)) => return Err(no_event_api("NVML")),
            Err(e) => return Err(stopped(&e)),
        };
        for (k, &index) in gpus.iter().enumerate() {
            let registered = nvml
                .device_by_index(index)
                .map_err(Into::into)
                .and_then(|d| d.register_events(EventTypes::CRITICAL_XID_ERROR, set));
            match registered {
                Ok(s) => set = s,
                Err(e) => {
                    tracing::info!(index, error = %e.error, "GPU refused Xid events");
                    gpus.remove(k);
                    continue 'again;
                }
            }
        }
        return Ok((set, gpus));
    }
}

/// What a user reads when the event API failed in a way gpudeck cannot work around.
fn stopped(e: &NvmlError) -> String {
    format!(
        "Live Xid events stopped: NVML's event API failed ({e}). Restart gpudeck to watch \
         again; `gpudeck doctor` reads Xids from the kernel log."
    )
}
