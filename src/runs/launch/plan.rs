//! Launchers: a resolved run turned into the processes to start, each an argv and the
//! environment gpudeck sets for it. Pure, apart from [`free_ports`].

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;

use serde_json::json;

use crate::runs::record::{RankRecord, RunGpu};
use crate::runs::spec::Launcher;

/// Where the ranks of a per-gpu run meet: PyTorch's rendezvous port, and one port per worker
/// for TensorFlow's `TF_CONFIG` cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ports {
    pub master: u16,
    pub workers: Vec<u16>,
}

/// What a launcher needs to know.
#[derive(Debug, Clone, Copy)]
pub struct LaunchInput<'a> {
    pub run_id: &'a str,
    pub launcher: Launcher,
    pub command: &'a [String],
    pub gpus: &'a [RunGpu],
    /// How many processes torchrun and per-gpu start: one per GPU, or the CPU workers of a run
    /// without GPUs (pre-flight's count).
    pub workers: usize,
    /// The spec's own variables; gpudeck's win where both set one.
    pub env: &'a BTreeMap<String, String>,
    pub workdir: &'a Path,
    /// Needed for `per-gpu` only.
    pub ports: Option<&'a Ports>,
    /// torchrun only: the directory torchrun writes each worker's stdout and stderr under
    /// (`--log-dir`, `--redirects=3`); `None` leaves them on torchrun's own output.
    pub worker_logs: Option<&'a Path>,
}

/// One process to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankPlan {
    pub rank: usize,
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub gpus: Vec<u32>,
}

impl From<RankPlan> for RankRecord {
    fn from(plan: RankPlan) -> RankRecord {
        RankRecord {
            rank: plan.rank,
            argv: plan.argv,
            env: plan.env,
            gpus: plan.gpus,
            pid: None,
            exit_code: None,
            ended_ms: None,
        }
    }
}

/// The processes for a run, rank 0 first.
pub fn plan_ranks(input: &LaunchInput<'_>) -> Vec<RankPlan> {
    let command = absolute_program(input.command, input.workdir);
    let all: Vec<&RunGpu> = input.gpus.iter().collect();
    match input.launcher {
        Launcher::Single => vec![RankPlan {
            rank: 0,
            argv: command,
            env: base_env(input, &all),
            gpus: indices(&all),
        }],
        Launcher::Torchrun => {
            let mut argv = vec![
                "torchrun".to_string(),
                "--standalone".to_string(),
                format!("--nproc-per-node={}", input.workers),
            ];
            if let Some(dir) = input.worker_logs {
                argv.push(format!("--log-dir={}", dir.display()));
                argv.push("--redirects=3".to_string());
            }
            // Already torchrun's arguments (`torchrun::torchrun_args`): its script is a path
            // relative to the work dir, where torchrun runs.
            argv.extend(input.command.iter().cloned());
            vec![RankPlan {
                rank: 0,
                argv,
                env: base_env(input, &all),
                gpus: indices(&all),
            }]
        }
        // CPU workers: every one on the one "node", seeing no GPU.
        Launcher::PerGpu if input.gpus.is_empty() => (0..input.workers)
            .map(|rank| RankPlan {
                rank,
                argv: command.clone(),
                env: per_gpu_env(input, rank, None),
                gpus: Vec::new(),
            })
            .collect(),
        Launcher::PerGpu => input
            .gpus
            .iter()
            .enumerate()
            .map(|(rank, gpu)| RankPlan {
                rank,
                argv: command.clone(),
                env: per_gpu_env(input, rank, Some(gpu)),
                gpus: vec![gpu.index],
            })
            .collect(),
    }
}

/// Variables every rank gets: the spec's, then which GPUs it sees. UUIDs rather than indices,
/// because CUDA numbers devices fastest-first by default, not in the order NVML and
/// `gpudeck gpus` use; a UUID means the same GPU to both.
fn base_env(input: &LaunchInput<'_>, gpus: &[&RunGpu]) -> BTreeMap<String, String> {
    let mut env = input.env.clone();
    let uuids: Vec<&str> = gpus.iter().map(|g| g.uuid.as_str()).collect();
    let visible = uuids.join(",");
    env.insert("CUDA_VISIBLE_DEVICES".into(), visible.clone());
    env.insert("NVIDIA_VISIBLE_DEVICES".into(), visible);
    // So that devices a program enumerates itself come in PCI order, as NVML numbers them.
    env.insert("CUDA_DEVICE_ORDER".into(), "PCI_BUS_ID".into());
    env.insert("GPUDECK_RUN_ID".into(), input.run_id.to_string());
    let list: Vec<String> = gpus.iter().map(|g| g.index.to_string()).collect();
    env.insert("GPUDECK_GPUS".into(), list.join(","));
    env
}

