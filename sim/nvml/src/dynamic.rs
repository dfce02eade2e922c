//! Dynamic device queries answered from the current sample: memory, utilisation, temperature,
//! power, energy, clocks, fans, performance state, PCIe link and throughput, throttle reasons.

use std::ffi::c_ulonglong;
use std::os::raw::c_uint;

use gpudeck_sim_model::{reason, Metric, SimDevice, SimSample};
use nvml_wrapper_sys::bindings::{
    self as b, nvmlDevice_t, nvmlMemory_t, nvmlMemory_v2_t, nvmlReturn_t, nvmlUtilization_t,
};

use crate::ffi::{guard, out, NvmlResult, ARGUMENT_VERSION_MISMATCH, INVALID_ARGUMENT};
use crate::state::{Gpu, Handle, MigDevice};

/// `NVML_STRUCT_VERSION(Memory, 2)`: size 40 in the low bits, version 2 in the top byte.
const MEMORY_V2_VERSION: c_uint = 0x0200_0028;

/// Run `body` on the current sample of a live GPU that supports `metric`.
pub(crate) fn with_sample(
    device: nvmlDevice_t,
    metric: Option<Metric>,
    body: impl FnOnce(&SimDevice, &SimSample) -> NvmlResult,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(metric)?;
        body(gpu.device()?, &gpu.sample())
    })
}

/// Run `body` on a live GPU that supports `metric`, for answers that need no sample.
pub(crate) fn with_gpu(
    device: nvmlDevice_t,
    metric: Option<Metric>,
    body: impl FnOnce(&Gpu) -> NvmlResult,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(metric)?;
        body(&gpu)
    })
}

/// Write one value of the current sample to `dst`.
fn value<T>(
    device: nvmlDevice_t,
    metric: Metric,
    dst: *mut T,
    pick: impl FnOnce(&SimDevice, &SimSample) -> T,
) -> nvmlReturn_t {
    with_sample(device, Some(metric), |d, s| {
        *unsafe { out(dst) }? = pick(d, s);
        Ok(())
    })
}

/// Memory of a GPU or MIG device as (total, reserved, used) bytes. A MIG device has its
/// instance's memory (`nvmlDeviceGetMemoryInfo` on a MIG handle, nvml.h) and reserves none.
fn memory_of(device: nvmlDevice_t) -> Result<(u64, u64, u64), nvmlReturn_t> {
    match Handle::of(device)? {
        Handle::Gpu(gpu) => {
            gpu.check(None)?;
            let s = gpu.sample();
            Ok((
                gpu.device()?.memory_total_bytes,
                s.mem_reserved_bytes,
                s.mem_used_bytes,
            ))
        }
        Handle::Mig(mig) => mig_memory(&mig),
    }
}

