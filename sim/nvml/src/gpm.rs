//! GPU Performance Monitoring: support query, sample buffers, samples of a GPU, MIG device or
//! GPU instance, and metrics between two samples.
//!
//! Structs, versions and metric ids follow nvml.h as shipped in NVIDIA/go-nvml
//! (`gen/nvml/nvml.h`): `nvmlGpmSupport_t` and `nvmlGpmMetricsGet_t` version 1
//! (`NVML_GPM_SUPPORT_VERSION`, `NVML_GPM_METRICS_GET_VERSION`). The metrics array of
//! `nvmlGpmMetricsGet_t` has grown between releases (98, 210, 333 entries), so only the
//! first `numMetrics` entries are read or written.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::os::raw::c_uint;
use std::sync::{Mutex, PoisonError};

use gpudeck_sim_model::{SimGpm, GPM_METRIC_MAX};
use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlGpmMetric_t, nvmlGpmMetricsGet_t, nvmlGpmSample_st, nvmlGpmSample_t,
    nvmlGpmSupport_t, nvmlReturn_t,
};

use crate::ffi::{
    guard, out, ARGUMENT_VERSION_MISMATCH, GPU_IS_LOST, INVALID_ARGUMENT, NOT_SUPPORTED, SUCCESS,
};
use crate::state::{sim, Gpu, Handle};

/// `NVML_GPM_SUPPORT_VERSION` and `NVML_GPM_METRICS_GET_VERSION`.
const GPM_VERSION: c_uint = 1;

/// What a filled sample buffer holds: whose counters, and when they were read.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Taken {
    gpu: u32,
    /// The GPU instance, for a MIG device or `nvmlGpmMigSampleGet`; None for the whole GPU.
    gpu_instance: Option<u32>,
    t: f64,
}

/// Sample buffers handed out and not yet freed, by address; None until first filled.
static SAMPLES: Mutex<Option<HashMap<usize, Option<Taken>>>> = Mutex::new(None);

