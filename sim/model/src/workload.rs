//! What each simulated GPU is doing over time: its role, the phase at second `s`, and how busy
//! that keeps the SMs, the memory bus and the PCIe link.

use crate::hash::{range, smooth, tag, unit};

/// The job a GPU runs for the whole simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// One rank of a data-parallel training job spread over several GPUs.
    Train { rank: u32, ranks: u32 },
    /// A fine-tuning job and a notebook kernel sharing one GPU.
    Shared,
    /// An inference server running in a container.
    Serve,
    /// Nothing running.
    Idle,
}

/// What the job on a GPU is doing during one second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Processes start, CUDA contexts are created.
    Launch,
    /// Weights load, memory fills, utilisation climbs.
    Warmup,
    /// Training steps: 85-99 % utilisation.
    Steady,
    /// The input pipeline stalls the GPU for a moment.
    DataLoad,
    /// End-of-epoch validation pass.
    Eval,
    /// Saving a checkpoint: the GPU waits on the host.
    Checkpoint,
    /// An inference server answering requests.
    Serving,
    /// No work.
    #[default]
    Idle,
}

/// How busy a GPU is during one second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Activity {
    pub phase: Phase,
    /// SM busy fraction, 0..1.
    pub util: f64,
    /// Memory-bus busy fraction, 0..1.
    pub mem_util: f64,
    /// Dynamic power as a fraction of (limit - idle); above 1 means the board would exceed
    /// its limit and gets power-capped.
    pub intensity: f64,
    pub rx_kbps: f64,
    pub tx_kbps: f64,
    /// A CUDA context exists (clocks stay up, the GPU is not idle).
    pub active: bool,
}

/// Seconds of the launch and warm-up phases at the start of every job.
pub(crate) const LAUNCH_S: i64 = 6;
pub(crate) const WARMUP_END_S: i64 = 30;
const EVAL_S: i64 = 12;
const CHECKPOINT_S: i64 = 12;

/// The roles of `gpus` GPUs: training ranks first, then the shared GPU, the container, and a
/// couple of idle GPUs at the end.
pub(crate) fn roles(gpus: u32) -> Vec<Role> {
    let idle = match gpus {
        0..=3 => 0,
        4 | 5 => 1,
        _ => 2,
    };
    let serve = u32::from(gpus >= 3);
    let shared = u32::from(gpus >= 2);
    let ranks = gpus.saturating_sub(idle + serve + shared);
    let mut roles: Vec<Role> = (0..ranks).map(|rank| Role::Train { rank, ranks }).collect();
    roles.extend((0..shared).map(|_| Role::Shared));
    roles.extend((0..serve).map(|_| Role::Serve));
    roles.extend((0..idle).map(|_| Role::Idle));
    roles
}

/// The job a role belongs to: training ranks share job 0 so they move in lock-step.
pub(crate) fn job_of(role: Role) -> u64 {
    match role {
        Role::Train { .. } => 0,
        Role::Shared => 1,
        Role::Serve => 2,
        Role::Idle => 3,
    }
}

/// Epoch length and data-loader stall period of a training job.
fn rhythm(seed: u64, job: u64) -> (i64, i64) {
    let epoch = range(seed, &[tag::JOB, job, 1], 150.0, 240.0) as i64;
    let stall = range(seed, &[tag::JOB, job, 2], 13.0, 21.0) as i64;
    (epoch, stall)
}

/// The phase of a training job at second `s`.
pub(crate) fn train_phase(seed: u64, job: u64, s: i64) -> Phase {
    if s < 0 {
        return Phase::Idle;
    }
    if s < LAUNCH_S {
        return Phase::Launch;
    }
    if s < WARMUP_END_S {
        return Phase::Warmup;
    }
    let (epoch_len, stall) = rhythm(seed, job);
    let epoch = (s - WARMUP_END_S) / epoch_len;
    let p = (s - WARMUP_END_S) % epoch_len;
    let jitter = (unit(seed, &[tag::JOB, job, 3, epoch as u64]) * stall as f64) as i64;
    if p >= epoch_len - EVAL_S {
        Phase::Eval
    } else if epoch % 3 == 2 && p >= epoch_len - EVAL_S - CHECKPOINT_S {
        Phase::Checkpoint
    } else if p >= stall && (p + jitter) % stall < 2 {
        Phase::DataLoad
    } else {
        Phase::Steady
    }
}

/// The phase of GPU `index` with `role` at second `s`.
pub(crate) fn phase(seed: u64, role: Role, s: i64) -> Phase {
    match role {
        Role::Idle => Phase::Idle,
        Role::Serve if s < 0 => Phase::Idle,
        Role::Serve if s < LAUNCH_S => Phase::Launch,
        Role::Serve if s < WARMUP_END_S - 10 => Phase::Warmup,
        Role::Serve => Phase::Serving,
        Role::Train { .. } | Role::Shared => train_phase(seed, job_of(role), s),
    }
}

