use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use bollard::models::{DeviceRequest, HostConfig, MountType};

use super::*;
use crate::runs::local::launch::{plan_ranks, LaunchInput, Ports};

const RUN: &str = "20260101-000000-train-abcd";

fn gpus() -> Vec<RunGpu> {
    [(1, "GPU-aaa"), (2, "GPU-bbb")]
        .map(|(index, uuid)| RunGpu {
            index,
            uuid: uuid.into(),
            name: "H100".into(),
        })
        .to_vec()
}

/// The ranks as `gpudeck run` plans them for a container: the work dir is /workspace.
fn ranks(launcher: Launcher, gpus: &[RunGpu]) -> Vec<RankRecord> {
    let command = ["./train.sh".to_string(), "--fast".to_string()];
    let env = BTreeMap::from([
        ("NCCL_DEBUG".to_string(), "INFO".to_string()),
        ("HOME".to_string(), "/root".to_string()),
    ]);
    let ports = Ports {
        master: 29500,
        workers: vec![29501, 29502],
    };
    plan_ranks(&LaunchInput {
        run_id: RUN,
        launcher,
        command: &command,
        gpus,
        env: &env,
        workdir: Path::new("/workspace"),
        ports: Some(&ports),
    })
    .into_iter()
    .map(RankRecord::from)
    .collect()
}

fn plan_with(launcher: Launcher, gpus: &[RunGpu], plumbing: GpuPlumbing) -> ContainerPlan {
    plan_on(launcher, gpus, plumbing, "bridge")
}

fn plan_on(
    launcher: Launcher,
    gpus: &[RunGpu],
    plumbing: GpuPlumbing,
    network: &str,
) -> ContainerPlan {
    let ranks = ranks(launcher, gpus);
    container_plan(&ContainerInput {
        run_id: RUN,
        image: "nvcr.io/nvidia/pytorch:24.05-py3",
        launcher,
        ranks: &ranks,
        gpus,
        workdir: Path::new("/home/ada/project"),
        defaults: &ShellDefaults::default(),
        plumbing,
        host_user: (1000, 1000),
        network,
    })
    .unwrap()
}

fn plan(launcher: Launcher) -> ContainerPlan {
    plan_with(launcher, &gpus(), GpuPlumbing::DeviceRequest)
}

