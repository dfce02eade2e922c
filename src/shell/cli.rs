//! `gpudeck shell`: pre-flight, a container, the terminal attached to it, its exit code as ours;
//! also `--list` and `--attach` for kept shells.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::claims::{Claims, Liveness};
use crate::compat::CompatData;
use crate::config::{ShellConfig, UserMode};
use crate::docker::{resolve_host, Engine};
use crate::gpu::report::GpuReport;
use crate::launch_check::{resolve_workdir, LaunchError, PreflightContext, WorkspaceGuard};

use super::claim::{claim_gpus, reclaim_kept, ShellClaim};
use super::defaults::ShellDefaults;
use super::error::ShellError;
use super::hangup::{stop_after_hangup, HangUp};
use super::kept::{find_shell, kept_shells, render_shells};
use super::options::ShellOptions;
use super::preflight::{preflight, Preflight};
use super::session::{create, finish, reenter, run_attached_watching};
use super::size::parse_size;
use super::spec::{container_body, ShellGpus, ShellRequest};
use super::stdio::stdin_is_terminal;

/// The exit code when gpudeck itself failed, as `docker run` uses it: a shell's own codes
/// (0-124, 126+ for "cannot execute" and signals) stay distinguishable.
pub const EXIT_GPUDECK_FAILED: u8 = 125;

/// The exit codes when the terminal went away, as a shell killed by SIGHUP (or SIGTERM) gives.
const EXIT_HUNG_UP: u8 = 128 + 1;
const EXIT_TERMINATED: u8 = 128 + 15;

/// What `gpudeck shell` needs from the rest of the program.
pub struct ShellEnv<'a> {
    pub config: &'a ShellConfig,
    /// Where the shell claims its GPUs (the data dir's claims), so runs take others.
    pub claims: Option<Claims>,
    /// Which owners of earlier claims are still there (`runs::SystemLiveness`).
    pub liveness: &'a (dyn Liveness + Sync),
    pub compat: CompatData,
    pub docker_host: Option<&'a str>,
    /// Samples the GPUs (only called when a shell is opened).
    pub gpu_report: Box<dyn FnOnce() -> GpuReport + 'a>,
}

/// Runs `gpudeck shell` to completion on `runtime`.
pub fn run(args: &ShellOptions, env: ShellEnv<'_>, runtime: &tokio::runtime::Runtime) -> ExitCode {
    let result = runtime.block_on(async {
        let engine = connect(env.docker_host).await?;
        if args.list {
            return list(&engine).await;
        }
        if let Some(name) = &args.attach {
            return attach(&engine, name, env.claims.as_ref(), env.liveness).await;
        }
        open(args, env, &engine).await
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Wrapped line by line to the terminal's width: the message's own breaks stay, and a
            // long one (a bad `--gpus`, a list of GPUs) reads whole.
            let text = format!("gpudeck: {e}\n{}", e.fix());
            errln!("{}", crate::output::wrap(&text, ""));
            ExitCode::from(EXIT_GPUDECK_FAILED)
        }
    }
}

async fn connect(host: Option<&str>) -> Result<Engine, ShellError> {
    let spec = resolve_host(host, |k| std::env::var(k).ok())?;
    Ok(Engine::connect(&spec).await?)
}

async fn list(engine: &Engine) -> Result<u8, ShellError> {
    let shells = kept_shells(&engine.containers().await?);
    out!("{}", render_shells(&shells, now()));
    Ok(0)
}

/// Re-enters a kept shell by name or id, its GPUs claimed again while attended; its exit code.
/// When the terminal goes away the shell is stopped, and stays.
pub async fn attach(
    engine: &Engine,
    name: &str,
    claims: Option<&Claims>,
    live: &(dyn Liveness + Sync),
) -> Result<u8, ShellError> {
    let mut hangup = HangUp::watch()?;
    let shells = kept_shells(&engine.containers().await?);
    let shell = find_shell(&shells, name).ok_or_else(|| ShellError::NoSuchShell {
        name: name.to_string(),
    })?;
    errln!(
        "gpudeck: re-entering {} ({}, GPUs {}, {} -> workspace)",
        shell.name,
        shell.image,
        shell.gpus,
        shell.workdir
    );
    let (claim, warnings) = reclaim_kept(claims, live, shell);
    for warning in &warnings {
        errln!(
            "{}",
            crate::output::wrap(&format!("gpudeck: warning: {warning}"), "  ")
        );
    }
    let code = reenter(engine.client(), &shell.id, &mut hangup).await;
    if lost_terminal(&code) {
        stop_after_hangup(engine.client(), &shell.id).await;
    }
    if let Some(claim) = claim {
        claim.end();
    }
    exit_code(code, &shell.name, true)
}

