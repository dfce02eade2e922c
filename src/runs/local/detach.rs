//! Starting a run: pre-flight, the run directory and its record (and for a container run the
//! containers to create), then the supervisor as a detached process (its own session, no
//! terminal), waited for until it reports the ranks up.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::claims::{Claim, Claims, Owner};
use crate::gpu::report::GpuReport;
use crate::gpu::GpuSourceChoice;
use crate::runs::clock::{self, wait_for};
use crate::runs::error::RunError;
use crate::runs::launch::container::check::{
    check_container_run, prepare_containers, ContainerSetup,
};
use crate::runs::launch::plan::{free_ports, plan_ranks, LaunchInput};
use crate::runs::launch::preflight::{preflight, Checked, PreflightInput};
use crate::runs::local::liveness::SystemLiveness;
use crate::runs::record::{RankRecord, RunRecord, RunState};
use crate::runs::spec::SlurmDefaults;
use crate::runs::spec::{Launcher, RunSpec};
use crate::runs::store::{open_log, Run, RunStore, SUPERVISOR_LOG, TORCHRUN_LOG_DIR};

/// The hidden subcommand the supervisor runs as.
pub const SUPERVISE_COMMAND: &str = "__supervise";
/// How long the supervisor gets to start the ranks and say so.
const START_WAIT: Duration = Duration::from_secs(15);

/// A run that is under way (or, for a very short one, already over).
#[derive(Debug, Clone)]
pub struct Started {
    pub run: Run,
    /// Pre-flight's warnings (busy GPUs), to show before the run id.
    pub warnings: Vec<String>,
}

/// What starting a run needs from its caller.
#[derive(Debug, Clone)]
pub struct StartContext<'a> {
    pub gpus: &'a GpuReport,
    pub store: &'a RunStore,
    pub cwd: PathBuf,
    /// The PATH the ranks inherit.
    pub path: Option<OsString>,
    /// The gpudeck binary to run the supervisor from (the current executable).
    pub exe: PathBuf,
    /// Where the GPUs were read from; the supervisor records the run's metrics from the same.
    pub gpu_source: GpuSourceChoice,
    /// The engine, defaults and tables a container run (`image = ...`) needs.
    pub container: ContainerSetup,
    /// The config's backend for a spec that names none, and its `[slurm]` settings.
    pub slurm: SlurmDefaults,
}

/// Checks the spec, records the run, and starts its supervisor; returns once the supervisor
/// has started the ranks (or failed to). The GPUs are chosen and claimed in one step under the
/// claims lock, so a run, shell or dashboard starting at the same instant gets other ones.
pub fn start_run(spec: &RunSpec, ctx: &StartContext<'_>) -> Result<Started, RunError> {
    // A first look, for the container checks: they ask the engine, which must not happen
    // while holding the lock.
    let first = preflight(&preflight_input(spec, ctx, &[]))?;
    let container = match &spec.image {
        Some(image) => Some(check_container_run(
            spec,
            image,
            &first,
            ctx.gpus,
            &ctx.container,
        )?),
        None => None,
    };
    let claims = ctx.store.claims();
    let (mut checked, id, dir) = claim_and_create(spec, ctx, &claims)?;
    let held = HeldClaim {
        claims: &claims,
        owner: Owner::Run {
            id: id.clone(),
            dir: dir.clone(),
        },
        kept: false,
    };
    let ports = match spec.launcher {
        Launcher::PerGpu => Some(
            free_ports(checked.workers).map_err(|e| RunError::NoFreePort { why: e.to_string() })?,
        ),
        _ => None,
    };
    let now = clock::now_ms();
    let name = spec.effective_name();
    // In a container the work dir is where it is mounted.
    let inside = container
        .as_ref()
        .map(|c| PathBuf::from(&c.defaults.mount_point));
    // A torchrun run on the host: torchrun writes each worker's output under the run's
    // directory, and the supervisor links it in as that worker's rank logs.
    let worker_logs = (spec.launcher == Launcher::Torchrun && container.is_none())
        .then(|| dir.join(TORCHRUN_LOG_DIR));
    let ranks = plan_ranks(&LaunchInput {
        run_id: &id,
        launcher: spec.launcher,
        command: &checked.command,
        gpus: &checked.gpus,
        workers: checked.workers,
        env: &spec.env,
        workdir: inside.as_deref().unwrap_or(&checked.workdir),
        ports: ports.as_ref(),
        worker_logs: worker_logs.as_deref(),
    });
    let workers = checked.workers;
    let record = starting_record(id, name, spec.launcher, checked.workdir, ctx.gpus);
    let record = RunRecord {
        gpus: checked.gpus,
        ranks: ranks.into_iter().map(RankRecord::from).collect(),
        created_ms: now,
        gpu_source: Some(ctx.gpu_source.clone()),
        service: spec.service.clone(),
        torchrun_workers: worker_logs.as_ref().map(|_| workers),
        ..record
    };
    // Until its supervisor runs, nothing has run: a refused run leaves no directory behind.
    let refused = |e: RunError| {
        let _ = std::fs::remove_dir_all(&dir);
        e
    };
    let mut run = Run {
        dir: dir.clone(),
        record,
    };
    if let Some(check) = container {
        let prepared = prepare_containers(&mut run, spec, check).map_err(refused)?;
        checked.warnings.extend(prepared);
    }
    run.write_record(&run.record).map_err(refused)?;
    let run = launch_supervisor(run, &ctx.exe)?;
    held.keep();
    Ok(Started {
        run,
        warnings: checked.warnings,
    })
}

