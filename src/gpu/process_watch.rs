//! What only the Processes tab needs, read only while it is shown: each process's share of its
//! GPU (a millisecond-per-GPU NVML call, so on a slower cadence) and its CPU and host memory.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::source::GpuSource;
use super::types::{GpuSample, GpuStatic, ProcessGpuUtil, ProcessUtilSample};
use crate::host::ProcessTable;

/// How often the Processes tab asks for per-process GPU utilisation:
/// `nvmlDeviceGetProcessUtilization` costs about 2.2 ms of CPU per GPU (measured on an H100),
/// twenty times the rest of a tick.
pub const PROCESS_UTIL_EVERY: Duration = Duration::from_secs(3);

/// The per-process readings of one watch (from the tab being shown to it being left).
#[derive(Debug)]
pub struct ProcessWatch {
    every: Duration,
    last_read: Option<Instant>,
    /// Per GPU index: the newest NVML timestamp seen, so each read asks only for newer samples.
    since_us: HashMap<u32, u64>,
    /// Per (GPU index, PID): the share over the last read's window.
    util: HashMap<(u32, u32), ProcessGpuUtil>,
    /// GPUs whose last read failed: their processes show no share rather than a stale one.
    unknown: Vec<u32>,
    /// Per PID: CPU seconds and when they were read, for the next tick's percentage.
    cpu: HashMap<u32, (f64, Instant)>,
}

impl ProcessWatch {
    /// A watch that reads per-process GPU utilisation every `every` (the first read at once).
    pub fn new(every: Duration) -> Self {
        Self {
            every,
            last_read: None,
            since_us: HashMap::new(),
            util: HashMap::new(),
            unknown: Vec::new(),
            cpu: HashMap::new(),
        }
    }

    /// Adds GPU share, CPU percent and host memory to every process of `samples`.
    pub fn apply(
        &mut self,
        gpus: &[GpuStatic],
        samples: &mut [GpuSample],
        source: &mut dyn GpuSource,
        table: &dyn ProcessTable,
        now: Instant,
    ) {
        if self
            .last_read
            .is_none_or(|last| now.duration_since(last) >= self.every)
        {
            self.last_read = Some(now);
            self.read_util(gpus, samples, source);
        }
        let mut cpu = HashMap::new();
        for process in samples.iter_mut().flat_map(|s| s.processes.iter_mut()) {
            if !self.unknown.contains(&process.gpu_index) {
                process.gpu_util = self.util.get(&(process.gpu_index, process.pid)).copied();
            }
            let Some(usage) = table.usage(process.pid) else {
                continue;
            };
            process.host_memory_bytes = usage.rss_bytes;
            process.cpu_pct = self.cpu.get(&process.pid).and_then(|(before, then)| {
                let secs = now.duration_since(*then).as_secs_f64();
                (secs > 0.0).then(|| ((usage.cpu_seconds - before) / secs * 100.0).max(0.0))
            });
            cpu.insert(process.pid, (usage.cpu_seconds, now));
        }
        // Only the processes still listed are remembered: the map never outgrows the GPUs.
        self.cpu = cpu;
    }

    fn read_util(&mut self, gpus: &[GpuStatic], samples: &[GpuSample], source: &mut dyn GpuSource) {
        self.util.clear();
        self.unknown.clear();
        for (gpu, sample) in gpus.iter().zip(samples) {
            if sample.lost || sample.processes.is_empty() {
                continue;
            }
            let since = self.since_us.get(&gpu.index).copied().unwrap_or(0);
            let Some(read) = source.process_utilization(gpu, since) else {
                self.unknown.push(gpu.index);
                continue;
            };
            if let Some(newest) = read.iter().map(|s| s.timestamp_us).max() {
                self.since_us.insert(gpu.index, newest);
            }
            // A listed process without a sample in the window ran nothing on the GPU in it.
            for p in &sample.processes {
                let share = average(read.iter().filter(|s| s.pid == p.pid));
                self.util.insert((gpu.index, p.pid), share);
            }
        }
    }
}

/// The mean of a process's samples (the driver keeps one every few hundred milliseconds).
fn average<'a>(samples: impl Iterator<Item = &'a ProcessUtilSample>) -> ProcessGpuUtil {
    let (mut sum, mut n) = ([0u64; 4], 0u64);
    for s in samples {
        let u = s.util;
        for (acc, v) in sum
            .iter_mut()
            .zip([u.sm_pct, u.mem_pct, u.enc_pct, u.dec_pct])
        {
            *acc += u64::from(v);
        }
        n += 1;
    }
    let mean = |i: usize| u32::try_from(sum[i].checked_div(n).unwrap_or(0)).unwrap_or(u32::MAX);
    ProcessGpuUtil {
        sm_pct: mean(0),
        mem_pct: mean(1),
        enc_pct: mean(2),
        dec_pct: mean(3),
    }
}