/// A per-gpu rank's variables. A rank with a GPU sees that GPU alone, as its device 0, so its
/// local rank is 0 and it is the one process of its "node" (`LOCAL_WORLD_SIZE=1`,
/// `GROUP_RANK` = its rank, as torchrun would number one-GPU nodes):
/// `torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))` then picks the GPU it was given.
/// CPU workers (no GPU) share one node: local rank = rank.
fn per_gpu_env(
    input: &LaunchInput<'_>,
    rank: usize,
    gpu: Option<&RunGpu>,
) -> BTreeMap<String, String> {
    let world = input.workers.to_string();
    let mut env = match gpu {
        Some(gpu) => {
            let mut env = base_env(input, &[gpu]);
            env.insert("LOCAL_RANK".into(), "0".into());
            env.insert("LOCAL_WORLD_SIZE".into(), "1".into());
            env.insert("GROUP_RANK".into(), rank.to_string());
            env
        }
        None => {
            let mut env = base_env(input, &[]);
            env.insert("LOCAL_RANK".into(), rank.to_string());
            env.insert("LOCAL_WORLD_SIZE".into(), world.clone());
            env
        }
    };
    env.insert("RANK".into(), rank.to_string());
    env.insert("WORLD_SIZE".into(), world);
    env.insert("MASTER_ADDR".into(), "127.0.0.1".into());
    if let Some(ports) = input.ports {
        env.insert("MASTER_PORT".into(), ports.master.to_string());
        env.insert("TF_CONFIG".into(), tf_config(&ports.workers, rank));
    }
    env
}

/// TensorFlow's MultiWorkerMirroredStrategy cluster: every worker's address, and which one
/// this process is.
fn tf_config(worker_ports: &[u16], index: usize) -> String {
    let workers: Vec<String> = worker_ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    json!({
        "cluster": { "worker": workers },
        "task": { "type": "worker", "index": index },
    })
    .to_string()
}

/// A program given as a relative path (`./train.sh`) is made absolute against the work dir, so
/// it means the same file whichever directory the supervisor runs in; a bare name stays for the
/// PATH lookup.
fn absolute_program(command: &[String], workdir: &Path) -> Vec<String> {
    let mut argv = command.to_vec();
    if let Some(program) = argv.first_mut() {
        if program.contains('/') && !program.starts_with('/') {
            *program = workdir.join(&*program).to_string_lossy().into_owned();
        }
    }
    argv
}

fn indices(gpus: &[&RunGpu]) -> Vec<u32> {
    gpus.iter().map(|g| g.index).collect()
}

