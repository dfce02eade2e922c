//! `gpudeck notebook`, `tensorboard`, `triton` and `services`: a service request turned into a
//! run (`services::service_spec`), started by the run machinery, waited for until it answers,
//! and told to the user as a URL and an SSH line; and the list of services.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::gpu::report::GpuReport;
use crate::gpu::{GpuSample, GpuSourceChoice};
use crate::runs::SlurmDefaults;
use crate::runs::{
    now_ms, parse_env, ContainerSetup, LogStream, Run, RunError, RunStore, ServiceKind,
};
use crate::services::{
    look_blocking, row_of, service_spec, services_of, Health, Placement, ServiceError,
    ServiceRequest, ServiceRow, SERVICES_SCHEMA,
};

use super::runs::{say, start_with};
use super::{NotebookArgs, RerunArgs, ServiceFlags, TensorboardArgs, TritonArgs};

/// How long a start waits for the service to answer before it leaves it starting.
const READY_WAIT: Duration = Duration::from_secs(90);

/// What starting a service needs from the command line and the config.
pub struct ServiceSetup<'a> {
    pub store: &'a RunStore,
    pub config: &'a Config,
    pub gpu_source: GpuSourceChoice,
    pub container: ContainerSetup,
    pub slurm: SlurmDefaults,
    /// gpudeck's private state directory.
    pub scratch: PathBuf,
}

