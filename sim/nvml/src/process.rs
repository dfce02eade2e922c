//! Process queries: compute/graphics process lists in the v1 and v2/v3 layouts, per-process
//! utilisation samples, and pid -> process name.

use std::ffi::{c_char, c_ulonglong};
use std::os::raw::c_uint;

use gpudeck_sim_model::{Metric, SimProcess};
use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlProcessInfo_t, nvmlProcessInfo_v1_t, nvmlProcessUtilizationSample_t,
    nvmlReturn_t,
};

use crate::ffi::{guard, out, write_str, INSUFFICIENT_SIZE, NOT_FOUND};
use crate::state::{sim, Gpu, Handle};

/// Instance ids reported when MIG is off (nvml.h, `nvmlProcessInfo_v2_t`: "gpuInstanceId is
/// set to 0xFFFFFFFF otherwise").
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

fn v1(p: &SimProcess) -> nvmlProcessInfo_v1_t {
    nvmlProcessInfo_v1_t {
        pid: p.pid,
        usedGpuMemory: p.used_memory_bytes,
    }
}

fn v2(p: &SimProcess) -> nvmlProcessInfo_t {
    nvmlProcessInfo_t {
        pid: p.pid,
        usedGpuMemory: p.used_memory_bytes,
        gpuInstanceId: p.instance.map_or(NO_INSTANCE, |(gi, _)| gi),
        computeInstanceId: p.instance.map_or(NO_INSTANCE, |(_, ci)| ci),
    }
}

/// Which of a device's processes a list call returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Compute contexts, an MPS server's own but not its clients'.
    Compute,
    Graphics,
    /// An MPS server's clients.
    MpsClients,
}

impl Kind {
    fn wants(self, p: &SimProcess) -> bool {
        match self {
            Kind::Compute => !p.graphics && !p.mps_client,
            Kind::Graphics => p.graphics,
            Kind::MpsClients => p.mps_client,
        }
    }
}

/// The live processes of a GPU or MIG device (a MIG handle lists those in its instance, as
/// nvml.h says of the process calls: "Per-instance information can be queried by using
/// specific MIG device handles").
fn processes_of(device: nvmlDevice_t) -> Result<Vec<SimProcess>, nvmlReturn_t> {
    match Handle::of(device)? {
        Handle::Gpu(gpu) => {
            gpu.check(Some(Metric::Processes))?;
            Ok(gpu.sim.processes(gpu.index, gpu.sim.now()))
        }
        Handle::Mig(mig) => {
            mig.instance()?;
            Ok(mig
                .sim
                .instance_processes(mig.gpu, mig.index, mig.sim.now()))
        }
    }
}

/// NVML's two-call list protocol: `*count` holds the caller's capacity on entry and the
/// number of entries on return; a null or short buffer gets INSUFFICIENT_SIZE.
unsafe fn write_list<T>(items: &[T], count: &mut c_uint, buf: *mut T) -> Result<(), nvmlReturn_t>
where
    T: Copy,
{
    let capacity = *count as usize;
    *count = items.len() as c_uint;
    if items.is_empty() {
        return Ok(());
    }
    if buf.is_null() || capacity < items.len() {
        return Err(INSUFFICIENT_SIZE);
    }
    // SAFETY: the caller's buffer holds `capacity >= items.len()` entries.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), buf, items.len()) };
    Ok(())
}

