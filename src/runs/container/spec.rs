//! The containers of a container run, one per rank: the shell's container body (GPUs by UUID,
//! the work dir at /workspace, host user, shm, ulimits, isolation) with the rank's command, env
//! and labels, an init process, and for per-gpu runs rank 0's network and IPC namespaces shared
//! by every rank. Pure.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use bollard::models::ContainerCreateBody;
use serde::{Deserialize, Serialize};

use crate::runs::error::RunError;
use crate::runs::record::{RankRecord, RunGpu};
use crate::runs::spec::Launcher;
use crate::runs::store::write_atomic;
use crate::shell::{
    container_body, GpuPlumbing, ResolvedGpu, ResolvedGpus, ShellDefaults, ShellRequest,
};

/// Every container of a run carries this label with the run id: `docker ps --filter
/// label=gpudeck.run=ID` finds them, with or without the supervisor.
pub const LABEL_RUN: &str = "gpudeck.run";
/// The rank the container runs.
pub const LABEL_RANK: &str = "gpudeck.rank";
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
/// (`host_network = true`), else the `[shell]` default, "bridge" or "none".
pub fn run_network(host_network: bool, defaults: &ShellDefaults) -> String {
    if host_network {
        HOST_NETWORK.into()
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
#[path = "spec_tests.rs"]
mod tests;
