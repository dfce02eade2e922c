//! MIG mode of one GPU: current and pending mode, its instances (profile, placement, ids,
//! UUID, name), what each runs, and how busy that keeps the instance and the whole GPU.

use crate::device::SimDevice;
use crate::hash::{hash, tag};
use crate::knobs::MigWorkload;
use crate::mig_profiles::{
    find_mig_profile, gpu_instance_id, place, MigProfile, COMPUTE_SLICES, MEMORY_SLICES,
};
use crate::process::{processes, SimProcess, SIM_PID_BASE};
use crate::profile::MIB;
use crate::spec::SimSpec;
use crate::workload::{activity, Activity, Phase, Role};

/// Memory a MIG device reports used with nothing running on it (the `nvidia-smi` MIG devices
/// table of an idle H100 shows 15MiB of each 9984MiB slice in use).
pub const MIG_IDLE_MIB: u64 = 15;

/// The MIG state of one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct SimMig {
    /// MIG mode is on now.
    pub current: bool,
    /// MIG mode after the next GPU reset; differs from `current` while a change is pending.
    pub pending: bool,
    /// The MIG devices, in MIG device index order (by GPU instance ID); empty with MIG off.
    pub instances: Vec<SimMigInstance>,
}

/// One MIG device: a GPU instance with its one full-size compute instance.
#[derive(Debug, Clone, PartialEq)]
pub struct SimMigInstance {
    /// MIG device index under its GPU (`nvmlDeviceGetMigDeviceHandleByIndex`): dense, in GPU
    /// instance ID order.
    pub index: u32,
    pub profile: &'static MigProfile,
    /// First memory slice of its placement.
    pub placement: u32,
    pub gpu_instance_id: u32,
    /// Always 0: the instance holds one compute instance spanning it (`nvidia-smi mig -cgi … -C`).
    pub compute_instance_id: u32,
    /// `MIG-xxxxxxxx-xxxx-5xxx-xxxx-xxxxxxxxxxxx`, as drivers since R470 name MIG devices.
    pub uuid: String,
    /// The parent's name and the profile: `NVIDIA H100 80GB HBM3 MIG 3g.40gb`.
    pub name: String,
    pub memory_total_bytes: u64,
    pub workload: MigWorkload,
}

impl SimMig {
    /// The MIG state of `device` from `spec`; None on boards that cannot do MIG.
    pub(crate) fn build(spec: &SimSpec, device: &SimDevice) -> Option<SimMig> {
        if !device.mig_capable {
            return None;
        }
        let index = device.index;
        let wanted = spec.mig_of(index);
        let mut instances = Vec::new();
        if let Some(wanted) = wanted {
            let profiles: Vec<&'static MigProfile> = wanted
                .iter()
                .filter_map(|w| find_mig_profile(device.profile, &w.profile))
                .collect();
            // The spec was validated, so every profile exists and the mix fits.
            let starts = place(&profiles).unwrap_or_default();
            for ((w, p), start) in wanted.iter().zip(&profiles).zip(starts) {
                let gi = gpu_instance_id(p.memory_slices, start);
                instances.push(SimMigInstance {
                    index: 0,
                    profile: p,
                    placement: start,
                    gpu_instance_id: gi,
                    compute_instance_id: 0,
                    uuid: mig_uuid(spec.seed, index, gi),
                    name: format!("{} MIG {}", device.name, p.name),
                    memory_total_bytes: p.memory_mib * MIB,
                    workload: w.workload,
                });
            }
        }
        instances.sort_by_key(|i| i.gpu_instance_id);
        for (k, inst) in instances.iter_mut().enumerate() {
            inst.index = k as u32;
        }
        Some(SimMig {
            current: wanted.is_some(),
            pending: spec.mig_pending_of(index),
            instances,
        })
    }

    /// The instance with MIG device index `index`.
    pub fn instance(&self, index: u32) -> Option<&SimMigInstance> {
        self.instances.get(index as usize)
    }

    /// The instance with GPU instance ID `gpu_instance_id`.
    pub fn by_gpu_instance(&self, gpu_instance_id: u32) -> Option<&SimMigInstance> {
        self.instances
            .iter()
            .find(|i| i.gpu_instance_id == gpu_instance_id)
    }
}

