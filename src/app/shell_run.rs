//! Running a shell while the TUI steps aside: pre-flight and the session on the plain terminal,
//! then a line for the footer saying how it ended.

use std::io::{BufRead, Write};

use super::messages::StatusMessage;
use super::shell_dialog::ShellLaunch;
use super::state::AppState;
use crate::claims::Claims;
use crate::compat::CompatData;
use crate::config::ShellConfig;
use crate::docker::{resolve_host, Engine, EngineInfo, ImageInfo};
use crate::gpu::report::GpuReport;
use crate::launch_check::{
    resolve_workdir, LaunchError, PreflightContext, Workload, WorkspaceGuard,
};
use crate::runs::SystemLiveness;
use crate::shell::cli::{attach, open_request};
use crate::shell::{ShellDefaults, ShellError, ShellGpus, ShellRequest};

/// What a shell needs from the TUI's state, copied out before the TUI steps aside.
pub struct ShellContext {
    pub gpu: Option<GpuReport>,
    pub engine: Option<EngineInfo>,
    pub images: Vec<ImageInfo>,
    pub compat: CompatData,
    pub docker_host: Option<String>,
    /// Where the shell claims its GPUs.
    pub claims: Option<Claims>,
}

impl ShellContext {
    pub fn from_state(
        state: &AppState,
        docker_host: Option<String>,
        claims: Option<Claims>,
    ) -> ShellContext {
        ShellContext {
            gpu: state.gpu_report(),
            engine: match &state.docker.status {
                super::docker::EngineStatus::Ready(info) => Some((**info).clone()),
                _ => None,
            },
            images: state.docker.images.clone(),
            compat: (*state.compat.data).clone(),
            docker_host,
            claims,
        }
    }
}

/// Runs the shell on the terminal as it is now (normal screen, cooked mode) and returns the
/// footer's line: how it ended, or why it could not start. A failure is also printed there and
/// waits for Enter, so it is read before the dashboard covers it.
pub async fn run(launch: ShellLaunch, ctx: ShellContext, config: &ShellConfig) -> StatusMessage {
    let label = match &launch {
        ShellLaunch::New { image, .. } => image.clone(),
        ShellLaunch::Reenter { name, .. } => name.clone(),
    };
    // Not `outln!`: a terminal that went away must not end the dashboard from here.
    let _ = crate::output::try_print(format_args!(
        "gpudeck: opening a shell in {label}; exit it to return to the dashboard\n"
    ));
    match session(launch, ctx, config).await {
        Ok(code) => StatusMessage::new(
            format!("shell in {label} ended with exit code {code}"),
            code != 0,
        ),
        Err(e) => {
            errln!("\r\ngpudeck: {e}\n{}", e.fix());
            errout!("\r\nPress Enter to return to gpudeck ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            StatusMessage::new(format!("the shell in {label} did not start: {e}"), true)
        }
    }
}

async fn session(
    launch: ShellLaunch,
    ctx: ShellContext,
    config: &ShellConfig,
) -> Result<u8, ShellError> {
    let spec = resolve_host(ctx.docker_host.as_deref(), |k| std::env::var(k).ok())?;
    let engine = Engine::connect(&spec).await?;
    match launch {
        ShellLaunch::Reenter { container, .. } => {
            attach(&engine, &container, ctx.claims.as_ref(), &SystemLiveness).await
        }
        ShellLaunch::New {
            image,
            gpus,
            network_none,
            keep,
            workdir,
        } => {
            let defaults = ShellDefaults::from_config(config)?;
            let mut req = ShellRequest::new(image);
            req.gpus = if gpus.is_empty() {
                ShellGpus::None
            } else {
                ShellGpus::Indices(gpus)
            };
            let guard = WorkspaceGuard::for_engine(ctx.docker_host.as_deref(), defaults.scan);
            let workdir = resolve_workdir(&workdir, &guard)?;
            req.workdir = Some(workdir.clone());
            req.keep = keep || defaults.keep;
            req.network = network_none.then(|| "none".to_string());
            let engine_info = match ctx.engine {
                Some(info) => info,
                None => engine.info().await?,
            };
            let pre = PreflightContext {
                gpu: ctx.gpu.ok_or(LaunchError::gpus_unreadable(
                    Workload::Shell,
                    "the GPUs have not been read yet",
                ))?,
                engine: engine_info,
                local_images: ctx.images,
                compat: ctx.compat,
            };
            open_request(
                &engine,
                &req,
                defaults,
                &pre,
                &workdir,
                ctx.claims.as_ref(),
                &SystemLiveness,
            )
            .await
        }
    }
}