fn mig_memory(mig: &MigDevice) -> Result<(u64, u64, u64), nvmlReturn_t> {
    let total = mig.instance()?.memory_total_bytes;
    let used = mig
        .sim
        .instance_memory_used(mig.gpu, mig.index, mig.sim.now());
    Ok((total, 0, used))
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_t,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::Memory);
    // The v1 struct counts the reserved memory as used, as real NVML does.
    guard(|| {
        let (total, reserved, used) = memory_of(device)?;
        let m = unsafe { out(memory) }?;
        m.total = total;
        m.used = used + reserved;
        m.free = total.saturating_sub(m.used);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_v2_t,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::Memory);
    guard(|| {
        let (total, reserved, used) = memory_of(device)?;
        let m = unsafe { out(memory) }?;
        if m.version != MEMORY_V2_VERSION {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        m.total = total;
        m.reserved = reserved;
        m.used = used;
        m.free = total.saturating_sub(reserved + used);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: nvmlDevice_t,
    util: *mut nvmlUtilization_t,
) -> nvmlReturn_t {
    guard(|| {
        let gpu = Gpu::of(device)?;
        gpu.check(Some(Metric::Utilization))?;
        gpu.check_not_mig()?;
        let s = gpu.sample();
        *unsafe { out(util) }? = nvmlUtilization_t {
            gpu: s.util_gpu,
            memory: s.util_mem,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetEncoderUtilization(
    device: nvmlDevice_t,
    util: *mut c_uint,
    period_us: *mut c_uint,
) -> nvmlReturn_t {
    with_gpu(device, Some(Metric::Utilization), |gpu| {
        gpu.check_not_mig()?;
        let (util, period) = unsafe { (out(util)?, out(period_us)?) };
        *util = 0;
        *period = 100_000;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetDecoderUtilization(
    device: nvmlDevice_t,
    util: *mut c_uint,
    period_us: *mut c_uint,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetEncoderUtilization(device, util, period_us) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: nvmlDevice_t,
    sensor: b::nvmlTemperatureSensors_t,
    temp: *mut c_uint,
) -> nvmlReturn_t {
    if sensor != b::nvmlTemperatureSensors_enum_NVML_TEMPERATURE_GPU {
        return guard(|| Gpu::of(device).and(Err(INVALID_ARGUMENT)));
    }
    value(device, Metric::Temperature, temp, |_, s| s.temp_c)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(
    device: nvmlDevice_t,
    power: *mut c_uint,
) -> nvmlReturn_t {
    value(device, Metric::Power, power, |_, s| s.power_mw)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(
    device: nvmlDevice_t,
    energy: *mut c_ulonglong,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::Energy);
    value(device, Metric::Power, energy, |_, s| s.energy_mj)
}

/// The current clock of `kind`, or None for an unknown clock type.
fn clock(kind: b::nvmlClockType_t, s: &SimSample) -> Option<c_uint> {
    match kind {
        b::nvmlClockType_enum_NVML_CLOCK_GRAPHICS | b::nvmlClockType_enum_NVML_CLOCK_SM => {
            Some(s.sm_clock_mhz)
        }
        b::nvmlClockType_enum_NVML_CLOCK_MEM => Some(s.mem_clock_mhz),
        b::nvmlClockType_enum_NVML_CLOCK_VIDEO => Some(s.video_clock_mhz),
        _ => None,
    }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: nvmlDevice_t,
    kind: b::nvmlClockType_t,
    mhz: *mut c_uint,
) -> nvmlReturn_t {
    with_sample(device, Some(Metric::Clocks), |_, s| {
        let mhz = unsafe { out(mhz) }?;
        *mhz = clock(kind, s).ok_or(INVALID_ARGUMENT)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetClock(
    device: nvmlDevice_t,
    kind: b::nvmlClockType_t,
    id: b::nvmlClockId_t,
    mhz: *mut c_uint,
) -> nvmlReturn_t {
    with_sample(device, Some(Metric::Clocks), |d, s| {
        let mhz = unsafe { out(mhz) }?;
        *mhz = match id {
            b::nvmlClockId_enum_NVML_CLOCK_ID_CURRENT => clock(kind, s),
            b::nvmlClockId_enum_NVML_CLOCK_ID_APP_CLOCK_TARGET
            | b::nvmlClockId_enum_NVML_CLOCK_ID_APP_CLOCK_DEFAULT
            | b::nvmlClockId_enum_NVML_CLOCK_ID_CUSTOMER_BOOST_MAX => match kind {
                b::nvmlClockType_enum_NVML_CLOCK_GRAPHICS | b::nvmlClockType_enum_NVML_CLOCK_SM => {
                    Some(d.max_sm_clock_mhz)
                }
                b::nvmlClockType_enum_NVML_CLOCK_MEM => Some(d.max_mem_clock_mhz),
                _ => None,
            },
            _ => None,
        }
        .ok_or(INVALID_ARGUMENT)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed_v2(
    device: nvmlDevice_t,
    fan: c_uint,
    speed: *mut c_uint,
) -> nvmlReturn_t {
    with_sample(device, Some(Metric::Fan), |d, s| {
        let speed = unsafe { out(speed) }?;
        if fan >= d.num_fans {
            return Err(INVALID_ARGUMENT);
        }
        *speed = s.fan_percent;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed(
    device: nvmlDevice_t,
    speed: *mut c_uint,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetFanSpeed_v2(device, 0, speed) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPerformanceState(
    device: nvmlDevice_t,
    state: *mut b::nvmlPstates_t,
) -> nvmlReturn_t {
    value(device, Metric::Pstate, state, |_, s| s.pstate)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPowerState(
    device: nvmlDevice_t,
    state: *mut b::nvmlPstates_t,
) -> nvmlReturn_t {
    value(device, Metric::Pstate, state, |_, s| s.pstate)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkGeneration(
    device: nvmlDevice_t,
    gen: *mut c_uint,
) -> nvmlReturn_t {
    value(device, Metric::Pcie, gen, |_, s| s.pcie_gen)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkWidth(
    device: nvmlDevice_t,
    width: *mut c_uint,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::PcieWidth);
    value(device, Metric::Pcie, width, |_, s| s.pcie_width)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetPcieThroughput(
    device: nvmlDevice_t,
    counter: b::nvmlPcieUtilCounter_t,
    kbps: *mut c_uint,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::PcieThroughput);
    with_sample(device, Some(Metric::Pcie), |_, s| {
        let kbps = unsafe { out(kbps) }?;
        *kbps = match counter {
            b::nvmlPcieUtilCounter_enum_NVML_PCIE_UTIL_TX_BYTES => s.pcie_tx_kbps,
            b::nvmlPcieUtilCounter_enum_NVML_PCIE_UTIL_RX_BYTES => s.pcie_rx_kbps,
            _ => return Err(INVALID_ARGUMENT),
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    value(device, Metric::Throttle, reasons, |_, s| s.throttle_reasons)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetCurrentClocksEventReasons(device, reasons) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSupportedClocksEventReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    value(device, Metric::Throttle, reasons, |_, _| reason::SUPPORTED)
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetSupportedClocksThrottleReasons(
    device: nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe { nvmlDeviceGetSupportedClocksEventReasons(device, reasons) }
}
