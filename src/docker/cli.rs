//! The Docker subcommands: `gpudeck containers`, `gpudeck images` and `gpudeck pull`, for scripts.

use std::process::ExitCode;

use super::connect::{resolve_host, Engine};
use super::error::DockerError;
use super::render::{render_containers_text, render_images_text};

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
                errln!("gpudeck: {}: {e}\n{}", e.title(), e.fix());
                return ExitCode::from(1);
            }
        };
        match task {
            DockerTask::Containers { json } => print(engine.containers().await, json, |c| {
                render_containers_text(c)
            }),
            DockerTask::Images { json } => print(engine.images().await, json, render_images_text),
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

fn print<T: serde::Serialize>(
    result: Result<Vec<T>, DockerError>,
    json: bool,
    text: impl Fn(&[T]) -> String,
) -> ExitCode {
    match result {
        Ok(items) if json => match serde_json::to_string_pretty(&items) {
            Ok(s) => {
                outln!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                errln!("gpudeck: could not encode JSON: {e}");
                ExitCode::from(1)
            }
        },
        Ok(items) => {
            out!("{}", text(&items));
            ExitCode::SUCCESS
        }
        Err(e) => {
            errln!("gpudeck: {}: {e}\n{}", e.title(), e.fix());
            ExitCode::from(1)
        }
    }
}