/// The processes of `kind` on `device` in the layout `make` produces.
unsafe fn list<T: Copy>(
    device: nvmlDevice_t,
    kind: Kind,
    count: *mut c_uint,
    buf: *mut T,
    make: fn(&SimProcess) -> T,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::Processes);
    guard(|| {
        let procs = processes_of(device)?;
        let count = unsafe { out(count) }?;
        let items: Vec<T> = procs.iter().filter(|p| kind.wants(p)).map(make).collect();
        unsafe { write_list(&items, count, buf) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_v1_t,
) -> nvmlReturn_t {
    unsafe { list(device, Kind::Compute, count, infos, v1) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v2(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { list(device, Kind::Compute, count, infos, v2) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { list(device, Kind::Compute, count, infos, v2) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_v1_t,
) -> nvmlReturn_t {
    unsafe { list(device, Kind::Graphics, count, infos, v1) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v2(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { list(device, Kind::Graphics, count, infos, v2) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe { list(device, Kind::Graphics, count, infos, v2) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetMPSComputeRunningProcesses_v3(
    device: nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    // The clients of the GPU's MPS server (`mps=`); empty on other GPUs.
    unsafe { list(device, Kind::MpsClients, count, infos, v2) }
}

#[no_mangle]
pub unsafe extern "C" fn nvmlDeviceGetProcessUtilization(
    device: nvmlDevice_t,
    utilization: *mut nvmlProcessUtilizationSample_t,
    count: *mut c_uint,
    last_seen: c_ulonglong,
) -> nvmlReturn_t {
    crate::cost::spend(crate::cost::Call::ProcessUtilization);
    guard(|| {
        let gpu = Gpu::of(device)?;
        let count = unsafe { out(count) }?;
        gpu.check(Some(Metric::Utilization))?;
        gpu.check_not_mig()?;
        let now = gpu.sim.now();
        let stamp = gpu.sim.start_unix_micros() + (now.max(0.0).floor() as u64) * 1_000_000;
        let shares = gpu.sim.process_utilization(gpu.index, now);
        // Samples newer than `last_seen` only, as the driver keeps them: one per process for
        // the simulation's current second.
        if stamp <= last_seen || shares.is_empty() {
            return Err(NOT_FOUND);
        }
        let items: Vec<nvmlProcessUtilizationSample_t> = shares
            .iter()
            .map(|u| nvmlProcessUtilizationSample_t {
                pid: u.pid,
                timeStamp: stamp,
                smUtil: u.sm,
                memUtil: u.mem,
                encUtil: u.enc,
                decUtil: u.dec,
            })
            .collect();
        unsafe { write_list(&items, count, utilization) }
    })
}

/// The name of a host process: argv[0] from /proc, else its comm.
fn host_process_name(pid: u32) -> Option<String> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    if !argv0.is_empty() {
        return Some(String::from_utf8_lossy(argv0).into_owned());
    }
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(comm.trim_end().to_string())
}

#[no_mangle]
pub unsafe extern "C" fn nvmlSystemGetProcessName(
    pid: c_uint,
    name: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let s = sim()?;
        let now = s.now();
        let simulated = (0..s.device_count())
            .flat_map(|i| s.processes(i, now))
            .find(|p| p.pid == pid && !p.name.is_empty())
            .and_then(|p| p.name.split_whitespace().next().map(str::to_string));
        let found = simulated
            .or_else(|| host_process_name(pid))
            .ok_or(NOT_FOUND)?;
        unsafe { write_str(name, length, &found) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_structs_have_the_c_sizes() {
        assert_eq!(std::mem::size_of::<nvmlProcessInfo_v1_t>(), 16);
        assert_eq!(std::mem::size_of::<nvmlProcessInfo_t>(), 24);
    }

    #[test]
    fn list_protocol() {
        let items = [1u32, 2, 3];
        let mut count = 0;
        let r = unsafe { write_list(&items, &mut count, std::ptr::null_mut()) };
        assert_eq!((r, count), (Err(INSUFFICIENT_SIZE), 3));
        let mut buf = [0u32; 5];
        let mut count = 5;
        let r = unsafe { write_list(&items, &mut count, buf.as_mut_ptr()) };
        assert_eq!((r, count, buf), (Ok(()), 3, [1, 2, 3, 0, 0]));
        let mut count = 0;
        let r = unsafe { write_list::<u32>(&[], &mut count, std::ptr::null_mut()) };
        assert_eq!((r, count), (Ok(()), 0));
    }
}