/// Pre-flight, create, run attached, remove unless kept.
async fn open(args: &ShellOptions, env: ShellEnv<'_>, engine: &Engine) -> Result<u8, ShellError> {
    let defaults = ShellDefaults::from_config(env.config)?;
    let cwd = std::env::current_dir().map_err(|e| LaunchError::BadWorkdir {
        path: PathBuf::from("."),
        why: format!("the current directory cannot be read: {e}"),
    })?;
    let guard = WorkspaceGuard::for_engine(env.docker_host, defaults.scan);
    let req = request(args, &defaults, &cwd, &guard)?;
    let (engine_info, local_images) = tokio::try_join!(engine.info(), engine.images())?;
    let ctx = PreflightContext {
        gpu: (env.gpu_report)(),
        engine: engine_info,
        local_images,
        compat: env.compat,
    };
    open_request(
        engine,
        &req,
        defaults,
        &ctx,
        &cwd,
        env.claims.as_ref(),
        env.liveness,
    )
    .await
}

/// Pre-flight, claim the GPUs, create, run attached, remove unless kept, for a request already
/// made (the CLI's or the TUI's); the container's exit code, or why there was none.
pub async fn open_request(
    engine: &Engine,
    req: &ShellRequest,
    defaults: ShellDefaults,
    ctx: &PreflightContext,
    cwd: &Path,
    claims: Option<&Claims>,
    live: &(dyn Liveness + Sync),
) -> Result<u8, ShellError> {
    let mut hangup = HangUp::watch()?;
    let checked = preflight(req, ctx)?;
    let (mut claim, claim_warnings) =
        claim_gpus(claims, live, req.name.as_deref(), &checked.gpus, &ctx.gpu);
    for warning in checked.warnings.iter().chain(&claim_warnings) {
        errln!(
            "{}",
            crate::output::wrap(&format!("gpudeck: warning: {warning}"), "  ")
        );
    }
    let result = open_checked(
        engine,
        req,
        defaults,
        &checked,
        cwd,
        (&mut hangup, &mut claim),
    )
    .await;
    if let Some(claim) = claim {
        claim.end();
    }
    result
}

/// Create, run attached (retried once with Docker's own limits when it refuses ours).
async fn open_checked(
    engine: &Engine,
    req: &ShellRequest,
    mut defaults: ShellDefaults,
    checked: &Preflight,
    cwd: &Path,
    (hangup, claim): (&mut HangUp, &mut Option<ShellClaim>),
) -> Result<u8, ShellError> {
    let (name, code) = match launch(
        engine,
        req,
        (&defaults, checked),
        cwd,
        (&mut *hangup, &mut *claim),
    )
    .await?
    {
        (first, Err(ShellError::Rlimit { limit, detail })) => {
            tracing::warn!("{detail}");
            errln!(
                "{}",
                crate::output::wrap(&rlimit_retry(limit, &first), "  ")
            );
            match limit {
                "stack" => defaults.stack = None,
                _ => defaults.memlock = None,
            }
            // The first container never started and is gone: the second takes its name, so
            // the shell has one name whatever was tried.
            let again = ShellRequest {
                name: Some(first),
                ..req.clone()
            };
            launch(engine, &again, (&defaults, checked), cwd, (hangup, claim)).await?
        }
        launched => launched,
    };
    exit_code(code, &name, req.keep)
}

/// What is said when Docker refused to raise `limit`: the retry, and that it keeps `name`.
fn rlimit_retry(limit: &str, name: &str) -> String {
    format!(
        "gpudeck: warning: Docker may not raise the {limit} limit to the configured value; \
         {name} never started and was removed; retrying as {name} with Docker's own {limit} \
         limit (`{limit} = \"default\"` under [shell] in config.toml skips this try)"
    )
}

/// One container for the request and its session; the container is gone afterwards unless
/// kept or detached from, and stopped when kept but its terminal went away. Returns its name
/// and how the session ended.
async fn launch(
    engine: &Engine,
    req: &ShellRequest,
    (defaults, checked): (&ShellDefaults, &Preflight),
    cwd: &Path,
    (hangup, claim): (&mut HangUp, &mut Option<ShellClaim>),
) -> Result<(String, Result<i64, ShellError>), ShellError> {
    let body = container_body(
        req,
        defaults,
        &checked.gpus,
        checked.plumbing,
        host_user(),
        cwd,
    )?;
    let id = create(engine, body, req.name.as_deref()).await?;
    let name = engine
        .container(&id)
        .await
        .ok()
        .flatten()
        .map_or_else(|| id.chars().take(12).collect(), |c| c.name);
    if let Some(claim) = claim.as_mut() {
        claim.created(&name, &id);
    }
    errln!("gpudeck: {}", describe(req, defaults, checked, &name, cwd));
    let code = run_attached_watching(engine.client(), &id, hangup).await;
    // A container that never started is removed even when kept: there is nothing to re-enter.
    let started = !matches!(
        code,
        Err(ShellError::Rlimit { .. } | ShellError::Launch(LaunchError::NoToolkit { .. }))
    );
    if req.keep && lost_terminal(&code) {
        stop_after_hangup(engine.client(), &id).await;
    }
    if !matches!(code, Err(ShellError::Detached { .. })) {
        finish(engine, &id, req.keep && started).await?;
    }
    Ok((name, code))
}

