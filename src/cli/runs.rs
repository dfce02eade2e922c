//! `gpudeck run`, `runs`, `logs`, `stop`, `export` and `rerun`: the run commands on top of the
//! store, the launcher and the supervisor; the runs as a table (`table`) and an export
//! (`export`).

mod export;
mod table;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::gpu::report::GpuReport;
use crate::gpu::GpuSourceChoice;
use crate::health::XidCatalog;
use crate::runs::recorded::xid_log::{this_boot, wants_kernel_log, KernelXids};
use crate::runs::recorded::xids::XidJudge;
use crate::runs::slurm::{batch_script, SlurmSettings};
use crate::runs::{
    look_at_jobs, look_at_lost, now_ms, parse_env, print_log, rerun_on, slurm_job, slurm_warnings,
    stop_run, with_summaries, Backend, ContainerSetup, GpuSelection, Launcher, LogStream, Run,
    RunError, RunSpec, RunState, RunStore, SlurmDefaults, SpecOverrides, StartContext, Started,
    StopOutcome,
};
use crate::secrets::Secrets;

use export::{export_csv, export_json};
use table::{listing_json, render_runs};

use super::run_target::{interpret, Surroundings};
use super::{ExportArgs, ExportFormat, LogsArgs, RerunArgs, RunArgs, StopArgs};

/// Success.
const EXIT_OK: u8 = 0;
/// gpudeck could not do it (a refusal, an unknown run, a failed start or stop).
const EXIT_FAILED: u8 = 1;
/// A mistake in the command line or the spec file.
const EXIT_USAGE: u8 = 2;

/// The command to type when clap refused `argv[at]`, a flag after the program in `gpudeck run
/// PROGRAM ARGS --flag` (see `target::unknown_flag_hint`).
pub fn unknown_flag_hint(args: &RunArgs, argv: &[String], at: usize) -> Option<String> {
    let path = std::env::var_os("PATH");
    let around = Surroundings {
        argv,
        path: path.as_deref(),
        workdir_given: args.workdir.is_some(),
    };
    super::run_target::unknown_flag_hint(&args.target, argv, at, &around)
}

/// `gpudeck run`: pre-flight, start detached (or submit to Slurm), print the id and where the
/// logs are. `container` is only used by a run with an image; `slurm` (the config's `[runs]
/// backend` and `[slurm]`) picks the backend of a run that names none, and fills a Slurm run's
/// settings.
pub fn run(
    args: &RunArgs,
    store: &RunStore,
    gpu_source: GpuSourceChoice,
    gpus: impl FnOnce() -> GpuReport,
    (container, slurm): (ContainerSetup, SlurmDefaults),
) -> ExitCode {
    finish(spec_from(args).and_then(|spec| {
        let backend = spec.backend.unwrap_or(slurm.backend);
        if backend.takes_slurm_settings() && args.dry_run {
            return dry_run(&spec, &slurm.settings);
        }
        if let (false, Some(flag)) = (backend.takes_slurm_settings(), slurm_only_flag(args)) {
            return Err(RunError::SlurmOnly { flag });
        }
        // A batch job does not touch this machine's GPUs.
        let gpus = move || gpus_on(backend, gpus);
        launch(store, (gpu_source, container, slurm), gpus, |ctx| {
            crate::runs::start(&spec, ctx)
        })
    }))
}

