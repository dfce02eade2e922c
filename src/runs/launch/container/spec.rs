//! The containers of a container run, one per rank: the shell's container body (GPUs by UUID,
//! the work dir at /workspace, host user, shm, ulimits, isolation) with the rank's command, env
//! and labels, an init process, and for per-gpu runs rank 0's network and IPC namespaces shared
//! by every rank; a service's container also publishes its ports (`service.rs`). Pure.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use bollard::models::ContainerCreateBody;
use serde::{Deserialize, Serialize};

use super::service::{add_service, SERVICE_NETWORK};
use crate::runs::error::RunError;
use crate::runs::record::{RankRecord, RunGpu};
use crate::runs::spec::{Launcher, RunSpec, ServiceSpec};
use crate::runs::store::write_atomic;
use crate::shell::{
    container_body, GpuPlumbing, ResolvedGpu, ResolvedGpus, ShellDefaults, ShellRequest,
};

pub use super::labels::{LABEL_RANK, LABEL_RUN};
/// The file in the run directory with the containers to create, written by `gpudeck run` and
/// read by the supervisor (which runs without the config).
pub const CONTAINERS_FILE: &str = "containers.json";
/// Its schema id.
pub const CONTAINERS_SCHEMA: &str = "gpudeck.run-containers/v1";
/// The network a run asks for with `host_network = true`; never taken unasked.
pub const HOST_NETWORK: &str = "host";

/// What a run's containers are made from.
#[derive(Debug, Clone, Copy)]
pub struct ContainerInput<'a> {
    pub run_id: &'a str,
    pub image: &'a str,
    pub launcher: Launcher,
    /// The ranks as planned, their argv and env already for inside the container.
    pub ranks: &'a [RankRecord],
    pub gpus: &'a [RunGpu],
    /// The host directory mounted as the work dir.
    pub workdir: &'a Path,
    pub defaults: &'a ShellDefaults,
    pub plumbing: GpuPlumbing,
    pub host_user: (u32, u32),
    /// Rank 0's network as [`run_network`] chose it ("bridge", "none" or, asked for, "host").
    pub network: &'a str,
    /// Set for a service (single launcher, one container): its ports are published on the
    /// host's 127.0.0.1 and the container is labelled with its kind.
    pub service: Option<&'a ServiceSpec>,
}

/// One rank's container, to be created under `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankContainer {
    pub rank: usize,
    pub name: String,
    pub body: ContainerCreateBody,
}

/// `containers.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerPlan {
    pub schema: String,
    pub ranks: Vec<RankContainer>,
}

impl ContainerPlan {
    /// Writes the plan into the run directory (private, atomically).
    pub fn write(&self, dir: &Path) -> Result<(), RunError> {
        let text = serde_json::to_vec_pretty(self)
            .map_err(|e| RunError::store(&dir.join(CONTAINERS_FILE), e))?;
        write_atomic(dir, CONTAINERS_FILE, &text)
    }

    /// Reads the plan of the run in `dir`.
    pub fn read(dir: &Path) -> Result<ContainerPlan, RunError> {
        let path = dir.join(CONTAINERS_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| RunError::store(&path, e))?;
        serde_json::from_str(&text).map_err(|e| RunError::store(&path, e))
    }
}

/// `gpudeck-<run id>-rank<N>`.
pub fn container_name(run_id: &str, rank: usize) -> String {
    format!("gpudeck-{run_id}-rank{rank}")
}

/// The network of a run's (first) container: the host's only when the spec asks for it
/// (`host_network = true`), a bridge for a service, which publishes its ports from it (its own,
/// named once the run has an id: [`SERVICE_NETWORK`] says why), else the `[shell]` default,
/// "bridge" or "none".
pub fn run_network(spec: &RunSpec, defaults: &ShellDefaults) -> String {
    if spec.host_network {
        HOST_NETWORK.into()
    } else if spec.service.is_some() {
        SERVICE_NETWORK.into()
    } else {
        defaults.network.clone()
    }
}

