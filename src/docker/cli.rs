//! The Docker subcommands: `gpudeck containers`, `gpudeck images` and `gpudeck pull`, for scripts.

use std::process::ExitCode;

use super::connect::{resolve_host, Engine};
use super::error::DockerError;
use super::render::{render_containers_text, render_images_text, ContainerListing};
use super::types::ContainerInfo;
use crate::gpu::container_use::container_gpu_use;
use crate::gpu::GpuSample;

/// The JSON schema id of `gpudeck containers --json`; bump it when a field changes meaning.
pub const CONTAINERS_SCHEMA: &str = "gpudeck.containers/v1";

/// The JSON schema id of `gpudeck images --json`.
pub const IMAGES_SCHEMA: &str = "gpudeck.images/v1";

/// One sample of every GPU, to see which containers' processes hold them; `None` when the
/// GPUs cannot be read (no driver).
pub type GpuSamples = Box<dyn FnOnce() -> Option<Vec<GpuSample>>>;

/// What a Docker subcommand should do.
pub enum DockerTask {
    /// The containers, each with what its processes hold on the GPUs (read with `gpus`).
    Containers {
        json: bool,
        gpus: GpuSamples,
    },
    Images {
        json: bool,
    },
    Pull {
        image: String,
        json: bool,
    },
}

/// Runs one Docker subcommand to completion on `runtime`; exit code 0 ok, 1 failed, 2 bad input.
pub fn run(
    task: DockerTask,
    host_override: Option<&str>,
    runtime: &tokio::runtime::Runtime,
) -> ExitCode {
    runtime.block_on(async move {
        let engine = match connect(host_override).await {
            Ok(engine) => engine,
            Err(e) => {
                errln!(
                    "{}",
                    crate::output::wrap(&format!("gpudeck: {}: {e}\n{}", e.title(), e.fix()), "")
                );
                return ExitCode::from(1);
            }
        };
        match task {
            DockerTask::Containers { json, gpus } => print(
                engine.containers().await.map(|c| with_gpu_use(c, gpus)),
                json.then_some((CONTAINERS_SCHEMA, "containers")),
                |rows| render_containers_text(rows, crate::output::width()),
            ),
            DockerTask::Images { json } => print(
                engine.images().await,
                json.then_some((IMAGES_SCHEMA, "images")),
                |rows| render_images_text(rows, crate::output::width()),
            ),
            DockerTask::Pull { image, json } => {
                let code = crate::pull::pull_cli(engine.client().clone(), &image, None, json).await;
                ExitCode::from(u8::try_from(code).unwrap_or(1))
            }
        }
    })
}

/// Each container with the GPUs its processes hold, as the Containers tab reads them; the GPUs
/// are read only when there is a container to look for.
pub fn with_gpu_use(containers: Vec<ContainerInfo>, gpus: GpuSamples) -> Vec<ContainerListing> {
    let samples = match containers.is_empty() {
        true => None,
        false => gpus(),
    };
    containers
        .into_iter()
        .map(|info| {
            let used = samples
                .as_ref()
                .and_then(|samples| container_gpu_use(samples, &info.id));
            ContainerListing::new(info, used, samples.is_some())
        })
        .collect()
}

async fn connect(host_override: Option<&str>) -> Result<Engine, DockerError> {
    let spec = resolve_host(host_override, |k| std::env::var(k).ok())?;
    Engine::connect(&spec).await
}

/// The listing as text, or as JSON when `json` names the schema and the key of the list.
fn print<T: serde::Serialize>(
    result: Result<Vec<T>, DockerError>,
    json: Option<(&'static str, &'static str)>,
    text: impl Fn(&[T]) -> String,
) -> ExitCode {
    match result {
        Ok(items) => match json {
            Some((schema, key)) => match listing_json(schema, key, &items) {
                Ok(s) => {
                    outln!("{s}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    errln!("gpudeck: could not encode JSON: {e}");
                    ExitCode::from(1)
                }
            },
            None => {
                out!("{}", text(&items));
                ExitCode::SUCCESS
            }
        },
        Err(e) => {
            errln!(
                "{}",
                crate::output::wrap(&format!("gpudeck: {}: {e}\n{}", e.title(), e.fix()), "")
            );
            ExitCode::from(1)
        }
    }
}

/// `{"schema": ..., key: [items]}`, schema first like every other JSON twin, so a field can be
/// added later without breaking a script.
pub fn listing_json<T: serde::Serialize>(
    schema: &'static str,
    key: &'static str,
    items: &[T],
) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&Listing { schema, key, items })
}

