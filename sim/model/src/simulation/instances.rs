//! The MIG and GPM queries of a running simulation: instances, their processes and memory,
//! and GPM metrics per GPU or GPU instance.

use crate::gpm::{interval_seconds, mean, second_metrics, SimGpm};
use crate::knobs::Metric;
use crate::mig::{instance_activity, instance_memory_used, instance_seed, SimMig, SimMigInstance};
use crate::mig_profiles::{COMPUTE_SLICES, MEMORY_SLICES};
use crate::process::SimProcess;

use super::{live_share, second, Simulation};

impl Simulation {
    /// The MIG state of GPU `index`; None on boards that cannot do MIG.
    pub fn mig(&self, index: u32) -> Option<&SimMig> {
        self.migs.get(index as usize)?.as_ref()
    }

    /// The MIG state of GPU `index` while MIG mode is on.
    pub(super) fn mig_on(&self, index: u32) -> Option<&SimMig> {
        self.mig(index).filter(|m| m.current)
    }

    /// MIG device `mig_index` of GPU `index`, while MIG mode is on.
    pub fn mig_instance(&self, index: u32, mig_index: u32) -> Option<&SimMigInstance> {
        self.mig_on(index)?.instance(mig_index)
    }

    pub(super) fn on_instance(
        &self,
        procs: &[SimProcess],
        inst: &SimMigInstance,
    ) -> Vec<SimProcess> {
        let ids = (inst.gpu_instance_id, inst.compute_instance_id);
        procs
            .iter()
            .filter(|p| p.instance == Some(ids))
            .cloned()
            .collect()
    }

    /// The live processes of MIG device `mig_index` of GPU `index` at `t`.
    pub fn instance_processes(&self, index: u32, mig_index: u32, t: f64) -> Vec<SimProcess> {
        match self.mig_instance(index, mig_index) {
            Some(inst) => self.on_instance(&self.processes(index, t), inst),
            None => Vec::new(),
        }
    }

    /// Memory in use on MIG device `mig_index` of GPU `index` at `t`: its live processes'
    /// and the idle overhead every MIG device shows.
    pub fn instance_memory_used(&self, index: u32, mig_index: u32, t: f64) -> u64 {
        match self.mig_instance(index, mig_index) {
            Some(inst) => instance_memory_used(inst, &self.instance_processes(index, mig_index, t)),
            None => 0,
        }
    }

    /// GPM is there on Hopper boards (architecture 9) unless `unsupported=gpm`; Ampere and
    /// Ada have none.
    pub fn gpm_supported(&self, index: u32) -> bool {
        self.device(index).is_some_and(|d| d.architecture_code >= 9)
            && !self.spec.unsupported.contains(&Metric::Gpm)
    }

    /// GPM metrics of GPU `index` (`gpu_instance` None) or of one of its GPU instances,
    /// averaged over the whole seconds between two samples taken at `t1` and `t2`. None for
    /// an unknown GPU or GPU instance.
    pub fn gpm(&self, index: u32, gpu_instance: Option<u32>, t1: f64, t2: f64) -> Option<SimGpm> {
        let seconds = interval_seconds(second(t1), second(t2));
        let seed = self.spec.seed;
        let live = self.processes(index, t2.max(t1));
        let all = self.all_processes(index, t2.max(t1));
        let ratio = |all: &[SimProcess], live: &[SimProcess]| {
            if all.is_empty() {
                1.0
            } else {
                f64::from(live_share(all, live, 1000)) / 1000.0
            }
        };
        let instance = |inst: &SimMigInstance, s: i64| {
            let act = instance_activity(seed, index, inst, s);
            let key = u64::from(inst.gpu_instance_id) + 100;
            let r = ratio(
                &self.on_instance(&all, inst),
                &self.on_instance(&live, inst),
            );
            second_metrics(instance_seed(seed, index, inst), key, s, &act).scaled(r)
        };
        match (self.mig_on(index), gpu_instance) {
            (Some(mig), Some(gi)) => {
                let inst = mig.by_gpu_instance(gi)?;
                Some(mean(seconds, |s| instance(inst, s)))
            }
            (Some(mig), None) => Some(mean(seconds, |s| {
                let mut sum = SimGpm::default();
                for inst in &mig.instances {
                    let w = f64::from(inst.profile.compute_slices) / f64::from(COMPUTE_SLICES);
                    let mem = f64::from(inst.profile.memory_slices) / f64::from(MEMORY_SLICES);
                    sum.add(&instance(inst, s), w, mem);
                }
                sum
            })),
            (None, Some(_)) => None,
            (None, None) => {
                let role = self.role(index)?;
                let r = ratio(&all, &live);
                Some(mean(seconds, |s| {
                    let act = crate::workload::activity(seed, index, role, s);
                    second_metrics(seed, u64::from(index), s, &act).scaled(r)
                }))
            }
        }
    }
}
