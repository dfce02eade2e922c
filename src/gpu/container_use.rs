//! What a container's processes hold on the GPUs, from the samples' process lists (each
//! process's container read from its cgroup): the one reading behind the Containers tab and
//! `gpudeck containers`, so the two never disagree.

use serde::Serialize;

use super::types::GpuSample;

/// The GPUs a container's processes run on and the GPU memory they hold there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ContainerGpuUse {
    /// The GPUs (as `gpudeck gpus` numbers them) with one of its processes, ascending.
    pub gpus: Vec<u32>,
    /// The memory its processes hold, summed over every GPU; processes whose memory the driver
    /// does not report (MIG, some consumer boards) add nothing.
    pub memory_bytes: u64,
    /// How many of its processes hold a GPU context.
    pub processes: usize,
}

/// The use of the container whose full id is `container_id`; `None` when none of its processes
/// is on a GPU.
pub fn container_gpu_use<'a>(
    samples: impl IntoIterator<Item = &'a GpuSample>,
    container_id: &str,
) -> Option<ContainerGpuUse> {
    let mut usage = ContainerGpuUse::default();
    let procs = samples
        .into_iter()
        .flat_map(|s| &s.processes)
        .filter(|p| p.container.as_ref().is_some_and(|c| c.id == container_id));
    for p in procs {
        usage.processes += 1;
        usage.memory_bytes += p.used_memory_bytes.unwrap_or(0);
        usage.gpus.push(p.gpu_index);
    }
    usage.gpus.sort_unstable();
    usage.gpus.dedup();
    (usage.processes > 0).then_some(usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::types::{GpuProcess, ProcessKind};
    use crate::host::{ContainerRef, ContainerRuntime};

    fn process(gpu: u32, container: Option<&str>, bytes: Option<u64>) -> GpuProcess {
        GpuProcess {
            gpu_index: gpu,
            pid: 100 + gpu,
            kind: ProcessKind::Compute,
            used_memory_bytes: bytes,
            user: None,
            command: None,
            container: container.map(|id| ContainerRef {
                runtime: ContainerRuntime::Docker,
                id: id.to_string(),
            }),
            identity: None,
            gpu_util: None,
            cpu_pct: None,
            host_memory_bytes: None,
        }
    }

    fn sample(processes: Vec<GpuProcess>) -> GpuSample {
        GpuSample {
            processes,
            ..GpuSample::default()
        }
    }

    #[test]
    fn a_container_without_a_gpu_grant_still_shows_the_gpus_its_processes_hold() {
        let a = "a".repeat(64);
        let b = "b".repeat(64);
        let gib = 1u64 << 30;
        let samples = [
            sample(vec![
                process(0, Some(&a), Some(30 * gib)),
                process(0, None, Some(gib)),
            ]),
            sample(vec![process(1, Some(&b), Some(gib))]),
            sample(vec![
                process(2, Some(&a), Some(21 * gib)),
                process(2, Some(&a), None),
            ]),
        ];
        assert_eq!(
            container_gpu_use(&samples, &a),
            Some(ContainerGpuUse {
                gpus: vec![0, 2],
                memory_bytes: 51 * gib,
                processes: 3,
            })
        );
        assert_eq!(
            container_gpu_use(&samples, &b).map(|u| u.gpus),
            Some(vec![1])
        );
        assert_eq!(container_gpu_use(&samples, &"c".repeat(64)), None);
        assert_eq!(container_gpu_use(&samples, &a[..12]), None, "full ids only");
    }
}