struct Listing<'a, T> {
    schema: &'static str,
    key: &'static str,
    items: &'a [T],
}

impl<T: serde::Serialize> serde::Serialize for Listing<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Listing", 2)?;
        s.serialize_field("schema", self.schema)?;
        s.serialize_field(self.key, self.items)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(id: &str, name: &str) -> ContainerInfo {
        ContainerInfo {
            id: id.to_string(),
            name: name.to_string(),
            image: "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime".into(),
            image_id: "sha256:00".into(),
            command: "python train.py".into(),
            state: crate::docker::ContainerState::Running,
            status: "Up 3 hours".into(),
            created: 0,
            started_at: None,
            exit_code: None,
            gpus: vec![],
            labels: Default::default(),
        }
    }

    #[test]
    fn containers_carry_the_gpus_their_processes_hold_from_one_read_of_the_gpus() {
        use crate::gpu::GpuProcess;
        use crate::host::{ContainerRef, ContainerRuntime};
        let (train, idle) = ("a".repeat(64), "b".repeat(64));
        let held = |gpu: u32, gib: u64| GpuSample {
            processes: vec![GpuProcess {
                gpu_index: gpu,
                pid: 4450077 + gpu,
                kind: crate::gpu::ProcessKind::Compute,
                used_memory_bytes: Some(gib << 30),
                user: None,
                command: None,
                container: Some(ContainerRef {
                    runtime: ContainerRuntime::Docker,
                    id: train.clone(),
                }),
                identity: None,
                gpu_util: None,
                cpu_pct: None,
                host_memory_bytes: None,
            }],
            ..GpuSample::default()
        };
        let samples = vec![held(0, 30), GpuSample::default(), held(2, 21)];
        let listed = with_gpu_use(
            vec![container(&train, "train"), container(&idle, "idle")],
            Box::new(move || Some(samples)),
        );
        assert_eq!(listed[0].gpus_used, Some(vec![0, 2]));
        assert_eq!(listed[0].gpu_memory_bytes, Some(51 << 30));
        assert_eq!(listed[1].gpus_used, Some(vec![]));
        let text = render_containers_text(&listed, 200);
        assert!(text.contains("uses 0,2   51.0GiB   train"), "{text}");
        let doc: serde_json::Value =
            serde_json::from_str(&listing_json(CONTAINERS_SCHEMA, "containers", &listed).unwrap())
                .unwrap();
        assert_eq!(doc["containers"][0]["gpus_used"], serde_json::json!([0, 2]));

        let unread = with_gpu_use(vec![container(&train, "train")], Box::new(|| None));
        assert_eq!(unread[0].gpus_used, None, "unknown, not none");
        let none = with_gpu_use(
            vec![],
            Box::new(|| panic!("no GPUs read for no containers")),
        );
        assert!(none.is_empty());
    }

    #[test]
    fn listings_carry_their_schema_and_the_list_under_a_key() {
        let text = listing_json(IMAGES_SCHEMA, "images", &["a", "b"]).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["schema"], "gpudeck.images/v1");
        assert_eq!(doc["images"], serde_json::json!(["a", "b"]));
        assert!(text.trim_start().starts_with("{\n  \"schema\""), "{text}");
        let text = listing_json(CONTAINERS_SCHEMA, "containers", &[] as &[u8]).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["schema"], "gpudeck.containers/v1");
        assert_eq!(doc["containers"], serde_json::json!([]));
    }
}
