//! The processes each simulated GPU runs: pids, command lines, owners, containers, memory.

use crate::device::SimDevice;
use crate::hash::{hash, range, smooth, tag};
use crate::profile::MIB;
use crate::workload::{phase, Phase, Role, LAUNCH_S, WARMUP_END_S};

/// Simulated pids start here, above Linux's largest pid_max (4194304), so they never name a
/// real process.
pub const SIM_PID_BASE: u32 = 4_200_000;

/// One process with a context on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimProcess {
    /// Host pid; simulated ones are >= `SIM_PID_BASE`, `pids=` ones are real.
    pub pid: u32,
    pub used_memory_bytes: u64,
    /// Full command line, e.g. "python train.py --epochs 90"; empty for `pids=` processes
    /// (the caller resolves real processes from /proc).
    pub name: String,
    /// Owner; empty for `pids=` processes.
    pub user: String,
    /// 64-hex Docker container id when the process runs in a container.
    pub container: Option<String>,
    /// A graphics context (Xorg, a compositor) rather than a compute one.
    pub graphics: bool,
    /// When it started, in seconds relative to the simulation's `t = 0` (negative: before it).
    /// Jobs start with the simulation; the desktop and a notebook kernel were there before.
    pub started_s: i64,
    /// (GPU instance ID, compute instance ID) of the MIG device it runs on; None without MIG.
    pub instance: Option<(u32, u32)>,
    /// A client of the GPU's MPS server (listed by `nvmlDeviceGetMPSComputeRunningProcesses`).
    pub mps_client: bool,
}

const CUDA_CONTEXT_MIB: f64 = 532.0;
const DAY_S: f64 = 86_400.0;
const MODELS: [&str; 5] = [
    "llama3-8b",
    "resnet152",
    "vit-h14",
    "gpt2-xl",
    "mixtral-8x7b",
];

/// The processes on `device` (with `role`) at second `s`, `extra` being the `pids=` entries.
pub(crate) fn processes(
    seed: u64,
    device: &SimDevice,
    role: Role,
    s: i64,
    extra: &[u32],
) -> Vec<SimProcess> {
    let base = SIM_PID_BASE + (hash(seed, &[tag::PID]) % 90_000) as u32 * 10;
    let usable = (device.memory_total_bytes - device.memory_reserved_bytes) as f64;
    let index = u64::from(device.index);
    let model = MODELS[(hash(seed, &[tag::NAME]) % MODELS.len() as u64) as usize];
    let mut out = Vec::new();
    if device.display_active {
        let shell = 118.0 + 40.0 * smooth(seed, &[tag::MEM, index, 9], s, 45);
        let boot = -(range(seed, &[tag::PID, 1], 2.0, 9.0) * DAY_S) as i64;
        let mut xorg = graphics(
            base + 3,
            "/usr/lib/xorg/Xorg vt2 -displayfd 3",
            "root",
            212.0,
        );
        xorg.started_s = boot;
        out.push(xorg);
        let mut shell = graphics(base + 5, "/usr/bin/gnome-shell", "alice", shell);
        shell.started_s = boot + 40;
        out.push(shell);
    }
    match role {
        Role::Idle => {}
        Role::Train { rank, .. } => {
            let frac = range(seed, &[tag::MEM, 0], 0.86, 0.90);
            out.push(compute(
                base + 10 + rank,
                format!("python train.py --model {model} --epochs 90"),
                "alice",
                job_memory(seed, role, index, s, usable * frac),
            ));
        }
        Role::Shared => {
            let frac = range(seed, &[tag::MEM, 1], 0.40, 0.46);
            out.push(compute(
                base + 40,
                "python finetune.py --model mistral-7b --lora-rank 16".to_string(),
                "bob",
                job_memory(seed, role, index, s, usable * frac),
            ));
            let steps = (smooth(seed, &[tag::MEM, index, 2], s, 90) * 12.0).floor();
            let kernel = hash(seed, &[tag::NAME, 2]) as u32;
            let mut notebook = compute(
                base + 57,
                format!(
                    "python -m ipykernel_launcher -f \
                     /home/carol/.local/share/jupyter/runtime/kernel-{kernel:08x}.json"
                ),
                "carol",
                CUDA_CONTEXT_MIB * MIB as f64 + usable * (0.03 + 0.012 * steps),
            );
            notebook.started_s = -(range(seed, &[tag::PID, 2], 20.0, 90.0) * 60.0) as i64;
            out.push(notebook);
        }
        Role::Serve => {
            let mut server = compute(
                base + 80,
                "python3 -m vllm.entrypoints.openai.api_server \
                 --model meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.90"
                    .to_string(),
                "root",
                job_memory(seed, role, index, s, usable * 0.90),
            );
            server.container = Some(container_id(seed));
            out.push(server);
        }
    }
    for pid in extra {
        let mib = range(seed, &[tag::EXTRA, u64::from(*pid)], 256.0, 1024.0);
        out.push(SimProcess {
            pid: *pid,
            used_memory_bytes: to_bytes(mib * MIB as f64),
            name: String::new(),
            user: String::new(),
            container: None,
            graphics: false,
            started_s: 0,
            instance: None,
            mps_client: false,
        });
    }
    out
}