fn with_samples<R>(f: impl FnOnce(&mut HashMap<usize, Option<Taken>>) -> R) -> R {
    let mut guard = SAMPLES.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(HashMap::new))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmQueryDeviceSupport(
    device: nvmlDevice_t,
    support: *mut nvmlGpmSupport_t,
) -> nvmlReturn_t {
    // GPU or MIG device handle; Hopper and later support GPM, Ampere and Ada do not.
    guard(|| {
        let gpu = parent(device)?;
        let support = unsafe { out(support) }?;
        if support.version != GPM_VERSION {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        support.isSupportedDevice = c_uint::from(gpu.sim.gpm_supported(gpu.index));
        Ok(())
    })
}

/// The GPU a GPU or MIG device handle belongs to, GPU_IS_LOST when it has fallen off the bus.
fn parent(device: nvmlDevice_t) -> Result<Gpu, nvmlReturn_t> {
    let gpu = match Handle::of(device)? {
        Handle::Gpu(gpu) => gpu,
        Handle::Mig(mig) => Gpu {
            sim: mig.sim,
            index: mig.gpu,
        },
    };
    if gpu.sim.is_lost(gpu.index) {
        return Err(GPU_IS_LOST);
    }
    Ok(gpu)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmSampleAlloc(sample: *mut nvmlGpmSample_t) -> nvmlReturn_t {
    guard(|| {
        sim()?;
        let sample = unsafe { out(sample) }?;
        let buffer = Box::into_raw(Box::new(0u64));
        with_samples(|s| s.insert(buffer as usize, None));
        *sample = buffer.cast::<nvmlGpmSample_st>();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmSampleFree(sample: nvmlGpmSample_t) -> nvmlReturn_t {
    guard(|| {
        let known = with_samples(|s| s.remove(&(sample as usize)).is_some());
        if !known {
            return Err(INVALID_ARGUMENT);
        }
        // SAFETY: the address came from `Box::into_raw` in nvmlGpmSampleAlloc and was still
        // registered, so it is freed exactly once.
        drop(unsafe { Box::from_raw(sample.cast::<u64>()) });
        Ok(())
    })
}

/// Fill a registered buffer; INVALID_ARGUMENT for one that was never allocated or is freed.
fn fill(sample: nvmlGpmSample_t, taken: Taken) -> Result<(), nvmlReturn_t> {
    with_samples(|s| match s.get_mut(&(sample as usize)) {
        Some(slot) => {
            *slot = Some(taken);
            Ok(())
        }
        None => Err(INVALID_ARGUMENT),
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmSampleGet(
    device: nvmlDevice_t,
    sample: nvmlGpmSample_t,
) -> nvmlReturn_t {
    // "This API supports the device handle and MIG device handle."
    guard(|| {
        let gpu_instance = match Handle::of(device)? {
            Handle::Mig(mig) => Some(mig.instance()?.gpu_instance_id),
            Handle::Gpu(_) => None,
        };
        let gpu = parent(device)?;
        if !gpu.sim.gpm_supported(gpu.index) {
            return Err(NOT_SUPPORTED);
        }
        fill(
            sample,
            Taken {
                gpu: gpu.index,
                gpu_instance,
                t: gpu.sim.now(),
            },
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmMigSampleGet(
    device: nvmlDevice_t,
    gpu_instance_id: c_uint,
    sample: nvmlGpmSample_t,
) -> nvmlReturn_t {
    // A GPU handle and one of its GPU instance ids: NOT_SUPPORTED without GPM or with MIG
    // off, INVALID_ARGUMENT for an id no instance has.
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(None)?;
        if !gpu.sim.gpm_supported(gpu.index) {
            return Err(NOT_SUPPORTED);
        }
        let mig = gpu
            .sim
            .mig(gpu.index)
            .filter(|m| m.current)
            .ok_or(NOT_SUPPORTED)?;
        mig.by_gpu_instance(gpu_instance_id)
            .ok_or(INVALID_ARGUMENT)?;
        fill(
            sample,
            Taken {
                gpu: gpu.index,
                gpu_instance: Some(gpu_instance_id),
                t: gpu.sim.now(),
            },
        )
    })
}

/// The names and unit NVML gives a metric: (short name, long name, unit).
fn info(id: u32) -> (&'static CStr, &'static CStr, &'static CStr) {
    let pct = c"%";
    match id {
        1 => (c"gr_util", c"Graphics/compute engine utilization", pct),
        2 => (c"sm_util", c"SM utilization", pct),
        3 => (c"sm_occupancy", c"SM occupancy", pct),
        4 => (c"integer_util", c"Integer utilization", pct),
        5 => (c"any_tensor_util", c"Any tensor utilization", pct),
        6 => (c"dfma_tensor_util", c"DFMA tensor utilization", pct),
        7 => (c"hmma_tensor_util", c"HMMA tensor utilization", pct),
        8 => (c"dmma_tensor_util", c"DMMA tensor utilization", pct),
        9 => (c"imma_tensor_util", c"IMMA tensor utilization", pct),
        10 => (c"dram_bw_util", c"DRAM bandwidth utilization", pct),
        11 => (c"fp64_util", c"FP64 utilization", pct),
        12 => (c"fp32_util", c"FP32 utilization", pct),
        13 => (c"fp16_util", c"FP16 utilization", pct),
        20 => (c"pcie_tx", c"PCIe TX bandwidth", c"MiB/sec"),
        21 => (c"pcie_rx", c"PCIe RX bandwidth", c"MiB/sec"),
        _ => (c"", c"", c""),
    }
}

/// Answer one requested metric in place.
fn answer(metric: &mut nvmlGpmMetric_t, values: &SimGpm) {
    let id = metric.metricId;
    match values.metric(id) {
        Some(v) => {
            let (short, long, unit) = info(id);
            metric.nvmlReturn = SUCCESS;
            metric.value = v;
            // NVML owns these strings; callers only read them.
            metric.metricInfo.shortName = short.as_ptr().cast_mut();
            metric.metricInfo.longName = long.as_ptr().cast_mut();
            metric.metricInfo.unit = unit.as_ptr().cast_mut();
        }
        None => {
            metric.nvmlReturn = if id == 0 || id >= GPM_METRIC_MAX {
                INVALID_ARGUMENT
            } else {
                NOT_SUPPORTED
            };
            metric.value = 0.0;
            metric.metricInfo.shortName = std::ptr::null_mut::<c_char>();
            metric.metricInfo.longName = std::ptr::null_mut::<c_char>();
            metric.metricInfo.unit = std::ptr::null_mut::<c_char>();
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlGpmMetricsGet(request: *mut nvmlGpmMetricsGet_t) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        if request.is_null() {
            return Err(INVALID_ARGUMENT);
        }
        // SAFETY: non-null; the caller's struct starts with this header (version, numMetrics,
        // sample1, sample2), whatever the length of its metrics array.
        let (version, count, s1, s2) = unsafe {
            let r = &*request;
            (r.version, r.numMetrics, r.sample1, r.sample2)
        };
        if version != GPM_VERSION {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        if count > GPM_METRIC_MAX {
            return Err(INVALID_ARGUMENT);
        }
        let taken = |sample: nvmlGpmSample_t| {
            with_samples(|all| all.get(&(sample as usize)).copied().flatten())
                .ok_or(INVALID_ARGUMENT)
        };
        let (a, b) = (taken(s1)?, taken(s2)?);
        if (a.gpu, a.gpu_instance) != (b.gpu, b.gpu_instance) {
            return Err(INVALID_ARGUMENT);
        }
        let values = s
            .gpm(a.gpu, a.gpu_instance, a.t, b.t)
            .ok_or(INVALID_ARGUMENT)?;
        // SAFETY: the caller's metrics array holds at least `numMetrics` entries.
        let first = unsafe { std::ptr::addr_of_mut!((*request).metrics) }.cast::<nvmlGpmMetric_t>();
        for i in 0..count as usize {
            answer(unsafe { &mut *first.add(i) }, &values);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpm_structs_have_the_c_layout() {
        // unsigned int, nvmlReturn_t, double and three char pointers.
        assert_eq!(std::mem::size_of::<nvmlGpmMetric_t>(), 40);
        assert_eq!(std::mem::size_of::<nvmlGpmSupport_t>(), 8);
        assert_eq!(std::mem::offset_of!(nvmlGpmMetricsGet_t, metrics), 24);
    }

    #[test]
    fn unknown_and_unmodelled_metrics_say_why() {
        let values = SimGpm::default();
        // SAFETY: all-zero is a valid nvmlGpmMetric_t (null pointers, zero numbers).
        let mut m: nvmlGpmMetric_t = unsafe { std::mem::zeroed() };
        for (id, code) in [
            (2, SUCCESS),
            (60, NOT_SUPPORTED),
            (0, INVALID_ARGUMENT),
            (400, INVALID_ARGUMENT),
        ] {
            m.metricId = id;
            answer(&mut m, &values);
            assert_eq!(m.nvmlReturn, code, "metric {id}");
        }
    }
}
