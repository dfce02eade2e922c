//! The GPU memory a service's own processes hold: its processes (a notebook's kernels included)
//! or its containers, found among the processes NVML lists on the GPUs. The one reading behind
//! the Services tab and `gpudeck services`, so the two never disagree; another user's job on the
//! same GPU is not the service's.

use crate::gpu::GpuSample;
use crate::runs::Run;

/// What a live service's processes are recognised by on the GPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnProcesses {
    /// Its containers' full ids (a service in an image).
    pub containers: Vec<String>,
    /// Its processes on this machine: its process group, and those that left it but carry its
    /// run id (JupyterLab starts each kernel in a session of its own).
    pub pids: Vec<u32>,
}

impl OwnProcesses {
    /// The processes of `run` now. Scans /proc for a service on this machine, so call it at
    /// the rate services are looked at.
    pub fn of(run: &Run) -> OwnProcesses {
        let record = &run.record;
        match &record.container {
            Some(container) => OwnProcesses {
                containers: container
                    .containers
                    .iter()
                    .filter_map(|c| c.id.clone())
                    .collect(),
                pids: Vec::new(),
            },
            None => {
                let supervisor: Vec<u32> = record.supervisor.iter().map(|s| s.pid).collect();
                let group = record.process_group.map(|g| g.pid);
                OwnProcesses {
                    containers: Vec::new(),
                    pids: crate::runs::run_processes(&record.id, group, &supervisor),
                }
            }
        }
    }

    /// The GPU memory its processes hold in `samples`, summed over every GPU: `Some(0)` when
    /// none of them is on a GPU; `None` when it has no process or container to recognise, or
    /// when one is on a GPU but the driver does not say how much it holds (MIG, some consumer
    /// boards): a sum without it would be too small.
    pub fn memory_on(&self, samples: &[GpuSample]) -> Option<u64> {
        if self.pids.is_empty() && self.containers.is_empty() {
            return None;
        }
        samples
            .iter()
            .flat_map(|s| &s.processes)
            .filter(|p| {
                self.pids.contains(&p.pid)
                    || p.container
                        .as_ref()
                        .is_some_and(|c| self.containers.contains(&c.id))
            })
            .map(|p| p.used_memory_bytes)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{GpuProcess, ProcessKind};
    use crate::host::{ContainerRef, ContainerRuntime};

    fn process(gpu: u32, pid: u32, container: Option<&str>, mib: Option<u64>) -> GpuProcess {
        GpuProcess {
            gpu_index: gpu,
            pid,
            kind: ProcessKind::Compute,
            used_memory_bytes: mib.map(|m| m << 20),
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

    fn samples(processes: Vec<GpuProcess>) -> Vec<GpuSample> {
        let mut by_gpu = vec![GpuSample::default(), GpuSample::default()];
        for p in processes {
            by_gpu[p.gpu_index as usize].processes.push(p);
        }
        by_gpu
    }

    #[test]
    fn only_the_services_own_processes_count_on_every_gpu() {
        let gpus = samples(vec![
            process(0, 100, None, Some(1000)),
            process(0, 200, None, Some(24_000)),
            process(1, 101, None, Some(500)),
            process(1, 300, Some("c0ffee"), Some(7000)),
        ]);
        let host = OwnProcesses {
            containers: Vec::new(),
            pids: vec![100, 101],
        };
        assert_eq!(host.memory_on(&gpus), Some(1500 << 20), "not pid 200's");
        let container = OwnProcesses {
            containers: vec!["c0ffee".into()],
            pids: Vec::new(),
        };
        assert_eq!(container.memory_on(&gpus), Some(7000 << 20));
        let idle = OwnProcesses {
            containers: Vec::new(),
            pids: vec![999],
        };
        assert_eq!(idle.memory_on(&gpus), Some(0), "on no GPU: nothing held");
        let unknown = OwnProcesses::default();
        assert_eq!(unknown.memory_on(&gpus), None, "nothing to recognise it by");
    }

    #[test]
    fn memory_the_driver_does_not_report_makes_the_sum_unknown() {
        let gpus = samples(vec![
            process(0, 100, None, Some(1000)),
            process(1, 101, None, None),
        ]);
        let own = OwnProcesses {
            containers: Vec::new(),
            pids: vec![100, 101],
        };
        assert_eq!(own.memory_on(&gpus), None);
    }
}
