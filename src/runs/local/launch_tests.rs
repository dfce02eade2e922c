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
        env: &env,
        workdir: Path::new("/work/project"),
        ports,
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
fn torchrun_wraps_the_command() {
    let ranks = plan(Launcher::Torchrun, None);
    assert_eq!(ranks.len(), 1);
    assert_eq!(
        ranks[0].argv,
        [
            "torchrun",
            "--standalone",
            "--nproc-per-node=2",
            "python",
            "train.py"
        ]
    );
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
        assert_eq!(env["LOCAL_RANK"], i.to_string());
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
fn a_relative_program_is_made_absolute_against_the_workdir() {
    let gpus = gpus();
    let env = BTreeMap::new();
    let command = ["./train.sh".to_string(), "./data".to_string()];
    let ranks = plan_ranks(&LaunchInput {
        run_id: "x",
        launcher: Launcher::Single,
        command: &command,
        gpus: &gpus,
        env: &env,
        workdir: Path::new("/work/project"),
        ports: None,
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
