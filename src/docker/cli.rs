//! The Docker subcommands: `gpudeck containers`, `gpudeck images` and `gpudeck pull`, for scripts.

use std::process::ExitCode;

use super::connect::{resolve_host, Engine};
use super::error::DockerError;
use super::render::{render_containers_text, render_images_text};

/// The JSON schema id of `gpudeck containers --json`; bump it when a field changes meaning.
pub const CONTAINERS_SCHEMA: &str = "gpudeck.containers/v1";

/// The JSON schema id of `gpudeck images --json`.
pub const IMAGES_SCHEMA: &str = "gpudeck.images/v1";

/// What a Docker subcommand should do.
pub enum DockerTask {
    Containers { json: bool },
    Images { json: bool },
    Pull { image: String, json: bool },
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
            DockerTask::Containers { json } => print(
                engine.containers().await,
                json.then_some((CONTAINERS_SCHEMA, "containers")),
                render_containers_text,
            ),
            DockerTask::Images { json } => print(
                engine.images().await,
                json.then_some((IMAGES_SCHEMA, "images")),
                render_images_text,
            ),
            DockerTask::Pull { image, json } => {
                let code = crate::pull::pull_cli(engine.client().clone(), &image, None, json).await;
                ExitCode::from(u8::try_from(code).unwrap_or(1))
            }
        }
    })
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