/// Which of the three commands, with its own arguments.
pub enum ServiceCommand<'a> {
    Notebook(&'a NotebookArgs),
    Tensorboard(&'a TensorboardArgs),
    Triton(&'a TritonArgs),
}

impl ServiceCommand<'_> {
    fn flags(&self) -> &ServiceFlags {
        match self {
            ServiceCommand::Notebook(a) => &a.service,
            ServiceCommand::Tensorboard(a) => &a.service,
            ServiceCommand::Triton(a) => &a.service,
        }
    }

    fn kind(&self) -> ServiceKind {
        match self {
            ServiceCommand::Notebook(_) => ServiceKind::Notebook,
            ServiceCommand::Tensorboard(_) => ServiceKind::Tensorboard,
            ServiceCommand::Triton(_) => ServiceKind::Triton,
        }
    }

    fn image(&self) -> Option<&String> {
        match self {
            ServiceCommand::Notebook(a) => a.image.as_ref(),
            ServiceCommand::Tensorboard(a) => a.image.as_ref(),
            ServiceCommand::Triton(a) => a.image.as_ref(),
        }
    }
}

/// `gpudeck notebook|tensorboard|triton ...`: start, wait until it answers, print its id on
/// stdout and where to open it on stderr.
pub fn start(
    command: ServiceCommand<'_>,
    setup: ServiceSetup<'_>,
    gpus: impl FnOnce() -> GpuReport,
) -> ExitCode {
    finish(start_service(&command, setup, gpus))
}

fn start_service(
    command: &ServiceCommand<'_>,
    setup: ServiceSetup<'_>,
    gpus: impl FnOnce() -> GpuReport,
) -> Result<u8, ServiceError> {
    let mut request = request_of(command, setup.store)?;
    request.idle_stop = setup.config.notebook.idle_stop.0;
    let cwd = std::env::current_dir().map_err(|e| RunError::BadWorkdir {
        path: ".".into(),
        why: format!("the current directory cannot be read: {e}"),
    })?;
    let spec = service_spec(
        &request,
        Placement {
            cwd: &cwd,
            mount_point: &setup.config.shell.mount_point,
            scratch: &setup.scratch,
        },
    )?;
    let started = start_with(
        setup.store,
        (setup.gpu_source, setup.container, setup.slurm),
        gpus,
        |ctx| crate::runs::start_run(&spec, ctx),
    )?;
    let run = started.run;
    outln!("{}", run.id());
    let idle_alert = setup.config.notebook.idle_alert.0;
    let (run, row) = wait_until_ready(run, idle_alert);
    tell_started(&run, &row);
    Ok(match row.health {
        Health::Ended => 1,
        _ => 0,
    })
}

/// `gpudeck rerun SERVICE [--gpus ...]`: the service started again from its spec (same command,
/// GPUs unless `--gpus` says others, and port; a notebook gets a new token unless
/// `--keep-token`), waited for and told as a start is.
pub fn restart(
    args: &RerunArgs,
    setup: ServiceSetup<'_>,
    gpus: impl FnOnce() -> GpuReport,
) -> ExitCode {
    finish((|| {
        let on = super::runs::rerun_gpus(args)?;
        let old = setup.store.find(&args.run)?;
        errln!("gpudeck: starting {} again", old.id());
        let started = start_with(
            setup.store,
            (setup.gpu_source, setup.container, setup.slurm),
            gpus,
            |ctx| crate::services::launch::restart(&old, ctx, (args.keep_token, on)),
        )?;
        let run = started.run;
        outln!("{}", run.id());
        let (run, row) = wait_until_ready(run, setup.config.notebook.idle_alert.0);
        tell_started(&run, &row);
        Ok(match row.health {
            Health::Ended => 1,
            _ => 0,
        })
    })())
}

/// The request the command line makes.
fn request_of(
    command: &ServiceCommand<'_>,
    store: &RunStore,
) -> Result<ServiceRequest, ServiceError> {
    let flags = command.flags();
    let kind = command.kind();
    let image = command.image().cloned();
    if flags.host && image.is_some() {
        return Err(ServiceError::HostAndImage {
            kind: kind.as_str(),
        });
    }
    if !flags.host && image.is_none() {
        return Err(ServiceError::NoImageNoHost {
            kind: kind.as_str(),
            ways: ways_to_start(command),
        });
    }
    let gpus = match &flags.gpus {
        Some(text) => text.parse().map_err(ServiceError::Run)?,
        None => kind.default_gpus(),
    };
    let env = flags
        .env
        .iter()
        .map(|e| parse_env(e))
        .collect::<Result<Vec<_>, _>>()?;
    let dir = match command {
        ServiceCommand::Notebook(a) => a.workdir.clone(),
        ServiceCommand::Tensorboard(a) => Some(log_dir(&a.target, store)?),
        ServiceCommand::Triton(a) => Some(a.repository.clone()),
    };
    Ok(ServiceRequest {
        kind,
        image,
        gpus,
        dir,
        name: flags.name.clone(),
        port: flags.port,
        env,
        idle_stop: None,
    })
}

/// The two ways to start this kind, as commands to type.
fn ways_to_start(command: &ServiceCommand<'_>) -> Vec<String> {
    let gpus = match command.flags().gpus.as_deref() {
        Some(g) => format!(" --gpus {g}"),
        None => String::new(),
    };
    match command {
        ServiceCommand::Notebook(_) => vec![
            format!("In a container: gpudeck notebook IMAGE{gpus} (a local image with JupyterLab; `gpudeck images` lists yours)."),
            format!("On this machine: gpudeck notebook --host{gpus} (the `jupyter` on PATH, e.g. your venv's)."),
        ],
        ServiceCommand::Tensorboard(a) => vec![
            format!("On this machine: gpudeck tensorboard {} --host (the `tensorboard` on PATH).", a.target),
            format!("In a container: gpudeck tensorboard {} --image IMAGE.", a.target),
        ],
        ServiceCommand::Triton(a) => vec![
            format!(
                "In a container: gpudeck triton {} --image nvcr.io/nvidia/tritonserver:25.10-py3{gpus} (pull it first: `gpudeck pull nvcr.io/nvidia/tritonserver:25.10-py3`).",
                a.repository.display()
            ),
            format!(
                "On this machine: gpudeck triton {} --host{gpus} (the `tritonserver` on PATH).",
                a.repository.display()
            ),
        ],
    }
}

/// TensorBoard's log directory: a directory given, else the work directory of the run named.
fn log_dir(target: &str, store: &RunStore) -> Result<PathBuf, ServiceError> {
    let path = Path::new(target);
    if path.is_dir() {
        return Ok(path.to_path_buf());
    }
    match store.find(target) {
        Ok(run) => Ok(run.record.workdir.clone()),
        Err(e) => Err(ServiceError::UnknownTarget {
            what: target.to_string(),
            why: match path.exists() {
                true => "it is a file".into(),
                false => format!("there is no such directory, and {e}"),
            },
        }),
    }
}

/// Waits until the service answers, its run ends, or `READY_WAIT` passes.
fn wait_until_ready(mut run: Run, idle_alert: Option<Duration>) -> (Run, ServiceRow) {
    let deadline = Instant::now() + READY_WAIT;
    let mut lost_port = None;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    loop {
        if let Ok(fresh) = run.reload() {
            run = fresh;
        }
        let row = look_blocking(
            runtime.as_ref().ok(),
            std::slice::from_ref(&run),
            now_ms(),
            idle_alert,
        )
        .pop()
        .unwrap_or_else(|| row_of(&run, now_ms()));
        // Another user's process on the port: the service cannot have it; say so when it ends.
        if let Err(taken) = crate::services::owner::check(&run) {
            if taken.is_foreign() {
                lost_port = Some(taken.to_string());
            }
        }
        if row.health == Health::Ended {
            // Read after the record: a supervisor that wrote the end and exited in between
            // made a `running` record look lost. The record read now has the end.
            if let Ok(fresh) = run.reload() {
                run = fresh;
            }
            let mut row = row_of(&run, now_ms());
            row.problem = lost_port;
            return (run, row);
        }
        if row.health == Health::Ready || Instant::now() >= deadline {
            return (run, row);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// What the user reads after a start: where to open it, how to reach it from a laptop, and
/// how to stop it; or why it ended.
fn tell_started(run: &Run, row: &ServiceRow) {
    let id = run.id();
    let what = row.kind.what();
    let gpus = match run.record.gpus.is_empty() {
        true => "no GPU".to_string(),
        false => format!("GPU {}", run.record.gpu_indices()),
    };
    let place = match &run.record.image {
        Some(image) => format!("in {image}"),
        None => "on this machine".to_string(),
    };
    if row.health == Health::Ended {
        let why = match (&run.record.error, run.record.exit_code) {
            (Some(error), _) => error.clone(),
            (None, Some(code)) => format!("it {} with exit code {code}", run.state()),
            (None, None) => format!("it {}", run.state()),
        };
        say(&format!(
            "gpudeck: {id}: {what} ended before it answered: {why}"
        ));
        if let Some(taken) = &row.problem {
            say(&format!(
                "gpudeck: {id}: it lost its port: {taken}. Start it anew (`gpudeck {}` with the \
                 same arguments), which picks another free port{}",
                row.kind.as_str(),
                match row.kind {
                    ServiceKind::Notebook => " and a new token",
                    _ => "",
                }
            ));
        }
        let tail = stderr_tail(run);
        if let Some(tail) = &tail {
            errln!("{tail}");
        }
        let program = row.kind.program();
        let missing = tail.as_deref().is_some_and(|t| {
            t.contains(&format!("exec {program} failed")) || t.contains("executable file not found")
        });
        if let (true, Some(image)) = (missing, &run.record.image) {
            say(&format!(
                "gpudeck: {image} has no `{program}` on its PATH: use an image that has it{}, \
                 or run it on this machine with --host",
                match row.kind {
                    ServiceKind::Notebook => {
                        " (a TensorFlow -gpu-jupyter tag, or your own image with `pip install jupyterlab`)"
                    }
                    ServiceKind::Tensorboard => " (a TensorFlow image)",
                    ServiceKind::Triton => " (nvcr.io/nvidia/tritonserver:<version>-py3)",
                }
            ));
        }
        say(&format!(
            "gpudeck: its whole output: `gpudeck logs {id} --stderr`"
        ));
        return;
    }
    match row.health {
        Health::Ready => say(&format!(
            "gpudeck: {id}: {what} is ready, on {gpus}, {place}"
        )),
        _ => say(&format!(
            "gpudeck: {id}: {what} started, on {gpus}, {place}, but does not answer yet ({}); \
             `gpudeck services` shows when it does",
            row.problem.as_deref().unwrap_or("still starting")
        )),
    }
    errln!("  open it:        {}", row.url);
    errln!("  from a laptop:  {}", row.ssh);
    errln!("                  (then open the same address there)");
    errln!(
        "  who reaches it:  {}",
        row.kind.who_reaches(row.image.is_some())
    );
    errln!("  stop it:        gpudeck stop {id}");
    errln!("  its output:     gpudeck logs {id} --stderr -f");
    for model in &row.models {
        errln!(
            "  model {} {}",
            model.name,
            model.state.as_deref().unwrap_or("not loaded")
        );
    }
}

/// The last lines of rank 0's stderr, indented.
fn stderr_tail(run: &Run) -> Option<String> {
    let text = std::fs::read_to_string(run.log_path(0, LogStream::Stderr)).ok()?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(8)..];
    (!tail.is_empty()).then(|| {
        tail.iter()
            .map(|l| format!("  | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Every service in the store as `look_at_all` sees it now (damaged runs skipped, said on
/// stderr); for `services` and doctor.
pub fn look_now(
    store: &RunStore,
    idle_alert: Option<Duration>,
) -> Result<Vec<ServiceRow>, RunError> {
    let (runs, damaged) = store.scan()?;
    for d in &damaged {
        errln!("gpudeck: warning: {d}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let runs = services_of(runs);
    Ok(look_blocking(
        runtime.as_ref().ok(),
        &runs,
        now_ms(),
        idle_alert,
    ))
}

/// `gpudeck services [--json]`; `gpus` reads the GPUs (only when a live service holds some),
/// for the memory each service's own processes hold there.
pub fn list(
    store: &RunStore,
    config: &Config,
    json: bool,
    gpus: impl FnOnce() -> Option<Vec<GpuSample>>,
) -> ExitCode {
    let mut rows = match look_now(store, config.notebook.idle_alert.0) {
        Ok(rows) => rows,
        Err(e) => return finish(Err(e.into())),
    };
    let holding = rows
        .iter()
        .any(|r| r.health != Health::Ended && !r.gpus.is_empty());
    if let Some(samples) = holding.then(gpus).flatten() {
        for row in &mut rows {
            row.gpu_memory_bytes = row.own_gpu_memory(&samples);
        }
    }
    if json {
        let doc = serde_json::json!({ "schema": SERVICES_SCHEMA, "services": rows });
        match serde_json::to_string_pretty(&doc) {
            Ok(text) => outln!("{text}"),
            Err(e) => {
                errln!("gpudeck: could not encode the services: {e}");
                return ExitCode::from(1);
            }
        }
        return ExitCode::SUCCESS;
    }
    out!("{}", render(&rows));
    ExitCode::SUCCESS
}

/// The services as a table whose STATE and HEALTH are the JSON's `state` and `health` (WHERE:
/// `host` or `container`), then each live one's image, address, SSH line, and what it says, and
/// why each one that failed did; nothing is cut, whatever the width.
pub fn render(rows: &[ServiceRow]) -> String {
    if rows.is_empty() {
        // Wrapped to the terminal, each command whole on its line.
        let text = "No services. Start one: `gpudeck notebook IMAGE --gpus 0` (or --host), \
                    `gpudeck tensorboard RUN --host`, `gpudeck triton REPO --image IMAGE`.";
        return format!("{}\n", crate::output::wrap(text, "  "));
    }
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|row| {
            let idle = match (row.idle_seconds, row.idle_alert) {
                (Some(s), true) => format!("{}!", crate::units::run_duration(s * 1000)),
                (Some(s), false) => crate::units::run_duration(s * 1000),
                (None, _) => "-".into(),
            };
            let place = match row.image {
                Some(_) => "container",
                None => "host",
            };
            [
                row.id.clone(),
                row.kind.as_str().to_string(),
                row.state.as_str().to_string(),
                row.health.as_str().to_string(),
                row.gpus_with_memory(row.gpu_memory_bytes),
                idle,
                place.to_string(),
            ]
        })
        .collect();
    let header = ["ID", "KIND", "STATE", "HEALTH", "GPUS", "IDLE", "WHERE"];
    let widths = crate::text_table::column_widths(&header, &cells);
    let mut out = crate::text_table::render(&header, &cells, &widths, &[0, 1, 2, 3, 4, 5, 6], 2);
    for row in rows.iter().filter(|r| r.health == Health::Ended) {
        if let Some(error) = &row.error {
            let text = format!("{} {} ({}): {error}", row.id, row.state, row.kind.what());
            out.push('\n');
            out.push_str(&crate::output::wrap(&text, "  "));
            out.push('\n');
        }
    }
    for row in rows.iter().filter(|r| r.health != Health::Ended) {
        out.push_str(&format!("\n{} ({}):\n", row.id, row.kind.what()));
        if let Some(image) = &row.image {
            out.push_str(&format!("  in:    {image}\n"));
        }
        out.push_str(&format!("  open:  {}\n  ssh:   {}\n", row.url, row.ssh));
        let reach = format!("  reach: {}", row.kind.who_reaches(row.image.is_some()));
        out.push_str(&crate::output::wrap(&reach, "         "));
        out.push('\n');
        if let Some(problem) = &row.problem {
            out.push_str(&format!("  not answering: {problem}\n"));
        }
        for model in &row.models {
            let latency = model
                .mean_latency_us
                .map_or("-".to_string(), |us| format!("{:.1} ms", us / 1000.0));
            out.push_str(&format!(
                "  model: {} v{} {}, {} inferences ({} failed), mean {latency}\n",
                model.name,
                model.version.as_deref().unwrap_or("-"),
                model.state.as_deref().unwrap_or("not loaded"),
                model.inferences,
                model.failures,
            ));
        }
        if row.idle_alert {
            out.push_str(&format!(
                "  idle for {} while holding {}: save your work and `gpudeck stop {}`\n",
                crate::units::run_duration(row.idle_seconds.unwrap_or(0) * 1000),
                crate::services::idle::gpu_list(row),
                row.id
            ));
        }
    }
    out
}

fn finish(result: Result<u8, ServiceError>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(ServiceError::Run(e)) => super::runs::finish(Err(e)),
        Err(e) => {
            errln!(
                "{}",
                crate::output::wrap(&format!("gpudeck: {e}\n{}", e.fix()), "")
            );
            ExitCode::from(if e.is_usage() { 2 } else { 1 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::{RunGpu, RunState, ServiceKind};

    fn row(id: &str, state: RunState, health: Health) -> ServiceRow {
        ServiceRow {
            id: id.into(),
            kind: ServiceKind::Notebook,
            name: "notebook".into(),
            state,
            health,
            problem: None,
            url: "http://127.0.0.1:8888/lab?token=abc".into(),
            ssh: "ssh -N -L 8888:127.0.0.1:8888 alice@node".into(),
            ports: Vec::new(),
            gpus: vec![RunGpu {
                index: 1,
                uuid: "GPU-1".into(),
                name: "H100".into(),
            }],
            image: None,
            started_ms: Some(1),
            ended_ms: None,
            error: None,
            idle_seconds: None,
            idle_alert: false,
            kernels: Vec::new(),
            models: Vec::new(),
            gpu_memory_bytes: None,
            own: Default::default(),
        }
    }

    /// Each column word is the JSON field of the same name, so the text and `--json` agree.
    #[test]
    fn the_table_says_state_and_health_as_the_json_does_and_why_a_service_failed() {
        let live = row(
            "20270115-070000-notebook-1a2b",
            RunState::Running,
            Health::Ready,
        );
        let failed = ServiceRow {
            error: Some("jupyter exited with code 1 before it answered".into()),
            ended_ms: Some(2),
            ..row(
                "20270115-060000-notebook-9f9f",
                RunState::Failed,
                Health::Ended,
            )
        };
        let text = render(&[live.clone(), failed.clone()]);
        let lines: Vec<&str> = text.lines().collect();
        let words = |line: &str| {
            line.split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            words(lines[0]),
            ["ID", "KIND", "STATE", "HEALTH", "GPUS", "IDLE", "WHERE"]
        );
        assert_eq!(
            words(lines[1])[2..4],
            [live.state.as_str(), live.health.as_str()]
        );
        assert_eq!(words(lines[1])[2..4], ["running", "ready"]);
        assert_eq!(words(lines[2])[2..4], ["failed", "ended"]);
        let json = serde_json::to_value(&failed).unwrap();
        assert_eq!(
            (json["state"].as_str(), json["health"].as_str()),
            (Some("failed"), Some("ended"))
        );
        assert_eq!(
            json["error"],
            "jupyter exited with code 1 before it answered"
        );
        assert!(
            text.replace("\n  ", " ").contains(
                "20270115-060000-notebook-9f9f failed (JupyterLab): jupyter exited with code 1 \
                 before it answered"
            ),
            "{text}"
        );
    }
}