fn env(body: &ContainerCreateBody) -> BTreeMap<String, String> {
    body.env
        .iter()
        .flatten()
        .filter_map(|e| e.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn host(body: &ContainerCreateBody) -> &HostConfig {
    body.host_config.as_ref().expect("a host config")
}

fn requested(body: &ContainerCreateBody) -> Vec<DeviceRequest> {
    host(body).device_requests.clone().unwrap_or_default()
}

#[test]
fn single_is_one_labelled_container_with_every_gpu_by_uuid() {
    let plan = plan(Launcher::Single);
    assert_eq!(plan.schema, CONTAINERS_SCHEMA);
    assert_eq!(plan.ranks.len(), 1);
    let rank = &plan.ranks[0];
    assert_eq!(rank.name, format!("gpudeck-{RUN}-rank0"));
    let body = &rank.body;
    assert_eq!(
        body.image.as_deref(),
        Some("nvcr.io/nvidia/pytorch:24.05-py3")
    );
    assert_eq!(
        body.cmd.as_deref(),
        Some(&["/workspace/./train.sh".to_string(), "--fast".to_string()][..])
    );
    let labels = body.labels.clone().unwrap();
    assert_eq!(
        labels.len(),
        2,
        "only the run's labels, no shell's: {labels:?}"
    );
    assert_eq!(labels[LABEL_RUN], RUN);
    assert_eq!(labels[LABEL_RANK], "0");
    let request = requested(body);
    assert_eq!(request.len(), 1);
    assert_eq!(
        request[0].device_ids.as_deref(),
        Some(&["GPU-aaa".to_string(), "GPU-bbb".to_string()][..])
    );
    assert_eq!(request[0].capabilities, Some(vec![vec!["gpu".to_string()]]));
    let env = env(body);
    assert_eq!(env["CUDA_VISIBLE_DEVICES"], "GPU-aaa,GPU-bbb");
    assert_eq!(env["NVIDIA_VISIBLE_DEVICES"], "GPU-aaa,GPU-bbb");
    assert_eq!(env["GPUDECK_RUN_ID"], RUN);
    assert_eq!(env["NCCL_DEBUG"], "INFO");
    assert_eq!(env["HOME"], "/home/gpudeck", "the host user's HOME wins");
    assert!(!env.contains_key("RANK"));
    assert_eq!(host(body).network_mode.as_deref(), Some("bridge"));
}

#[test]
fn every_container_gets_the_shell_isolation_user_mount_and_an_init() {
    for launcher in [Launcher::Single, Launcher::Torchrun, Launcher::PerGpu] {
        for rank in plan(launcher).ranks {
            let body = &rank.body;
            let host = host(body);
            assert_eq!(body.user.as_deref(), Some("1000:1000"), "{launcher:?}");
            assert_eq!(body.working_dir.as_deref(), Some("/workspace"));
            assert_eq!(body.tty, Some(false));
            assert_eq!(
                (body.open_stdin, body.attach_stdin),
                (Some(false), Some(false))
            );
            let mounts = host.mounts.clone().unwrap();
            assert_eq!(mounts.len(), 1);
            assert_eq!(mounts[0].source.as_deref(), Some("/home/ada/project"));
            assert_eq!(mounts[0].target.as_deref(), Some("/workspace"));
            assert_eq!(mounts[0].typ, Some(MountType::BIND));
            assert_eq!(host.privileged, Some(false));
            assert_eq!(
                host.security_opt,
                Some(vec!["no-new-privileges".to_string()])
            );
            assert_eq!(host.cap_drop, Some(ShellDefaults::default().cap_drop));
            assert!(host.tmpfs.as_ref().unwrap().contains_key("/home/gpudeck"));
            assert_eq!(host.init, Some(true));
            assert_eq!(host.auto_remove, Some(false));
            let ulimits = host.ulimits.clone().unwrap();
            assert!(ulimits.iter().any(|u| u.name.as_deref() == Some("memlock")));
        }
    }
}

#[test]
fn torchrun_is_one_container_running_torchrun_on_every_gpu() {
    let plan = plan(Launcher::Torchrun);
    assert_eq!(plan.ranks.len(), 1);
    let body = &plan.ranks[0].body;
    let cmd = body.cmd.clone().unwrap();
    assert_eq!(cmd[..3], ["torchrun", "--standalone", "--nproc-per-node=2"]);
    assert_eq!(cmd[3], "/workspace/./train.sh");
    assert_eq!(
        requested(body)[0].device_ids.as_deref(),
        Some(&["GPU-aaa".to_string(), "GPU-bbb".to_string()][..])
    );
    assert_eq!(host(body).shm_size, Some(8 << 30));
}

#[test]
fn per_gpu_is_a_container_per_rank_with_only_its_gpu_on_rank_0s_own_network() {
    let plan = plan(Launcher::PerGpu);
    assert_eq!(plan.ranks.len(), 2);
    let rank0_name = format!("gpudeck-{RUN}-rank0");
    for (rank, uuid) in [(0usize, "GPU-aaa"), (1, "GPU-bbb")] {
        let planned = &plan.ranks[rank];
        assert_eq!(planned.rank, rank);
        assert_eq!(planned.name, format!("gpudeck-{RUN}-rank{rank}"));
        let body = &planned.body;
        assert_eq!(body.labels.clone().unwrap()[LABEL_RANK], rank.to_string());
        let request = requested(body);
        assert_eq!(request[0].device_ids, Some(vec![uuid.to_string()]));
        let env = env(body);
        assert_eq!(env["RANK"], rank.to_string());
        assert_eq!(env["WORLD_SIZE"], "2");
        assert_eq!(env["MASTER_ADDR"], "127.0.0.1");
        assert_eq!(env["MASTER_PORT"], "29500");
        assert_eq!(env["CUDA_VISIBLE_DEVICES"], uuid);
        assert_eq!(env["NVIDIA_VISIBLE_DEVICES"], uuid);
        assert!(env["TF_CONFIG"].contains("127.0.0.1:29502"));
    }
    let (first, second) = (host(&plan.ranks[0].body), host(&plan.ranks[1].body));
    assert_eq!(first.ipc_mode.as_deref(), Some("shareable"));
    assert_eq!(first.shm_size, Some(8 << 30));
    assert_eq!(second.ipc_mode, Some(format!("container:{rank0_name}")));
    assert_eq!(second.shm_size, None, "rank 0's /dev/shm is shared");
    // Never the host's network unasked: rank 0 on the [shell] network, the others in its
    // namespace, where 127.0.0.1 (MASTER_ADDR) is rank 0.
    assert_eq!(first.network_mode.as_deref(), Some("bridge"));
    assert_eq!(second.network_mode, Some(format!("container:{rank0_name}")));
    assert_eq!(run_network(false, &ShellDefaults::default()), "bridge");
}

#[test]
fn per_gpu_ranks_get_the_host_network_only_when_the_spec_asks() {
    let none = ShellDefaults {
        network: "none".into(),
        ..ShellDefaults::default()
    };
    assert_eq!(run_network(false, &none), "none");
    let plan = plan_on(Launcher::PerGpu, &gpus(), GpuPlumbing::None, "none");
    let modes: Vec<_> = plan
        .ranks
        .iter()
        .map(|r| host(&r.body).network_mode.clone())
        .collect();
    assert_eq!(
        modes,
        [
            Some("none".into()),
            Some(format!("container:gpudeck-{RUN}-rank0"))
        ]
    );
    assert_eq!(run_network(true, &none), "host");
    let plan = plan_on(Launcher::PerGpu, &gpus(), GpuPlumbing::None, "host");
    for rank in &plan.ranks {
        assert_eq!(host(&rank.body).network_mode.as_deref(), Some("host"));
    }
    let single = plan_on(Launcher::Single, &gpus(), GpuPlumbing::None, "none");
    assert_eq!(
        host(&single.ranks[0].body).network_mode.as_deref(),
        Some("none")
    );
}

#[test]
fn cdi_names_the_devices_and_keeps_the_nvidia_runtime_out_of_it() {
    let plan = plan_with(Launcher::PerGpu, &gpus(), GpuPlumbing::Cdi);
    let body = &plan.ranks[1].body;
    let request = requested(body);
    assert_eq!(request[0].driver.as_deref(), Some("cdi"));
    assert_eq!(
        request[0].device_ids,
        Some(vec!["nvidia.com/gpu=GPU-bbb".to_string()])
    );
    assert_eq!(env(body)["NVIDIA_VISIBLE_DEVICES"], "void");
    assert_eq!(env(body)["CUDA_VISIBLE_DEVICES"], "GPU-bbb");
}

#[test]
fn no_gpus_means_no_device_request_and_no_devices_from_the_runtime() {
    let plan = plan_with(Launcher::Single, &[], GpuPlumbing::None);
    let body = &plan.ranks[0].body;
    assert!(requested(body).is_empty());
    assert_eq!(env(body)["NVIDIA_VISIBLE_DEVICES"], "void");
    assert_eq!(env(body)["CUDA_VISIBLE_DEVICES"], "");
}

#[test]
fn a_workdir_holding_the_docker_socket_is_refused() {
    let ranks = ranks(Launcher::Single, &[]);
    let err = container_plan(&ContainerInput {
        run_id: RUN,
        image: "busybox",
        launcher: Launcher::Single,
        ranks: &ranks,
        gpus: &[],
        workdir: Path::new("/var/run"),
        defaults: &ShellDefaults::default(),
        plumbing: GpuPlumbing::None,
        host_user: (1000, 1000),
        network: "bridge",
    })
    .unwrap_err();
    assert!(
        err.to_string().starts_with("refusing to mount /var/run"),
        "{err}"
    );
    assert!(err.fix().contains("Docker socket"), "{err}");
}

#[test]
fn the_plan_round_trips_through_a_private_file() {
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(Launcher::PerGpu);
    plan.write(dir.path()).unwrap();
    let path: PathBuf = dir.path().join(CONTAINERS_FILE);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(ContainerPlan::read(dir.path()).unwrap(), plan);
    let missing = ContainerPlan::read(&dir.path().join("nope")).unwrap_err();
    assert!(matches!(missing, RunError::Store { .. }), "{missing}");
}