/// A rank's network mode. Per-gpu ranks 1+ join rank 0's network namespace, so every rank
/// reaches the others on 127.0.0.1 (MASTER_ADDR, TF_CONFIG as on the host) in a namespace of
/// the run's own: with "none" only the ranks themselves, with "bridge" also the outside.
fn rank_network(input: &ContainerInput<'_>, rank: usize) -> String {
    if input.launcher == Launcher::PerGpu && rank > 0 && input.network != HOST_NETWORK {
        format!("container:{}", container_name(input.run_id, 0))
    } else {
        input.network.to_string()
    }
}

/// Every rank's container, rank order.
pub fn container_plan(input: &ContainerInput<'_>) -> Result<ContainerPlan, RunError> {
    let ranks = input
        .ranks
        .iter()
        .map(|rank| rank_container(input, rank))
        .collect::<Result<_, _>>()?;
    Ok(ContainerPlan {
        schema: CONTAINERS_SCHEMA.into(),
        ranks,
    })
}

fn rank_container(
    input: &ContainerInput<'_>,
    rank: &RankRecord,
) -> Result<RankContainer, RunError> {
    let mut req = ShellRequest::new(input.image);
    req.workdir = Some(input.workdir.to_path_buf());
    req.command = rank.argv.clone();
    req.tty = false;
    let gpus = rank_gpus(rank, input.gpus);
    let mut body = container_body(
        &req,
        input.defaults,
        &gpus,
        input.plumbing,
        input.host_user,
        input.workdir,
    )?;
    let name = container_name(input.run_id, rank.rank);
    body.env = Some(merged_env(&rank.env, body.env.take().unwrap_or_default()));
    body.labels = Some(HashMap::from([
        (LABEL_RUN.to_string(), input.run_id.to_string()),
        (LABEL_RANK.to_string(), rank.rank.to_string()),
    ]));
    // Output only: nothing reads a run's stdin.
    body.open_stdin = Some(false);
    body.stdin_once = Some(false);
    body.attach_stdin = Some(false);
    let host = body.host_config.get_or_insert_with(Default::default);
    // An init as PID 1 passes SIGINT and SIGTERM on (PID 1 ignores signals it does not handle)
    // and reaps DataLoader workers, so stopping behaves as on the host.
    host.init = Some(true);
    host.network_mode = Some(rank_network(input, rank.rank));
    if input.launcher == Launcher::PerGpu {
        // One IPC namespace and /dev/shm for all ranks (rank 0's), for NCCL's shared memory.
        if rank.rank == 0 {
            host.ipc_mode = Some("shareable".into());
        } else {
            host.ipc_mode = Some(format!("container:{}", container_name(input.run_id, 0)));
            host.shm_size = None;
        }
    }
    if let Some(service) = input.service {
        add_service(&mut body, service);
    }
    Ok(RankContainer {
        rank: rank.rank,
        name,
        body,
    })
}

/// The rank's GPUs by UUID, in the rank's order.
fn rank_gpus(rank: &RankRecord, gpus: &[RunGpu]) -> ResolvedGpus {
    let gpus = rank
        .gpus
        .iter()
        .filter_map(|index| gpus.iter().find(|g| g.index == *index))
        .map(|g| ResolvedGpu {
            index: g.index,
            uuid: g.uuid.clone(),
            name: g.name.clone(),
        })
        .collect();
    ResolvedGpus { gpus }
}