/// `n + 1` distinct free TCP ports on the loopback: a master port and one per worker. All are
/// held open until every one is chosen, so none is handed out twice; another program may still
/// take one before the ranks bind it, which the rank then reports.
pub fn free_ports(workers: usize) -> std::io::Result<Ports> {
    let listeners: Vec<TcpListener> = (0..=workers)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    let ports: Vec<u16> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()?;
    Ok(Ports {
        master: ports[0],
        workers: ports[1..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus() -> Vec<RunGpu> {
        [(1, "GPU-aaa"), (2, "GPU-bbb")]
            .map(|(index, uuid)| RunGpu {
                index,
                uuid: uuid.into(),
                name: "H100".into(),
            })
            .to_vec()
    }

    fn plan(launcher: Launcher, ports: Option<&Ports>) -> Vec<RankPlan> {
        let command = ["python".to_string(), "train.py".to_string()];
        let mut env = BTreeMap::new();
        env.insert("NCCL_DEBUG".to_string(), "INFO".to_string());
        env.insert("CUDA_VISIBLE_DEVICES".to_string(), "7".to_string());
        let gpus = gpus();
        plan_ranks(&LaunchInput {
            run_id: "20260101-000000-t-abcd",
            launcher,
            command: &command,
            gpus: &gpus,
            workers: 2,
            env: &env,
            workdir: Path::new("/work/project"),
            ports,
            worker_logs: None,
        })
    }

    #[test]
    fn single_is_one_process_seeing_every_gpu() {
        let ranks = plan(Launcher::Single, None);
        assert_eq!(ranks.len(), 1);
        let env = &ranks[0].env;
        assert_eq!(ranks[0].argv, ["python", "train.py"]);
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], "GPU-aaa,GPU-bbb");
        assert_eq!(env["NVIDIA_VISIBLE_DEVICES"], "GPU-aaa,GPU-bbb");
        assert_eq!(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
        assert_eq!(env["GPUDECK_GPUS"], "1,2");
        assert_eq!(env["GPUDECK_RUN_ID"], "20260101-000000-t-abcd");
        assert_eq!(env["NCCL_DEBUG"], "INFO");
        assert!(!env.contains_key("RANK"));
        assert_eq!(ranks[0].gpus, [1, 2]);
    }

    #[test]
    fn torchrun_writes_each_workers_output_under_the_log_dir() {
        let gpus = gpus();
        let env = BTreeMap::new();
        let command = ["-m".to_string(), "pkg".to_string()];
        let ranks = plan_ranks(&LaunchInput {
            run_id: "x",
            launcher: Launcher::Torchrun,
            command: &command,
            gpus: &gpus,
            workers: 2,
            env: &env,
            workdir: Path::new("/work/project"),
            ports: None,
            worker_logs: Some(Path::new("/runs/x/torchrun")),
        });
        assert_eq!(
            ranks[0].argv.join(" "),
            "torchrun --standalone --nproc-per-node=2 --log-dir=/runs/x/torchrun --redirects=3 \
             -m pkg"
        );
        assert_eq!(ranks.len(), 1);
        assert_eq!(ranks[0].env["CUDA_VISIBLE_DEVICES"], "GPU-aaa,GPU-bbb");
    }

    #[test]
    fn per_gpu_gives_each_rank_its_gpu_and_its_place() {
        let ports = Ports {
            master: 29500,
            workers: vec![40001, 40002],
        };
        let ranks = plan(Launcher::PerGpu, Some(&ports));
        assert_eq!(ranks.len(), 2);
        for (i, rank) in ranks.iter().enumerate() {
            let env = &rank.env;
            assert_eq!(rank.rank, i);
            assert_eq!(rank.argv, ["python", "train.py"]);
            assert_eq!(env["RANK"], i.to_string());
            // Each rank sees one GPU, its device 0: `torch.cuda.set_device(LOCAL_RANK)` must
            // ask for that one, never device 1 of 1.
            assert_eq!(env["LOCAL_RANK"], "0");
            assert_eq!(env["LOCAL_WORLD_SIZE"], "1");
            assert_eq!(env["GROUP_RANK"], i.to_string());
            assert_eq!(env["WORLD_SIZE"], "2");
            assert_eq!(env["MASTER_ADDR"], "127.0.0.1");
            assert_eq!(env["MASTER_PORT"], "29500");
            let tf: serde_json::Value = serde_json::from_str(&env["TF_CONFIG"]).unwrap();
            assert_eq!(
                tf["cluster"]["worker"],
                serde_json::json!(["127.0.0.1:40001", "127.0.0.1:40002"])
            );
            assert_eq!(
                tf["task"],
                serde_json::json!({"type": "worker", "index": i})
            );
        }
        assert_eq!(ranks[0].env["CUDA_VISIBLE_DEVICES"], "GPU-aaa");
        assert_eq!(ranks[1].env["CUDA_VISIBLE_DEVICES"], "GPU-bbb");
        assert_eq!(
            (ranks[0].gpus.clone(), ranks[1].gpus.clone()),
            (vec![1], vec![2])
        );
    }

    #[test]
    fn per_gpu_without_gpus_starts_the_workers_asked_for_on_one_node() {
        let env = BTreeMap::new();
        let command = ["python".to_string(), "train.py".to_string()];
        let ports = Ports {
            master: 29500,
            workers: vec![40001, 40002, 40003],
        };
        let ranks = plan_ranks(&LaunchInput {
            run_id: "x",
            launcher: Launcher::PerGpu,
            command: &command,
            gpus: &[],
            workers: 3,
            env: &env,
            workdir: Path::new("/work/project"),
            ports: Some(&ports),
            worker_logs: None,
        });
        assert_eq!(ranks.len(), 3);
        for (i, rank) in ranks.iter().enumerate() {
            let env = &rank.env;
            assert_eq!(rank.gpus, Vec::<u32>::new());
            assert_eq!(env["CUDA_VISIBLE_DEVICES"], "");
            assert_eq!(env["RANK"], i.to_string());
            assert_eq!(env["LOCAL_RANK"], i.to_string());
            assert_eq!(env["WORLD_SIZE"], "3");
            assert_eq!(env["LOCAL_WORLD_SIZE"], "3");
            assert!(!env.contains_key("GROUP_RANK"));
        }
    }

    #[test]
    fn torchrun_without_gpus_starts_the_workers_asked_for() {
        let env = BTreeMap::new();
        let command = ["train.py".to_string()];
        let ranks = plan_ranks(&LaunchInput {
            run_id: "x",
            launcher: Launcher::Torchrun,
            command: &command,
            gpus: &[],
            workers: 4,
            env: &env,
            workdir: Path::new("/work/project"),
            ports: None,
            worker_logs: None,
        });
        assert_eq!(
            ranks[0].argv.join(" "),
            "torchrun --standalone --nproc-per-node=4 train.py"
        );
        assert_eq!(ranks[0].env["CUDA_VISIBLE_DEVICES"], "");
    }

    #[test]
    fn a_relative_program_is_made_absolute_against_the_workdir() {
        let gpus = gpus();
        let env = BTreeMap::new();
        let command = ["./train.sh".to_string(), "./data".to_string()];
        let ranks = plan_ranks(&LaunchInput {
            run_id: "x",
            launcher: Launcher::Single,
            command: &command,
            gpus: &gpus,
            workers: 2,
            env: &env,
            workdir: Path::new("/work/project"),
            ports: None,
            worker_logs: None,
        });
        assert_eq!(ranks[0].argv, ["/work/project/./train.sh", "./data"]);
    }

    #[test]
    fn free_ports_are_distinct() {
        let ports = free_ports(4).unwrap();
        let mut all = ports.workers.clone();
        all.push(ports.master);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5);
        assert!(all.iter().all(|p| *p > 0));
    }
}