fn preflight_input<'a>(
    spec: &'a RunSpec,
    ctx: &'a StartContext<'_>,
    claimed: &'a [Claim],
) -> PreflightInput<'a> {
    PreflightInput {
        spec,
        gpus: ctx.gpus,
        cwd: &ctx.cwd,
        path: ctx.path.as_ref(),
        claimed,
    }
}

/// The atomic step: under the claims lock, pre-flight with the GPUs live runs and shells hold
/// counted as busy, the run's directory, and its claim on the GPUs it got.
fn claim_and_create(
    spec: &RunSpec,
    ctx: &StartContext<'_>,
    claims: &Claims,
) -> Result<(Checked, String, PathBuf), RunError> {
    claims.claim(&SystemLiveness, |held| {
        let checked = preflight(&preflight_input(spec, ctx, held))?;
        let (id, dir) =
            ctx.store
                .create(&spec.effective_name(), &spec.to_toml(), clock::now_ms())?;
        let uuids: Vec<String> = checked.gpus.iter().map(|g| g.uuid.clone()).collect();
        let owner = Owner::Run {
            id: id.clone(),
            dir: dir.clone(),
        };
        let claim = (!uuids.is_empty()).then(|| Claim::by_me(owner, uuids));
        Ok::<_, RunError>(((checked, id, dir), claim))
    })?
}

/// A run's claim, given back if starting fails before the run's record can speak for it.
struct HeldClaim<'a> {
    claims: &'a Claims,
    owner: Owner,
    kept: bool,
}

impl HeldClaim<'_> {
    /// The run is recorded and its supervisor started: its record keeps the claim alive now.
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for HeldClaim<'_> {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        if let Err(e) = self.claims.release(&self.owner) {
            tracing::warn!("{e}");
        }
    }
}

/// The record of a run about to start, with the host and driver the GPUs were read on.
fn starting_record(
    id: String,
    name: String,
    launcher: Launcher,
    workdir: PathBuf,
    gpus: &GpuReport,
) -> RunRecord {
    RunRecord {
        driver_version: gpus.system.as_ref().and_then(|s| s.driver_version.clone()),
        ..RunRecord::starting(id, name, launcher, workdir, gpus.host.clone(), 0)
    }
}

/// Starts the supervisor and waits until it has recorded the ranks as started.
fn launch_supervisor(run: Run, exe: &Path) -> Result<Run, RunError> {
    let fail = |why: String| RunError::SupervisorFailed {
        id: run.id().to_string(),
        why,
    };
    let mut child = spawn_detached(exe, &run.dir).map_err(|e| fail(e.to_string()))?;
    let mut exited = None;
    let started = wait_for(START_WAIT, || {
        if run
            .reload()
            .is_ok_and(|r| r.record.state != RunState::Starting)
        {
            return true;
        }
        exited = child.try_wait().ok().flatten();
        exited.is_some()
    });
    // Reaped on a thread: a long-lived caller (the TUI) must not collect zombies.
    std::thread::spawn(move || child.wait());
    let current = run.reload()?;
    if started && current.record.state != RunState::Starting {
        return Ok(current);
    }
    let why = match exited {
        Some(status) => format!(
            "it exited ({status}) before starting the ranks: {}",
            log_tail(&run.dir)
        ),
        None => format!(
            "it did not start the ranks within {}s",
            START_WAIT.as_secs()
        ),
    };
    let mut record = current.record;
    record.state = RunState::Failed;
    record.ended_ms = Some(clock::now_ms());
    record.error = Some(why.clone());
    run.write_record(&record)?;
    Err(fail(why))
}

/// `gpudeck __supervise DIR` in a new session (so a terminal hang-up or the caller's exit does
/// not reach it), stdin from /dev/null, stdout and stderr to the run's supervisor.log.
#[allow(unsafe_code)]
fn spawn_detached(exe: &Path, dir: &Path) -> std::io::Result<Child> {
    let log = open_log(&dir.join(SUPERVISOR_LOG)).map_err(std::io::Error::other)?;
    let mut cmd = Command::new(exe);
    cmd.arg(SUPERVISE_COMMAND)
        .arg(dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// The last lines of the supervisor's log, for an error message.
fn log_tail(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join(SUPERVISOR_LOG)).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    let tail: Vec<&str> = lines.into_iter().rev().collect();
    if tail.is_empty() {
        "its log is empty".into()
    } else {
        tail.join(" / ")
    }
}