/// How busy GPU `index` with `role` is at second `s`.
pub(crate) fn activity(seed: u64, index: u32, role: Role, s: i64) -> Activity {
    let phase = phase(seed, role, s);
    let key = |t: u64| [t, u64::from(index), s as u64];
    let r = |t: u64, lo: f64, hi: f64| range(seed, &key(t), lo, hi);
    // mem_k: memory-bus busy time relative to SM busy time.
    let (util, mem_k, rx, tx) = match phase {
        Phase::Idle => (
            0.0,
            0.0,
            r(tag::PCIE, 2.0, 40.0),
            r(tag::PCIE + 1, 1.0, 20.0),
        ),
        Phase::Launch => (
            r(tag::UTIL, 0.0, 0.03),
            0.3,
            r(tag::PCIE, 5_000.0, 60_000.0),
            r(tag::PCIE + 1, 500.0, 4_000.0),
        ),
        Phase::Warmup => {
            let ramp = (s - LAUNCH_S) as f64 / (WARMUP_END_S - LAUNCH_S) as f64;
            (
                (0.1 + 0.6 * ramp + r(tag::UTIL, -0.08, 0.08)).clamp(0.0, 1.0),
                0.4,
                r(tag::PCIE, 1_200_000.0, 3_800_000.0),
                r(tag::PCIE + 1, 10_000.0, 60_000.0),
            )
        }
        Phase::Steady => (
            0.86 + 0.135 * r(tag::UTIL, 0.0, 1.0).sqrt(),
            r(tag::MEM_UTIL, 0.32, 0.44),
            r(tag::PCIE, 150_000.0, 450_000.0),
            r(tag::PCIE + 1, 20_000.0, 70_000.0),
        ),
        Phase::DataLoad => (
            r(tag::UTIL, 0.22, 0.55),
            r(tag::MEM_UTIL, 0.40, 0.60),
            r(tag::PCIE, 2_500_000.0, 6_000_000.0),
            r(tag::PCIE + 1, 10_000.0, 40_000.0),
        ),
        Phase::Eval => (
            r(tag::UTIL, 0.45, 0.64),
            r(tag::MEM_UTIL, 0.45, 0.55),
            r(tag::PCIE, 700_000.0, 1_500_000.0),
            r(tag::PCIE + 1, 30_000.0, 90_000.0),
        ),
        Phase::Checkpoint => (
            r(tag::UTIL, 0.02, 0.12),
            0.5,
            r(tag::PCIE, 5_000.0, 30_000.0),
            r(tag::PCIE + 1, 1_500_000.0, 3_500_000.0),
        ),
        Phase::Serving => {
            let load = smooth(seed, &[tag::REQUESTS, u64::from(index)], s, 23);
            let burst = if unit(seed, &key(tag::REQUESTS)) > 0.9 {
                0.25
            } else {
                0.0
            };
            (
                (0.12 + 0.55 * load + burst + r(tag::UTIL, -0.05, 0.05)).clamp(0.0, 1.0),
                0.8,
                r(tag::PCIE, 400.0, 6_000.0) * (1.0 + 4.0 * load),
                r(tag::PCIE + 1, 200.0, 3_000.0) * (1.0 + 4.0 * load),
            )
        }
    };
    let mem_util = (util * mem_k).min(1.0);
    let intensity = match phase {
        Phase::Steady => util * r(tag::POWER, 0.96, 1.05),
        Phase::Serving => util * 0.72,
        _ => util * 0.85,
    };
    Activity {
        phase,
        util,
        mem_util,
        intensity,
        rx_kbps: rx,
        tx_kbps: tx,
        active: phase != Phase::Idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_gpus_have_four_ranks_shared_serve_and_two_idle() {
        let r = roles(8);
        assert_eq!(r[0], Role::Train { rank: 0, ranks: 4 });
        assert_eq!(r[4], Role::Shared);
        assert_eq!(r[5], Role::Serve);
        assert_eq!(&r[6..], &[Role::Idle, Role::Idle]);
        assert_eq!(roles(1), vec![Role::Train { rank: 0, ranks: 1 }]);
        assert_eq!(roles(0), vec![]);
    }

    #[test]
    fn steady_training_is_busy() {
        let role = Role::Train { rank: 0, ranks: 4 };
        let steady: Vec<f64> = (30..2000)
            .map(|s| activity(42, 0, role, s))
            .filter(|a| a.phase == Phase::Steady)
            .map(|a| a.util)
            .collect();
        assert!(steady.len() > 1000);
        assert!(steady.iter().all(|u| (0.85..=1.0).contains(u)));
        let dips = (30..2000)
            .filter(|s| train_phase(42, 0, *s) == Phase::DataLoad)
            .count();
        assert!(dips > 50, "{dips}");
    }
}