/// The first flag given that means nothing to a local run.
fn slurm_only_flag(args: &RunArgs) -> Option<&'static str> {
    [
        (args.dry_run, "--dry-run"),
        (args.nodes.is_some(), "--nodes"),
        (args.time.is_some(), "--time"),
        (args.partition.is_some(), "--partition"),
        (args.account.is_some(), "--account"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// `--dry-run`: the batch script on stdout; nothing is created or submitted. With no run
/// directory yet, the job's logs would go to its work dir.
fn dry_run(spec: &RunSpec, config: &SlurmSettings) -> Result<u8, RunError> {
    let cwd = current_dir()?;
    let (spec, settings) = slurm_job(spec, config, &cwd);
    for warning in slurm_warnings(&spec) {
        errln!("gpudeck: warning: {warning}");
    }
    let workdir = spec.workdir.clone().unwrap_or(cwd);
    let script = batch_script(&spec, &settings, &dry_run_id(&spec), &workdir)?;
    crate::output::print_bytes(script.as_bytes());
    Ok(EXIT_OK)
}

fn current_dir() -> Result<std::path::PathBuf, RunError> {
    std::env::current_dir().map_err(|e| RunError::BadWorkdir {
        path: ".".into(),
        why: format!("the current directory cannot be read: {e}"),
    })
}

/// The run id a dry run's script carries, since no run is created for it.
fn dry_run_id(spec: &RunSpec) -> String {
    format!("slurm-{}", spec.effective_name())
}

/// `gpudeck rerun RUN`: a new run from the old one's spec (a Slurm run is submitted again);
/// prints the new id as `run` does.
pub fn rerun(
    args: &RerunArgs,
    store: &RunStore,
    gpu_source: GpuSourceChoice,
    gpus: impl FnOnce() -> GpuReport,
    (container, slurm): (ContainerSetup, SlurmDefaults),
) -> ExitCode {
    finish(rerun_gpus(args).and_then(|on| {
        let old = store.find(&args.run)?;
        errln!("gpudeck: running {} again", old.id());
        let backend = old.record.backend;
        let gpus = move || gpus_on(backend, gpus);
        launch(store, (gpu_source, container, slurm), gpus, |ctx| {
            rerun_on(&old, on, ctx)
        })
    }))
}

/// `rerun --gpus`, parsed as `run --gpus` is; `None` keeps the run's own selection.
pub(crate) fn rerun_gpus(args: &RerunArgs) -> Result<Option<GpuSelection>, RunError> {
    args.gpus.as_deref().map(str::parse).transpose()
}

/// This machine's GPUs when a run on `backend` uses them; unread otherwise.
fn gpus_on(backend: Backend, gpus: impl FnOnce() -> GpuReport) -> GpuReport {
    if backend.uses_this_machines_gpus() {
        gpus()
    } else {
        GpuReport::unread()
    }
}

/// Gathers what starting needs (the work dir, this binary, the GPUs), starts, and says
/// pre-flight's warnings; the run (or service) started.
pub(crate) fn start_with(
    store: &RunStore,
    (gpu_source, container, slurm): (GpuSourceChoice, ContainerSetup, SlurmDefaults),
    gpus: impl FnOnce() -> GpuReport,
    start: impl FnOnce(&StartContext<'_>) -> Result<Started, RunError>,
) -> Result<Started, RunError> {
    let cwd = current_dir()?;
    let exe = std::env::current_exe().map_err(|e| RunError::SupervisorFailed {
        id: "(none yet)".into(),
        why: format!("the gpudeck binary cannot be found: {e}"),
    })?;
    let report = gpus();
    let ctx = StartContext {
        gpus: &report,
        store,
        cwd,
        path: std::env::var_os("PATH"),
        exe,
        gpu_source,
        container,
        slurm,
    };
    let started = start(&ctx)?;
    for warning in &started.warnings {
        say(&format!("gpudeck: warning: {warning}"));
    }
    Ok(started)
}

/// Gathers what starting needs, starts, and prints the id and how to follow the run.
fn launch(
    store: &RunStore,
    setup: (GpuSourceChoice, ContainerSetup, SlurmDefaults),
    gpus: impl FnOnce() -> GpuReport,
    start: impl FnOnce(&StartContext<'_>) -> Result<Started, RunError>,
) -> Result<u8, RunError> {
    let started = start_with(store, setup, gpus, start)?;
    let run = &started.run;
    outln!("{}", run.id());
    if let Some(job) = run.record.remote_job() {
        say(&format!(
            "gpudeck: {} submitted as {}; follow it with `gpudeck logs {} -f`, \
             stop it with `gpudeck stop {}`",
            run.id(),
            job.name,
            run.id(),
            run.id()
        ));
        return Ok(EXIT_OK);
    }
    if let (RunState::Failed, Some(error)) = (run.state(), &run.record.error) {
        // Its ranks could not even be started (a container the engine refused, ...).
        say(&format!("gpudeck: {} failed to start: {error}", run.id()));
        return Ok(EXIT_FAILED);
    }
    let gpus = match run.record.gpus.is_empty() {
        true => "no GPU".to_string(),
        false => format!("GPU {}", run.record.gpu_indices()),
    };
    let image = run.record.image.as_ref().map(|i| format!(" in {i}"));
    say(&format!(
        "gpudeck: {} {} on {gpus}{} ({}, {}); logs: {}",
        run.id(),
        run.state(),
        image.unwrap_or_default(),
        run.record.launcher.as_str(),
        crate::units::plural(run.record.log_ranks(), "rank"),
        run.dir.display()
    ));
    say(&format!(
        "gpudeck: follow it with `gpudeck logs {} -f`, stop it with `gpudeck stop {}`",
        run.id(),
        run.id()
    ));
    Ok(EXIT_OK)
}

/// A message on stderr, wrapped to the terminal's width.
pub(crate) fn say(message: &str) {
    errln!("{}", crate::output::wrap(message, "  "));
}

/// The spec file (if any) with the flags laid over it.
fn spec_from(args: &RunArgs) -> Result<RunSpec, RunError> {
    let argv: Vec<String> = std::env::args().collect();
    let path = std::env::var_os("PATH");
    let around = Surroundings {
        argv: &argv,
        path: path.as_deref(),
        workdir_given: args.workdir.is_some(),
    };
    let target = interpret(&args.target, &args.command, &around)?;
    if let Some(note) = &target.note {
        errln!("gpudeck: {note}");
    }
    let base = match &target.spec {
        Some(path) => RunSpec::load(path)?,
        None => RunSpec::default(),
    };
    let env = args
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>, _>>()?;
    let overrides = SpecOverrides {
        name: args.name.clone().or(target.name),
        image: args.image.clone(),
        keep: args.keep,
        gpus: args.gpus.as_deref().map(str::parse).transpose()?,
        launcher: args.launcher.map(Launcher::from),
        workers: args.workers,
        gpu_memory: args.gpu_memory.clone(),
        env,
        workdir: args.workdir.clone(),
        command: target.command,
        backend: args.on.map(Backend::from),
        slurm: SlurmSettings {
            nodes: args.nodes,
            time: args.time.clone(),
            partition: args.partition.clone(),
            account: args.account.clone(),
            ..SlurmSettings::default()
        },
    };
    Ok(base.apply(overrides))
}

/// `gpudeck runs [--json] [--show-secrets]`; Xids that hit runs are judged with `xids`.
pub fn list(store: &RunStore, json: bool, secrets: &Secrets, xids: &XidCatalog) -> ExitCode {
    // A store that cannot be read is not an empty one.
    let (runs, damaged) = match store.scan() {
        Ok(scanned) => scanned,
        Err(e) => return finish(Err(e)),
    };
    // Services (notebooks, TensorBoards, Triton servers) are `gpudeck services`'.
    let (services, mut runs): (Vec<Run>, Vec<Run>) =
        runs.into_iter().partition(|r| r.record.service.is_some());
    warn_all(&damaged.iter().map(ToString::to_string).collect::<Vec<_>>());
    let mut warnings = Vec::new();
    warnings.extend(look_at_lost(&mut runs));
    warnings.extend(look_at_jobs(&mut runs, false));
    let now = now_ms();
    // Newest first, in the table and the JSON alike, as the Runs tab lists them.
    runs.reverse();
    let (runs, metric_warnings) = with_summaries(runs, now);
    for w in &warnings {
        errln!("gpudeck: warning: {w}");
    }
    warn_all(&metric_warnings);
    let boot = this_boot();
    let kernel = runs
        .iter()
        .any(|(run, _)| wants_kernel_log(run, boot))
        .then(KernelXids::read_live)
        .flatten();
    let judge = XidJudge {
        catalog: xids,
        kernel: kernel.as_ref(),
    };
    if json {
        match serde_json::to_string_pretty(&listing_json(&runs, now, secrets, judge)) {
            Ok(text) => outln!("{text}"),
            Err(e) => {
                errln!("gpudeck: could not encode the runs: {e}");
                return ExitCode::from(EXIT_FAILED);
            }
        }
    } else {
        out!("{}", render_runs(&runs, now, crate::output::width(), judge));
        if !services.is_empty() {
            outln!(
                "({} not listed here: gpudeck services)",
                crate::units::plural(services.len(), "service")
            );
        }
    }
    ExitCode::SUCCESS
}

/// `gpudeck export RUN --format csv|json [--output FILE] [--show-secrets]`.
pub fn export(
    args: &ExportArgs,
    store: &RunStore,
    secrets: &Secrets,
    xids: &XidCatalog,
) -> ExitCode {
    finish((|| {
        let run = store.find(&args.run)?;
        let text = match args.format {
            ExportFormat::Csv => {
                let csv = export_csv(&run)?;
                warn_all(&csv.warnings);
                csv.text
            }
            ExportFormat::Json => {
                let kernel = wants_kernel_log(&run, this_boot())
                    .then(KernelXids::read_live)
                    .flatten();
                let judge = XidJudge {
                    catalog: xids,
                    kernel: kernel.as_ref(),
                };
                let doc = export_json(&run, now_ms(), secrets, judge)?;
                warn_all(&doc.warnings);
                let mut text =
                    serde_json::to_string_pretty(&doc).map_err(|e| RunError::ExportNotWritten {
                        path: args.output.clone().unwrap_or_else(|| "stdout".into()),
                        why: format!("it could not be encoded: {e}"),
                    })?;
                text.push('\n');
                text
            }
        };
        match &args.output {
            Some(path) => write_private(path, text.as_bytes()),
            None => print_all(text.as_bytes()),
        }?;
        Ok(EXIT_OK)
    })())
}

fn warn_all(warnings: &[String]) {
    for w in warnings {
        errln!(
            "{}",
            crate::output::wrap(&format!("gpudeck: warning: {w}"), "")
        );
    }
}

/// Writes an export to a new or replaced file only its owner can read (metrics and logs of a
/// run may be private): written whole to a temporary file and renamed over `path`, so an old
/// file there becomes 0600 and a symbolic link there is replaced, its target untouched.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let written = crate::private_files::replace(path, bytes);
    written.map_err(|e| RunError::ExportNotWritten {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

fn print_all(bytes: &[u8]) -> Result<(), RunError> {
    crate::output::print_data(bytes);
    Ok(())
}

/// `gpudeck logs RUN [-f] [--rank N] [--stderr]`.
pub fn logs(args: &LogsArgs, store: &RunStore) -> ExitCode {
    finish((|| {
        let run = store.find(&args.run)?;
        let stream = if args.stderr {
            LogStream::Stderr
        } else {
            LogStream::Stdout
        };
        print_log(&run, args.rank, stream, args.follow)?;
        Ok(EXIT_OK)
    })())
}

/// `gpudeck stop RUN [--grace SECS]`.
pub fn stop(args: &StopArgs, store: &RunStore) -> ExitCode {
    finish((|| {
        let run = store.find(&args.run)?;
        match stop_run(&run, Duration::from_secs(args.grace))? {
            StopOutcome::AlreadyFinished(state) => {
                errln!(
                    "gpudeck: {} has already finished: {state}{}",
                    run.id(),
                    exit_text(&run)
                );
            }
            StopOutcome::Stopped { signal, run } => {
                errln!(
                    "gpudeck: {} {} (last signal needed: {signal}){}",
                    run.id(),
                    run.state(),
                    exit_text(&run)
                );
            }
            StopOutcome::EndNotRecorded {
                signal,
                why,
                supervisor_alive,
            } => {
                let end = StopOutcome::end_not_recorded(run.id(), &why, supervisor_alive);
                errln!(
                    "{}",
                    crate::output::wrap(
                        &format!(
                            "gpudeck: stopped {} (last signal needed: {signal}); {end}",
                            run.id()
                        ),
                        "  "
                    )
                );
            }
        }
        Ok(EXIT_OK)
    })())
}

fn exit_text(run: &Run) -> String {
    match (run.record.exit_code, run.state()) {
        (Some(code), RunState::Succeeded | RunState::Failed | RunState::Stopped) => {
            format!(", exit code {code}")
        }
        _ => String::new(),
    }
}

pub(crate) fn finish(result: Result<u8, RunError>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let text = format!("gpudeck: {e}\n{}", e.fix());
            match e {
                // What a tool printed (a TOML parser's pointer under the line, sbatch's own
                // words) keeps its lines as they were.
                RunError::BadSpec { .. } | RunError::Slurm(_) | RunError::SlurmSubmit(_) => {
                    errln!("{text}")
                }
                // Everything else reads whole at the terminal's width (a list of recent runs,
                // of GPUs); each line on its own, so the message's own breaks stay.
                _ => errln!("{}", crate::output::wrap(&text, "")),
            }
            let code = match e.is_usage() {
                true => EXIT_USAGE,
                false => EXIT_FAILED,
            };
            ExitCode::from(code)
        }
    }
}