/// The rank's variables, then the shell body's (`NVIDIA_VISIBLE_DEVICES` as the GPU request
/// needs it, `HOME` for a host user), which win; sorted by name.
fn merged_env(rank: &BTreeMap<String, String>, body: Vec<String>) -> Vec<String> {
    let mut env = rank.clone();
    for entry in body {
        if let Some((name, value)) = entry.split_once('=') {
            env.insert(name.to_string(), value.to_string());
        }
    }
    env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    use bollard::models::{DeviceRequest, HostConfig, MountType};

    use super::*;
    use crate::runs::launch::plan::{plan_ranks, LaunchInput, Ports};

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
            workers: gpus.len(),
            env: &env,
            workdir: Path::new("/workspace"),
            ports: Some(&ports),
            worker_logs: None,
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
            service: None,
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
        // torchrun's arguments as pre-flight built them, its script relative to the work dir
        // torchrun runs in.
        assert_eq!(cmd[3..], ["./train.sh", "--fast"]);
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
        assert_eq!(
            run_network(&RunSpec::default(), &ShellDefaults::default()),
            "bridge"
        );
    }

    #[test]
    fn per_gpu_ranks_get_the_host_network_only_when_the_spec_asks() {
        let none = ShellDefaults {
            network: "none".into(),
            ..ShellDefaults::default()
        };
        assert_eq!(run_network(&RunSpec::default(), &none), "none");
        let on_host = RunSpec {
            host_network: true,
            ..RunSpec::default()
        };
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
        assert_eq!(run_network(&on_host, &none), "host");
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

    /// A notebook on port 8888, with `[shell] network = "none"`, as `gpudeck run` plans it.
    #[test]
    fn a_service_is_published_on_loopback_from_the_bridge_and_keeps_every_shell_default() {
        use crate::runs::spec::{ServiceKind, ServicePort};
        let none = ShellDefaults {
            network: "none".into(),
            ..ShellDefaults::default()
        };
        let spec = RunSpec {
            service: Some(ServiceSpec {
                kind: ServiceKind::Notebook,
                ports: vec![ServicePort {
                    name: "http".into(),
                    port: 8888,
                }],
                idle_stop_secs: None,
            }),
            ..RunSpec::default()
        };
        let network = run_network(&spec, &none);
        assert_eq!(network, "bridge", "a service's ports need a network");
        let gpus = gpus();
        let ranks = ranks(Launcher::Single, &gpus);
        let plan = container_plan(&ContainerInput {
            run_id: RUN,
            image: "quay.io/jupyter/pytorch-notebook:cuda12-2024-11-25",
            launcher: Launcher::Single,
            ranks: &ranks,
            gpus: &gpus,
            workdir: Path::new("/home/ada/project"),
            defaults: &none,
            plumbing: GpuPlumbing::DeviceRequest,
            host_user: (1000, 1000),
            network: &network,
            service: spec.service.as_ref(),
        })
        .unwrap();
        assert_eq!(plan.ranks.len(), 1);
        let body = &plan.ranks[0].body;
        let labels = body.labels.clone().unwrap();
        assert_eq!(labels[LABEL_RUN], RUN);
        assert_eq!(labels[LABEL_RANK], "0");
        assert_eq!(labels["gpudeck.service"], "notebook");
        assert_eq!(body.exposed_ports, Some(vec!["8888/tcp".to_string()]));
        let host = host(body);
        assert_eq!(host.network_mode.as_deref(), Some("bridge"));
        let bindings = host.port_bindings.clone().unwrap();
        let binding = bindings["8888/tcp"].clone().unwrap();
        assert_eq!(binding.len(), 1);
        assert_eq!(binding[0].host_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(binding[0].host_port.as_deref(), Some("8888"));
        // Nothing else differs from a run's container.
        assert_eq!(body.user.as_deref(), Some("1000:1000"));
        let mounts = host.mounts.clone().unwrap();
        assert_eq!(mounts[0].source.as_deref(), Some("/home/ada/project"));
        assert_eq!(mounts[0].target.as_deref(), Some("/workspace"));
        assert_eq!(host.privileged, Some(false));
        assert_eq!(host.security_opt, Some(vec!["no-new-privileges".into()]));
        assert_eq!(host.shm_size, Some(8 << 30));
        assert_eq!(host.init, Some(true));
        assert_eq!(
            requested(body)[0].device_ids.as_ref().map(Vec::len),
            Some(2)
        );
        let plain = plan_on(
            Launcher::Single,
            &gpus,
            GpuPlumbing::DeviceRequest,
            "bridge",
        );
        let plain = &plain.ranks[0].body;
        assert_eq!(plain.exposed_ports, None, "a run publishes nothing");
        assert_eq!(plain.host_config.as_ref().unwrap().port_bindings, None);
        assert!(!plain
            .labels
            .as_ref()
            .unwrap()
            .contains_key("gpudeck.service"));
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
            service: None,
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
}
