//! The Docker domain types the rest of gpudeck speaks: containers, images, their GPUs and facts, logs.

use std::collections::BTreeMap;

use serde::Serialize;

pub use crate::image::ImageFacts;

/// A container's lifecycle state, as the engine reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerState {
    Created,
    Running,
    Paused,
    Restarting,
    Removing,
    Exited,
    Dead,
    Unknown,
}

impl std::fmt::Display for ContainerState {
    /// The engine's own word for the state, as `docker ps` shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ContainerState::Created => "created",
            ContainerState::Running => "running",
            ContainerState::Paused => "paused",
            ContainerState::Restarting => "restarting",
            ContainerState::Removing => "removing",
            ContainerState::Exited => "exited",
            ContainerState::Dead => "dead",
            ContainerState::Unknown => "unknown",
        })
    }
}

/// How a container was given GPUs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "via")]
pub enum GpuGrant {
    /// `--gpus` / HostConfig.DeviceRequests with the `gpu` capability.
    DeviceRequest { devices: GpuSelection },
    /// CDI device names such as `nvidia.com/gpu=0` (HostConfig.DeviceRequests with driver "cdi",
    /// or `--device nvidia.com/gpu=...`).
    Cdi { devices: Vec<String> },
    /// `NVIDIA_VISIBLE_DEVICES` in the container's environment (the nvidia runtime reads it).
    Env { devices: GpuSelection },
}

/// Which GPUs: all of them, a count, or a list of indices/UUIDs as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuSelection {
    All,
    Count(u32),
    Devices(Vec<String>),
    None,
}

/// One container, from the list plus a one-time inspect (for GPUs and start time).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContainerInfo {
    /// Full 64-hex id.
    pub id: String,
    /// Name without the leading slash.
    pub name: String,
    /// The image as the user named it (e.g. `tensorflow/tensorflow:2.17.0-gpu`).
    pub image: String,
    pub image_id: String,
    pub command: String,
    pub state: ContainerState,
    /// The engine's human status, e.g. "Up 3 hours" or "Exited (1) 2 minutes ago".
    pub status: String,
    /// Unix seconds.
    pub created: i64,
    /// Unix seconds, when running (from inspect).
    pub started_at: Option<i64>,
    pub exit_code: Option<i64>,
    /// Every way GPUs were granted; empty = no GPUs.
    pub gpus: Vec<GpuGrant>,
    pub labels: BTreeMap<String, String>,
}

/// Live resource use of one running container.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ContainerStats {
    /// Percent of one CPU (200% = two CPUs busy), as `docker stats` shows it.
    pub cpu_pct: f64,
    pub memory_used_bytes: u64,
    pub memory_limit_bytes: u64,
}

/// One local image.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImageInfo {
    /// `sha256:...`
    pub id: String,
    /// `repo:tag` names; empty for a dangling image.
    pub tags: Vec<String>,
    pub digests: Vec<String>,
    pub size_bytes: u64,
    /// Unix seconds.
    pub created: i64,
    pub facts: ImageFacts,
}

/// Which output stream a log line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogStream {
    Stdout,
    Stderr,
}

/// One line of a container's log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogLine {
    pub stream: LogStream,
    /// RFC 3339 timestamp from the engine, when asked for.
    pub timestamp: Option<String>,
    pub text: String,
}

/// What `docker inspect` tells that the list does not.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContainerDetails {
    pub info: ContainerInfo,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    /// "source -> destination (mode)" lines.
    pub mounts: Vec<String>,
    /// "host_ip:host_port -> container_port/proto" lines.
    pub ports: Vec<String>,
    pub working_dir: String,
    pub user: String,
    pub runtime: String,
    pub network_mode: String,
    pub restart_policy: String,
}

/// A change the engine announced on its event stream, reduced to what the views need to refresh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    /// Created, started, stopped, paused, renamed...: re-read this container.
    ContainerChanged {
        id: String,
    },
    ContainerRemoved {
        id: String,
    },
    /// Pulled, tagged, untagged, deleted...: re-read the image list.
    ImagesChanged,
}

/// Facts about the engine, for the header, doctor and shell pre-flight.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EngineInfo {
    pub server_version: String,
    pub api_version: String,
    pub os: String,
    pub docker_root_dir: String,
    pub runtimes: Vec<String>,
    pub default_runtime: String,
    pub cdi_spec_dirs: Vec<String>,
    /// Whether a CDI spec in those dirs declares NVIDIA GPUs (read on this machine, so only
    /// meaningful for a local engine).
    pub nvidia_cdi: bool,
    /// Whether `nvidia-container-runtime-hook` is on PATH: dockerd then registers its `nvidia`
    /// device driver and `--gpus` works without the `nvidia` runtime (read on this machine, so
    /// only meaningful for a local engine).
    pub nvidia_hook: bool,
    pub cgroup_version: String,
}