/// The process an MPS server runs as.
pub const MPS_SERVER: &str = "nvidia-cuda-mps-server";

impl SimProcess {
    /// The MPS server's own process (it runs its clients' kernels, which count as theirs).
    pub fn is_mps_server(&self) -> bool {
        self.name == MPS_SERVER
    }
}

/// Memory of an MPS server's own context.
const MPS_SERVER_MIB: u64 = 30;

/// Runs `procs` under an MPS server: the compute processes become its clients
/// (`M+C` in `nvidia-smi`) and the server (`nvidia-cuda-mps-server`, started by the control
/// daemon as root, `C` with 25-30 MiB in `nvidia-smi`) holds a context of its own. One server
/// serves every GPU it was given, so it has the same pid on each.
pub(crate) fn under_mps(seed: u64, procs: Vec<SimProcess>) -> Vec<SimProcess> {
    let base = SIM_PID_BASE + (hash(seed, &[tag::PID]) % 90_000) as u32 * 10;
    let mut server = compute(
        base + 5000,
        MPS_SERVER.to_string(),
        "root",
        (MPS_SERVER_MIB * MIB) as f64,
    );
    server.started_s = -(range(seed, &[tag::PID, 3], 1.0, 6.0) * 3600.0) as i64;
    let mut out = vec![server];
    out.extend(procs.into_iter().map(|mut p| {
        p.mps_client = !p.graphics;
        p
    }));
    out
}

/// Memory of the main process of a job: a CUDA context at launch, filling up during warm-up,
/// then steady with a little allocator wobble and a bump for evaluation.
fn job_memory(seed: u64, role: Role, index: u64, s: i64, target: f64) -> f64 {
    let ctx = CUDA_CONTEXT_MIB * MIB as f64;
    let wobble = (smooth(seed, &[tag::MEM, index, 1], s, 30) - 0.5) * 320.0 * MIB as f64;
    match phase(seed, role, s) {
        Phase::Idle => 0.0,
        Phase::Launch => ctx * (s + 1) as f64 / LAUNCH_S as f64,
        Phase::Warmup => {
            let ramp = (s - LAUNCH_S + 1) as f64 / (WARMUP_END_S - LAUNCH_S) as f64;
            ctx + (target - ctx) * ramp.min(1.0)
        }
        Phase::Eval => target + wobble + 600.0 * MIB as f64,
        Phase::Serving => target,
        _ => target + wobble,
    }
}

fn compute(pid: u32, name: String, user: &str, bytes: f64) -> SimProcess {
    SimProcess {
        pid,
        used_memory_bytes: to_bytes(bytes),
        name,
        user: user.to_string(),
        container: None,
        graphics: false,
        started_s: 0,
        instance: None,
        mps_client: false,
    }
}

fn graphics(pid: u32, name: &str, user: &str, mib: f64) -> SimProcess {
    SimProcess {
        pid,
        used_memory_bytes: to_bytes(mib * MIB as f64),
        name: name.to_string(),
        user: user.to_string(),
        container: None,
        graphics: true,
        started_s: 0,
        instance: None,
        mps_client: false,
    }
}

/// Whole MiB, as the driver accounts them.
fn to_bytes(bytes: f64) -> u64 {
    (bytes.max(0.0) / MIB as f64).round() as u64 * MIB
}

/// A Docker-style 64-hex container id.
fn container_id(seed: u64) -> String {
    (0..4)
        .map(|i| format!("{:016x}", hash(seed, &[tag::CONTAINER, i])))
        .collect()
}

// Linux caps pid_max at 4194304 (2^22); simulated pids must stay above it.
const _: () = assert!(SIM_PID_BASE > 4_194_304);

/// One process's share of its GPU over the last second, as `nvmlDeviceGetProcessUtilization`
/// reports it (percent of the time a kernel, a memory copy, the encoder or the decoder ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimProcessUtil {
    pub pid: u32,
    pub sm: u32,
    pub mem: u32,
    pub enc: u32,
    pub dec: u32,
}

/// Per-process shares of a GPU-wide utilisation: the main process of a GPU takes most of it,
/// the others split the rest; `pids=` processes and graphics get 0.
pub(crate) fn shares(procs: &[SimProcess], util: u32) -> Vec<u32> {
    let sim: Vec<bool> = procs
        .iter()
        .map(|p| p.pid >= SIM_PID_BASE && !p.graphics && !p.is_mps_server())
        .collect();
    let n = sim.iter().filter(|s| **s).count() as u32;
    let mut first = true;
    sim.iter()
        .map(|is_sim| match (*is_sim, first) {
            (false, _) => 0,
            (true, true) if n == 1 => {
                first = false;
                util
            }
            (true, true) => {
                first = false;
                util * 85 / 100
            }
            (true, false) => (util - util * 85 / 100) / (n - 1),
        })
        .collect()
}
