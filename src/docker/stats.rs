//! Live CPU and memory use of a container, computed the way `docker stats` shows them.

use std::collections::HashMap;

use bollard::models::{ContainerMemoryStats, ContainerStatsResponse};
use bollard::query_parameters::StatsOptionsBuilder;
use futures::stream::BoxStream;
use futures::StreamExt;

use super::connect::Engine;
use super::error::DockerError;
use super::types::ContainerStats;

impl Engine {
    /// One sample about every second while the container runs (the engine's own pace).
    pub fn stats(&self, id: &str) -> BoxStream<'static, Result<ContainerStats, DockerError>> {
        let options = StatsOptionsBuilder::new().stream(true).build();
        let engine = self.clone();
        let what = format!("container {id}");
        self.docker
            .stats(id, Some(options))
            .map(move |item| match item {
                Ok(response) => Ok(container_stats(&response)),
                Err(e) => Err(engine.error(e, &what)),
            })
            .boxed()
    }
}

pub(crate) fn container_stats(response: &ContainerStatsResponse) -> ContainerStats {
    let memory = response.memory_stats.as_ref();
    ContainerStats {
        cpu_pct: cpu_percent(response),
        memory_used_bytes: memory.map_or(0, memory_used),
        memory_limit_bytes: memory.and_then(|m| m.limit).unwrap_or(0),
    }
}

/// The container's CPU time over the machine's since the previous sample, times the CPUs:
/// 100% is one CPU busy. 0 for the first sample, which has no previous one.
pub(crate) fn cpu_percent(response: &ContainerStatsResponse) -> f64 {
    let (Some(now), Some(before)) = (&response.cpu_stats, &response.precpu_stats) else {
        return 0.0;
    };
    let total = |s: &bollard::models::ContainerCpuStats| {
        s.cpu_usage
            .as_ref()
            .and_then(|u| u.total_usage)
            .unwrap_or(0)
    };
    let cpu_delta = total(now).saturating_sub(total(before));
    let system_delta = now
        .system_cpu_usage
        .unwrap_or(0)
        .saturating_sub(before.system_cpu_usage.unwrap_or(0));
    let online = match now.online_cpus {
        Some(n) if n > 0 => u64::from(n),
        _ => now
            .cpu_usage
            .as_ref()
            .and_then(|u| u.percpu_usage.as_ref())
            .map_or(0, |per_cpu| per_cpu.len() as u64),
    };
    if cpu_delta == 0 || system_delta == 0 || before.system_cpu_usage.unwrap_or(0) == 0 {
        return 0.0;
    }
    cpu_delta as f64 / system_delta as f64 * online as f64 * 100.0
}

/// Usage minus the page cache the kernel can drop, as `docker stats` counts it: cgroup v1's
/// `total_inactive_file` (older engines: `cache`), cgroup v2's `inactive_file`.
pub(crate) fn memory_used(memory: &ContainerMemoryStats) -> u64 {
    let usage = memory.usage.unwrap_or(0);
    let empty = HashMap::new();
    let stats = memory.stats.as_ref().unwrap_or(&empty);
    let reclaimable = ["total_inactive_file", "inactive_file", "cache"]
        .iter()
        .find_map(|key| stats.get(*key))
        .copied()
        .unwrap_or(0);
    if reclaimable < usage {
        usage - reclaimable
    } else {
        usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::{ContainerCpuStats, ContainerCpuUsage};

    fn cpu(total: u64, system: u64, online: Option<u32>, per_cpu: usize) -> ContainerCpuStats {
        ContainerCpuStats {
            cpu_usage: Some(ContainerCpuUsage {
                total_usage: Some(total),
                percpu_usage: Some(vec![0; per_cpu]),
                ..Default::default()
            }),
            system_cpu_usage: Some(system),
            online_cpus: online,
            throttling_data: None,
        }
    }

    fn sample(now: ContainerCpuStats, before: ContainerCpuStats) -> ContainerStatsResponse {
        ContainerStatsResponse {
            cpu_stats: Some(now),
            precpu_stats: Some(before),
            ..Default::default()
        }
    }

    #[test]
    fn cpu_percent_like_docker_stats() {
        let cases = [
            // The first sample has no previous one.
            (cpu(1_500, 2_000, Some(4), 0), cpu(500, 0, Some(4), 0), 0.0),
            // Half of the machine's time on a 4-CPU box: two CPUs busy.
            (
                cpu(1_500, 3_000, Some(4), 0),
                cpu(500, 1_000, Some(4), 0),
                200.0,
            ),
            (cpu(1_250, 3_000, None, 2), cpu(1_000, 2_000, None, 2), 50.0),
            (
                cpu(1_000, 3_000, Some(2), 0),
                cpu(1_000, 2_000, Some(2), 0),
                0.0,
            ),
        ];
        for (now, before, want) in cases {
            let got = cpu_percent(&sample(now, before));
            assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
        }
    }

    #[test]
    fn memory_leaves_out_reclaimable_cache() {
        let memory = |usage: u64, stats: &[(&str, u64)]| ContainerMemoryStats {
            usage: Some(usage),
            stats: Some(stats.iter().map(|(k, v)| (k.to_string(), *v)).collect()),
            limit: Some(1 << 30),
            ..Default::default()
        };
        let cases = [
            (
                memory(1_000, &[("total_inactive_file", 300), ("cache", 900)]),
                700,
            ),
            (memory(1_000, &[("inactive_file", 100)]), 900),
            (memory(1_000, &[("cache", 400)]), 600),
            (memory(1_000, &[("inactive_file", 5_000)]), 1_000),
            (memory(1_000, &[]), 1_000),
        ];
        for (stats, want) in cases {
            assert_eq!(memory_used(&stats), want, "{stats:?}");
        }
    }
}