/// The request from the command line, with the workspace made absolute and checked.
fn request(
    args: &ShellOptions,
    defaults: &ShellDefaults,
    cwd: &Path,
    guard: &WorkspaceGuard,
) -> Result<ShellRequest, ShellError> {
    let mut req = ShellRequest::new(args.image.clone().unwrap_or_default());
    req.gpus = args.gpus.parse::<ShellGpus>()?;
    req.workdir = Some(resolve_workdir(
        &cwd.join(args.workdir.as_deref().unwrap_or(cwd)),
        guard,
    )?);
    req.command = args.command.clone();
    req.keep = args.keep || defaults.keep;
    req.network = args.network.clone();
    req.name = args.name.clone();
    req.user = args.user.as_deref().map(|u| match u {
        "root" => UserMode::Root,
        "image" => UserMode::Image,
        _ => UserMode::Host,
    });
    req.shm_bytes = args.shm.as_deref().map(parse_size).transpose()?;
    req.force = args.force;
    req.tty = stdin_is_terminal();
    Ok(req)
}

/// One line saying what runs: image, GPUs by index and UUID, workspace, user, network.
fn describe(
    req: &ShellRequest,
    defaults: &ShellDefaults,
    checked: &Preflight,
    name: &str,
    cwd: &Path,
) -> String {
    let gpus = if checked.gpus.is_empty() {
        "no GPUs".to_string()
    } else {
        let list: Vec<String> = checked
            .gpus
            .gpus
            .iter()
            .map(|g| format!("{} ({})", g.index, g.uuid))
            .collect();
        format!("GPUs {}", list.join(", "))
    };
    let user = match req.user.unwrap_or(defaults.user) {
        UserMode::Host => {
            let (uid, gid) = host_user();
            format!("user {uid}:{gid}")
        }
        UserMode::Root => "user root".into(),
        UserMode::Image => "the image's user".into(),
    };
    let workdir = req.workdir.clone().unwrap_or_else(|| cwd.to_path_buf());
    format!(
        "{name}: {} with {gpus}, {} -> {}, {user}, network {}{}",
        req.image,
        workdir.display(),
        defaults.mount_point,
        req.network.as_deref().unwrap_or(&defaults.network),
        if req.keep { ", kept after exit" } else { "" }
    )
}

/// Whether the session ended because its terminal, or the reader of its output, went away.
fn lost_terminal(code: &Result<i64, ShellError>) -> bool {
    matches!(
        code,
        Err(ShellError::HungUp { .. } | ShellError::ReaderGone { .. })
    )
}

/// The session's end as gpudeck's exit code.
fn exit_code(code: Result<i64, ShellError>, name: &str, kept: bool) -> Result<u8, ShellError> {
    match code {
        Ok(code) => Ok(u8::try_from(code).unwrap_or(EXIT_GPUDECK_FAILED)),
        // The output's reader ended it on purpose (`| head`): a quiet end, as for every command.
        Err(ShellError::ReaderGone { .. }) => Ok(0),
        Err(ShellError::HungUp { why, .. }) => {
            let fate = if kept {
                format!(
                    "the shell {name} was stopped and is kept;\r\n\
                     `gpudeck shell --attach {name}` starts it again."
                )
            } else {
                format!("the shell {name} was removed.")
            };
            let (what, code) = match why {
                "SIGTERM" => ("gpudeck was told to stop", EXIT_TERMINATED),
                _ => ("the terminal went away", EXIT_HUNG_UP),
            };
            let what = format!("{what} ({why})");
            tracing::info!("{what}: {fate}");
            // Best effort: after SIGTERM the terminal may still be there to show it.
            errln!("\r\ngpudeck: {what}:\r\n{fate}");
            Ok(code)
        }
        Err(ShellError::Detached { .. }) => {
            errln!("\r\ngpudeck: detached; {name} keeps running: gpudeck shell --attach {name}");
            Ok(0)
        }
        Err(e) => Err(e),
    }
}

#[allow(unsafe_code)]
fn host_user() -> (u32, u32) {
    // SAFETY: getuid and getgid cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The retry keeps the first container's name and says so: the shell has one name.
    #[test]
    fn the_rlimit_retry_says_the_shell_keeps_its_name() {
        let text = rlimit_retry("memlock", "modest_jemison");
        assert!(
            text.contains("modest_jemison never started and was removed; retrying as modest_jemison with Docker's own memlock limit"),
            "{text}"
        );
        assert!(
            text.contains("`memlock = \"default\"` under [shell]"),
            "{text}"
        );
    }
}
