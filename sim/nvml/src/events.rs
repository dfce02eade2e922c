//! The event API: event sets, per-GPU registration, the supported event types, and the
//! blocking wait that delivers the `xid=` errors as critical Xid events when they are raised.
//!
//! An event set handle is an opaque, never-dereferenced address naming an entry of `SETS`, so
//! a freed or foreign handle is INVALID_ARGUMENT instead of a wild pointer. A set receives the
//! Xids of its GPUs raised at or after their registration, each once, in time order.

use std::collections::HashMap;
use std::ffi::c_ulonglong;
use std::os::raw::c_uint;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use gpudeck_sim_model::{Metric, Simulation};
use nvml_wrapper_sys::bindings::{
    self as b, nvmlDevice_t, nvmlEventData_t, nvmlEventSet_st, nvmlEventSet_t, nvmlReturn_t,
};

use crate::ffi::{guard, handle_of, out, NvmlResult, INVALID_ARGUMENT, NOT_SUPPORTED};
use crate::state::{sim, Gpu};

/// NVML_ERROR_TIMEOUT: no event arrived before the timeout.
const TIMEOUT: nvmlReturn_t = b::nvmlReturn_enum_NVML_ERROR_TIMEOUT;

/// `gpuInstanceId`/`computeInstanceId` of an event not attributable to a MIG instance.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

const XID: u64 = b::nvmlEventTypeXidCriticalError as u64;
/// Events every simulated board supports: P-state and clock changes, critical Xids.
const BASE_EVENTS: u64 = (b::nvmlEventTypePState | b::nvmlEventTypeClock) as u64 | XID;
/// Events a board with ECC adds: single and double bit ECC errors, row remapping events.
const ECC_EVENTS: u64 = (b::nvmlEventTypeSingleBitEccError
    | b::nvmlEventTypeDoubleBitEccError
    | b::nvmlEventTypeDramRetirementEvent
    | b::nvmlEventTypeDramRetirementFailure) as u64;

/// One GPU registered in a set: which events, and since when (simulated seconds).
struct Registration {
    gpu: u32,
    mask: u64,
    since: f64,
}

struct EventSet {
    sim: Arc<Simulation>,
    registrations: Vec<Registration>,
    /// Per entry of `sim.xids()`: delivered to this set already.
    delivered: Vec<bool>,
}

impl EventSet {
    fn wants(&self, gpu: u32, at: f64) -> bool {
        self.registrations
            .iter()
            .any(|r| r.gpu == gpu && r.mask & XID != 0 && at >= r.since)
    }

    /// The earliest Xid raised by `now` that this set has yet to deliver.
    fn due(&self, now: f64) -> Option<usize> {
        let xids = self.sim.xids();
        (0..xids.len()).find(|&i| {
            let x = &xids[i];
            !self.delivered[i] && x.at <= now && self.wants(x.gpu, x.at)
        })
    }

    /// When the next Xid this set wants is raised, if time moves and one is left.
    fn next_at(&self, now: f64) -> Option<f64> {
        if self.sim.spec().frozen.is_some() {
            return None;
        }
        self.sim
            .xids()
            .iter()
            .find(|x| x.at > now && self.wants(x.gpu, x.at))
            .map(|x| x.at)
    }
}

static SETS: Mutex<Option<HashMap<usize, EventSet>>> = Mutex::new(None);
static NEXT_SET: AtomicUsize = AtomicUsize::new(1);

fn sets() -> MutexGuard<'static, Option<HashMap<usize, EventSet>>> {
    SETS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Run `f` on the set named by `handle`; INVALID_ARGUMENT when there is none.
fn with_set<T>(
    handle: nvmlEventSet_t,
    f: impl FnOnce(&mut EventSet) -> Result<T, nvmlReturn_t>,
) -> Result<T, nvmlReturn_t> {
    let mut guard = sets();
    let set = guard
        .as_mut()
        .and_then(|m| m.get_mut(&(handle as usize)))
        .ok_or(INVALID_ARGUMENT)?;
    f(set)
}

/// The event types GPU `gpu` supports.
fn supported(gpu: &Gpu) -> u64 {
    if gpu.sim.is_supported(Metric::Ecc) {
        BASE_EVENTS | ECC_EVENTS
    } else {
        BASE_EVENTS
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut nvmlEventSet_t) -> nvmlReturn_t {
    guard(|| {
        let sim = sim()?;
        let set = unsafe { out(set) }?;
        // Addresses of 16-byte steps from 0x1000 up: never null, never dereferenced.
        let key = 0x1000 + NEXT_SET.fetch_add(1, Ordering::Relaxed) * 16;
        sets().get_or_insert_with(HashMap::new).insert(
            key,
            EventSet {
                delivered: vec![false; sim.xids().len()],
                sim,
                registrations: Vec::new(),
            },
        );
        *set = std::ptr::without_provenance_mut::<nvmlEventSet_st>(key);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetFree(set: nvmlEventSet_t) -> nvmlReturn_t {
    guard(|| {
        let removed = sets()
            .as_mut()
            .and_then(|m| m.remove(&(set as usize)))
            .is_some();
        sim()?;
        if removed {
            Ok(())
        } else {
            Err(INVALID_ARGUMENT)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSupportedEventTypes(
    device: nvmlDevice_t,
    types: *mut c_ulonglong,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(Some(Metric::Events))?;
        *unsafe { out(types) }? = supported(&gpu);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceRegisterEvents(
    device: nvmlDevice_t,
    types: c_ulonglong,
    set: nvmlEventSet_t,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(Some(Metric::Events))?;
        if types & !supported(&gpu) != 0 {
            return Err(NOT_SUPPORTED);
        }
        let since = gpu.sim.now();
        with_set(set, |s| {
            match s.registrations.iter_mut().find(|r| r.gpu == gpu.index) {
                Some(r) => r.mask |= types,
                None => s.registrations.push(Registration {
                    gpu: gpu.index,
                    mask: types,
                    since,
                }),
            }
            Ok(())
        })
    })
}

/// Wait up to `timeout_ms` for the next Xid of the set: sleeps until it is raised or the
/// timeout passes, never spinning.
fn wait(set: nvmlEventSet_t, data: *mut nvmlEventData_t, timeout_ms: c_uint) -> NvmlResult {
    let data = unsafe { out(data) }?;
    let deadline = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
    loop {
        sim()?;
        let (event, next_in) = with_set(set, |s| {
            let now = s.sim.now();
            if let Some(i) = s.due(now) {
                s.delivered[i] = true;
                return Ok((Some(s.sim.xids()[i]), None));
            }
            Ok((None, s.next_at(now).map(|at| at - now)))
        })?;
        if let Some(xid) = event {
            *data = nvmlEventData_t {
                device: handle_of(xid.gpu),
                eventType: XID,
                eventData: xid.xid,
                gpuInstanceId: NO_INSTANCE,
                computeInstanceId: NO_INSTANCE,
            };
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(TIMEOUT);
        }
        let until_next = next_in.map_or(left, |s| {
            Duration::from_secs_f64(s.max(0.0)).max(Duration::from_millis(1))
        });
        std::thread::sleep(left.min(until_next));
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: nvmlEventSet_t,
    data: *mut nvmlEventData_t,
    timeout_ms: c_uint,
) -> nvmlReturn_t {
    guard(|| wait(set, data, timeout_ms))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlEventSetWait(
    set: nvmlEventSet_t,
    data: *mut nvmlEventData_t,
    timeout_ms: c_uint,
) -> nvmlReturn_t {
    guard(|| wait(set, data, timeout_ms))
}
