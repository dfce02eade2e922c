//! Listing and inspecting containers, converted into gpudeck's container types.

use std::collections::HashMap;

use bollard::models::{
    ContainerInspectResponse, ContainerStateStatusEnum, ContainerSummary, PortMap,
};
use bollard::query_parameters::ListContainersOptionsBuilder;
use futures::{StreamExt, TryStreamExt};

use super::connect::Engine;
use super::error::DockerError;
use super::gpus::gpu_grants;
use super::time::unix_seconds;
use super::types::{ContainerDetails, ContainerInfo, ContainerState, GpuGrant};

/// How many inspects run at once when listing: enough to hide latency, few enough for a laptop.
const INSPECT_CONCURRENCY: usize = 16;

impl Engine {
    /// Every container, running or not, newest first; each inspected once for GPUs and start time.
    /// A container removed between the list and its inspect is left out.
    pub async fn containers(&self) -> Result<Vec<ContainerInfo>, DockerError> {
        let options = ListContainersOptionsBuilder::new().all(true).build();
        let summaries = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(|e| self.error(e, "the container list"))?;
        let infos: Vec<Option<ContainerInfo>> = futures::stream::iter(summaries)
            .map(|summary| async move {
                let id = summary.id.clone().unwrap_or_default();
                Ok::<_, DockerError>(
                    self.inspect(&id)
                        .await?
                        .map(|i| container_info(&summary, &i)),
                )
            })
            .buffered(INSPECT_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(infos.into_iter().flatten().collect())
    }

    /// One container by id or name; `None` when it does not exist (any more).
    pub async fn container(&self, id: &str) -> Result<Option<ContainerInfo>, DockerError> {
        Ok(self
            .container_parts(id)
            .await?
            .map(|(summary, inspect)| container_info(&summary, &inspect)))
    }

    /// Everything the detail view shows about one container.
    pub async fn details(&self, id: &str) -> Result<ContainerDetails, DockerError> {
        let (summary, inspect) =
            self.container_parts(id)
                .await?
                .ok_or_else(|| DockerError::NotFound {
                    what: format!("container {id}"),
                })?;
        Ok(container_details(&summary, &inspect))
    }

    async fn inspect(&self, id: &str) -> Result<Option<ContainerInspectResponse>, DockerError> {
        match self.docker.inspect_container(id, None).await {
            Ok(inspect) => Ok(Some(inspect)),
            Err(e) => match self.error(e, &format!("container {id}")) {
                DockerError::NotFound { .. } => Ok(None),
                other => Err(other),
            },
        }
    }

    /// The list entry (for the engine's status text) and the inspect of one container.
    async fn container_parts(
        &self,
        id: &str,
    ) -> Result<Option<(ContainerSummary, ContainerInspectResponse)>, DockerError> {
        let Some(inspect) = self.inspect(id).await? else {
            return Ok(None);
        };
        let full_id = inspect.id.clone().unwrap_or_else(|| id.to_string());
        let filters = HashMap::from([("id", vec![full_id.as_str()])]);
        let options = ListContainersOptionsBuilder::new()
            .all(true)
            .filters(&filters)
            .build();
        let summaries = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(|e| self.error(e, "the container list"))?;
        Ok(summaries
            .into_iter()
            .find(|s| s.id.as_deref() == Some(full_id.as_str()))
            .map(|summary| (summary, inspect)))
    }
}

/// Combines a list entry with its inspect; the inspect is newer, so its state wins.
pub(crate) fn container_info(
    summary: &ContainerSummary,
    inspect: &ContainerInspectResponse,
) -> ContainerInfo {
    let state = inspect.state.as_ref();
    let container_state = state
        .and_then(|s| s.status)
        .map(convert_state)
        .unwrap_or(ContainerState::Unknown);
    let started_at = match container_state {
        ContainerState::Running | ContainerState::Paused | ContainerState::Restarting => state
            .and_then(|s| s.started_at.as_deref())
            .and_then(unix_seconds),
        _ => None,
    };
    let exit_code = match container_state {
        ContainerState::Exited | ContainerState::Dead => state.and_then(|s| s.exit_code),
        _ => None,
    };
    let name = summary.names.as_ref().and_then(|n| n.first());
    let name = name
        .or(inspect.name.as_ref())
        .map(|n| n.trim_start_matches('/'));
    ContainerInfo {
        id: summary
            .id
            .clone()
            .or(inspect.id.clone())
            .unwrap_or_default(),
        name: name.unwrap_or_default().to_string(),
        image: summary.image.clone().unwrap_or_default(),
        image_id: summary
            .image_id
            .clone()
            .or(inspect.image.clone())
            .unwrap_or_default(),
        command: summary.command.clone().unwrap_or_default(),
        state: container_state,
        status: summary.status.clone().unwrap_or_default(),
        created: summary.created.unwrap_or_default(),
        started_at,
        exit_code,
        gpus: grants_of(inspect),
        labels: summary
            .labels
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
    }
}

/// The GPU grants in a container's host config and (image-inherited) environment.
fn grants_of(inspect: &ContainerInspectResponse) -> Vec<GpuGrant> {
    let host = inspect.host_config.as_ref();
    let env = inspect.config.as_ref().and_then(|c| c.env.as_deref());
    gpu_grants(
        host.and_then(|h| h.device_requests.as_deref())
            .unwrap_or_default(),
        host.and_then(|h| h.devices.as_deref()).unwrap_or_default(),
        env.unwrap_or_default(),
    )
}

fn convert_state(status: ContainerStateStatusEnum) -> ContainerState {
    match status {
        ContainerStateStatusEnum::CREATED => ContainerState::Created,
        ContainerStateStatusEnum::RUNNING | ContainerStateStatusEnum::STOPPING => {
            ContainerState::Running
        }
        ContainerStateStatusEnum::PAUSED => ContainerState::Paused,
        ContainerStateStatusEnum::RESTARTING => ContainerState::Restarting,
        ContainerStateStatusEnum::REMOVING => ContainerState::Removing,
        ContainerStateStatusEnum::EXITED => ContainerState::Exited,
        ContainerStateStatusEnum::DEAD => ContainerState::Dead,
        ContainerStateStatusEnum::EMPTY => ContainerState::Unknown,
    }
}

fn container_details(
    summary: &ContainerSummary,
    inspect: &ContainerInspectResponse,
) -> ContainerDetails {
    let config = inspect.config.clone().unwrap_or_default();
    let host = inspect.host_config.clone().unwrap_or_default();
    let mounts = inspect
        .mounts
        .iter()
        .flatten()
        .map(|m| {
            let mode = if m.rw.unwrap_or(true) { "rw" } else { "ro" };
            let source = m.source.as_deref().filter(|s| !s.is_empty());
            let source = source.or(m.name.as_deref()).unwrap_or("");
            let target = m.destination.as_deref().unwrap_or("");
            format!("{source} -> {target} ({mode})")
        })
        .collect();
    // A stopped container has no live port map; its configured bindings still say what it asks for.
    let live = inspect
        .network_settings
        .as_ref()
        .and_then(|n| n.ports.as_ref())
        .filter(|p| !p.is_empty());
    let ports = format_ports(live.or(host.port_bindings.as_ref()));
    let restart_policy = host
        .restart_policy
        .as_ref()
        .map(|p| {
            let name = p.name.map(|n| n.to_string()).unwrap_or_default();
            match p.maximum_retry_count {
                Some(max) if max > 0 => format!("{name}:{max}"),
                _ => name,
            }
        })
        .unwrap_or_default();
    ContainerDetails {
        info: container_info(summary, inspect),
        entrypoint: config.entrypoint.unwrap_or_default(),
        cmd: config.cmd.unwrap_or_default(),
        env: config.env.unwrap_or_default(),
        mounts,
        ports,
        working_dir: config.working_dir.unwrap_or_default(),
        user: config.user.unwrap_or_default(),
        runtime: host.runtime.unwrap_or_default(),
        network_mode: host.network_mode.unwrap_or_default(),
        restart_policy,
    }
}

/// "host_ip:host_port -> container_port/proto" per binding, sorted; an unpublished port alone.
fn format_ports(ports: Option<&PortMap>) -> Vec<String> {
    let mut lines = Vec::new();
    for (container_port, bindings) in ports.into_iter().flatten() {
        let bindings = bindings.as_deref().unwrap_or_default();
        if bindings.is_empty() {
            lines.push(container_port.clone());
        }
        for binding in bindings {
            let ip = binding.host_ip.as_deref().filter(|ip| !ip.is_empty());
            let port = binding.host_port.as_deref().unwrap_or("");
            lines.push(format!(
                "{}:{port} -> {container_port}",
                ip.unwrap_or("0.0.0.0")
            ));
        }
    }
    lines.sort();
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::PortBinding;

    #[test]
    fn ports_read_like_docker_port() {
        let map: PortMap = HashMap::from([
            (
                "80/tcp".to_string(),
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".into()),
                    host_port: Some("8080".into()),
                }]),
            ),
            ("443/tcp".to_string(), None),
        ]);
        assert_eq!(
            format_ports(Some(&map)),
            vec!["127.0.0.1:8080 -> 80/tcp", "443/tcp"]
        );
    }
}