/// A MIG device UUID: 128 seeded bits in the "8-4-4-4-12" form, version nibble 5 as on real
/// drivers.
fn mig_uuid(seed: u64, gpu: u32, gi: u32) -> String {
    let hi = hash(seed, &[tag::MIG, u64::from(gpu), u64::from(gi), 1]);
    let lo = hash(seed, &[tag::MIG, u64::from(gpu), u64::from(gi), 2]);
    format!(
        "MIG-{:08x}-{:04x}-5{:03x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xFFFF,
        hi & 0xFFF,
        (lo >> 48) & 0x3FFF | 0x8000,
        lo & 0xFFFF_FFFF_FFFF
    )
}

/// The role whose rhythm a workload follows.
pub(crate) fn role_of(workload: MigWorkload) -> Role {
    match workload {
        MigWorkload::Idle => Role::Idle,
        MigWorkload::Train => Role::Train { rank: 0, ranks: 1 },
        MigWorkload::Shared => Role::Shared,
        MigWorkload::Serve => Role::Serve,
    }
}

/// Each instance's jobs keep their own rhythm: a seed of their own.
pub(crate) fn instance_seed(seed: u64, gpu: u32, inst: &SimMigInstance) -> u64 {
    hash(
        seed,
        &[tag::MIG, u64::from(gpu), u64::from(inst.gpu_instance_id)],
    )
}

/// A distinct noise key per instance (never a real GPU index).
fn noise_index(gpu: u32, inst: &SimMigInstance) -> u32 {
    1000 + gpu * 16 + inst.gpu_instance_id
}

/// How busy instance `inst` of GPU `gpu` is at second `s`.
pub(crate) fn instance_activity(seed: u64, gpu: u32, inst: &SimMigInstance, s: i64) -> Activity {
    activity(
        instance_seed(seed, gpu, inst),
        noise_index(gpu, inst),
        role_of(inst.workload),
        s,
    )
}

/// How busy the whole GPU is at second `s`: SM and power figures weighted by compute slices,
/// memory-bus figures by memory slices, PCIe traffic summed.
pub(crate) fn gpu_activity(seed: u64, gpu: u32, mig: &SimMig, s: i64) -> Activity {
    let mut total = Activity {
        phase: Phase::Idle,
        util: 0.0,
        mem_util: 0.0,
        intensity: 0.0,
        rx_kbps: 0.0,
        tx_kbps: 0.0,
        active: false,
    };
    let mut biggest = 0;
    for inst in &mig.instances {
        let a = instance_activity(seed, gpu, inst, s);
        let compute = f64::from(inst.profile.compute_slices) / f64::from(COMPUTE_SLICES);
        let memory = f64::from(inst.profile.memory_slices) / f64::from(MEMORY_SLICES);
        total.util += a.util * compute;
        total.intensity += a.intensity * compute;
        total.mem_util += a.mem_util * memory;
        total.rx_kbps += a.rx_kbps;
        total.tx_kbps += a.tx_kbps;
        total.active |= a.active;
        if a.active && inst.profile.compute_slices > biggest {
            biggest = inst.profile.compute_slices;
            total.phase = a.phase;
        }
    }
    total
}

/// The processes instance `inst` of GPU `device` runs at second `s`, tagged with its
/// instance ids; `extra` are `pids=` processes placed in it.
pub(crate) fn instance_processes(
    seed: u64,
    device: &SimDevice,
    inst: &SimMigInstance,
    s: i64,
    extra: &[u32],
) -> Vec<SimProcess> {
    let slice = SimDevice {
        index: noise_index(device.index, inst),
        memory_total_bytes: inst.memory_total_bytes,
        memory_reserved_bytes: 0,
        display_active: false,
        ..device.clone()
    };
    let own = instance_seed(seed, device.index, inst);
    let base = SIM_PID_BASE + (hash(seed, &[tag::PID]) % 90_000) as u32 * 10;
    let mut out = processes(own, &slice, role_of(inst.workload), s, extra);
    let mut k = 0;
    for p in &mut out {
        if p.pid >= SIM_PID_BASE {
            // Pids of their own, clear of the whole-GPU jobs' (base + 3 .. base + 80).
            p.pid = base + 100 + device.index * 64 + inst.gpu_instance_id * 4 + k;
            k += 1;
        }
        p.instance = Some((inst.gpu_instance_id, inst.compute_instance_id));
    }
    out
}

/// Memory instance `inst` reports in use: its processes' plus the idle overhead.
pub(crate) fn instance_memory_used(inst: &SimMigInstance, procs: &[SimProcess]) -> u64 {
    let used: u64 = procs.iter().map(|p| p.used_memory_bytes).sum();
    (used + MIG_IDLE_MIB * MIB).min(inst.memory_total_bytes)
}
