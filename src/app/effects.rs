//! Carrying out the app's commands: signals, Docker actions, saved logs, diagnoses, and the
//! runs collector's work and run stops and restarts; results come back as events.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::action::{Command, DockerCommand};
use super::event::{Event, RunDone, SignalResult};
use super::saved_logs::save_logs;
use super::state::AppState;
use crate::host::{ProcessTable, ProcessTarget};
use crate::runs::watch::{RunsCommand, RunsHandle};
use crate::runs::RunStore;

/// What starting a run needs from the dashboard.
struct StartParts {
    /// The GPUs as the collector last read them.
    gpus: crate::gpu::report::GpuReport,
    /// This binary, which supervises the run.
    exe: PathBuf,
    gpu_source: crate::gpu::GpuSourceChoice,
    container: crate::runs::ContainerSetup,
    slurm: crate::runs::SlurmDefaults,
}

/// The status line for a start: the new id to select, or why it did not start.
fn started_line(started: Result<crate::runs::Started, crate::runs::RunError>) -> Event {
    match started {
        Ok(s) => {
            let mut line = match s.run.record.remote_job() {
                Some(job) => format!("submitted {} as {}", s.run.id(), job.name),
                None => format!("started {} ({})", s.run.id(), s.run.state()),
            };
            if let Some(w) = s.warnings.first() {
                line.push_str(&format!("; warning: {w}"));
            }
            run_done(line, false, Some(s.run.id().to_string()))
        }
        Err(e) => run_done(e.to_string(), true, None),
    }
}

/// The event that says how a run's start, stop or restart went.
fn run_done(line: String, is_error: bool, new_run: Option<String>) -> Event {
    Event::RunDone(RunDone {
        line,
        is_error,
        new_run,
    })
}

/// Asks the terminal to put `text` on the clipboard (OSC 52; tmux passes it on with its
/// `set-clipboard` option); it works over SSH, where the terminal is on the user's laptop.
fn copy_to_clipboard(text: &str) -> std::io::Result<()> {
    write_clipboard(&mut std::io::stdout().lock(), text)
}

/// The OSC 52 request itself, through crossterm's `CopyToClipboard` (the system clipboard, `c`).
fn write_clipboard(out: &mut impl std::io::Write, text: &str) -> std::io::Result<()> {
    crossterm::execute!(
        out,
        crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
    )
}

/// The wall clock in Unix seconds; the app loop reads it, renderers get it through the state.
pub(super) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Carries out the app's commands: signals, Docker actions, files, diagnoses, runs.
pub(super) struct Effects {
    /// The GPU collector; dropping the effects stops it.
    pub gpu: crate::gpu::collector::CollectorHandle,
    pub processes: Arc<dyn ProcessTable>,
    /// The loop's events: the results of signals, diagnoses and run starts and stops.
    pub events: mpsc::Sender<Event>,
    pub docker: tokio::sync::mpsc::UnboundedSender<DockerCommand>,
    pub docker_host: Option<String>,
    pub data_dir: PathBuf,
    pub runs: RunsHandle,
    pub services: crate::services::ServicesHandle,
    /// `[shell] mount_point`: where a service in a container sees its directory.
    pub mount_point: String,
    /// gpudeck's state directory, as `gpudeck notebook` gets it.
    pub scratch: PathBuf,
    pub store: RunStore,
    pub gpu_choice: crate::gpu::GpuSourceChoice,
    pub container: crate::runs::ContainerSetup,
    pub slurm: crate::runs::SlurmDefaults,
}

/// One diagnosis as the Doctor tab makes it: what `gpudeck doctor` judges (`doctor::diagnose`),
/// with the GPUs as the collector read them.
pub struct DoctorJob {
    /// The GPUs from the collector's last samples (`AppState::gpu_report`).
    pub gpu: crate::gpu::report::GpuReport,
    pub docker_host: Option<String>,
    pub compat: std::sync::Arc<crate::compat::CompatData>,
    pub catalog: Vec<crate::pull::CatalogEntry>,
    /// The idle notebooks' check, from the services collector's last look.
    pub idle: crate::doctor::Check,
    /// Where the health counters' last look is kept (the CLI's state directory).
    pub state_dir: std::path::PathBuf,
}

impl DoctorJob {
    /// The health counters the collector read for this diagnosis, in GPU order (the
    /// dashboard's samples carry none unless it serves metrics).
    pub fn set_health(&mut self, health: Vec<crate::gpu::counters::HealthCounters>) {
        for (g, h) in self.gpu.gpus.iter_mut().zip(health) {
            g.sample.health = h;
        }
    }

    /// Gathers the facts (files, programs, Docker: seconds at worst) and judges them.
    pub fn run(self, runtime: &tokio::runtime::Runtime) -> crate::doctor::DoctorReport {
        let facts = runtime.block_on(crate::doctor::gather(
            self.gpu,
            self.docker_host.as_deref(),
            &crate::doctor::SystemEnv,
        ));
        let extras = crate::doctor::Extras {
            checks: vec![self.idle],
            compat: &self.compat,
            catalog: &self.catalog,
            state_dir: &self.state_dir,
        };
        let (report, problem) = crate::doctor::diagnose(&facts, extras);
        if let Some(problem) = problem {
            tracing::warn!("{problem}");
        }
        report
    }
}

/// How long the doctor waits for the collector's reading of the health counters (a tick's
/// NVML calls at most, unless the driver hangs).
const HEALTH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Effects {
    pub(super) fn execute(&self, command: Command, state: &mut AppState) {
        match command {
            Command::SignalProcess {
                pid,
                start_ticks,
                signal,
            } => {
                let table = Arc::clone(&self.processes);
                let done = self.events.clone();
                let target = ProcessTarget { pid, start_ticks };
                tokio::task::spawn_blocking(move || {
                    let result = table
                        .signal_exact(target, signal)
                        .map_err(|e| e.to_string());
                    let _ = done.blocking_send(Event::Signalled(SignalResult {
                        target,
                        signal,
                        result,
                    }));
                });
            }
            Command::Gpu(cmd) => self.gpu.send(cmd),
            Command::Docker(cmd) => {
                // The collector only goes away with the app, so a failed send has no one to tell.
                let _ = self.docker.send(cmd);
            }
            Command::SaveLogs { name, text } => {
                match save_logs(&self.data_dir, &name, &text, unix_now()) {
                    Ok(path) => {
                        state.set_status(format!("logs saved to {}", path.display()), false)
                    }
                    Err(e) => state.set_status(format!("could not save the logs: {e}"), true),
                }
            }
            Command::RunDoctor => self.run_doctor(state),
            Command::Runs(cmd) => self.runs.send(cmd),
            Command::StopRun { id } => self.stop_run(id, state),
            Command::RerunRun { id } => self.rerun(id, state),
            Command::RestartService { id } => self.restart_service(id, state),
            Command::Services(cmd) => self.services.send(cmd),
            Command::StartService(request) => self.start_service(*request, state),
            Command::Copy { what, text } => match copy_to_clipboard(&text) {
                // The terminal says nothing back: the text goes into the messages too (M), for
                // a terminal that ignores OSC 52.
                Ok(()) => state.set_status(
                    format!("sent {what} to the clipboard (OSC 52): {text}"),
                    false,
                ),
                Err(e) => state.set_status(format!("could not copy {what}: {e}"), true),
            },
            Command::StartRun(spec) => self.start(*spec, state),
            Command::SignalProcesses { targets, signal } => {
                for t in targets {
                    let one = Command::SignalProcess {
                        pid: t.pid,
                        start_ticks: t.start_ticks,
                        signal,
                    };
                    self.execute(one, state);
                }
            }
        }
    }

    /// A stop waits for the ranks to go (seconds, up to the grace periods): on a thread.
    fn stop_run(&self, id: String, state: &mut AppState) {
        let store = self.store.clone();
        let done = self.events.clone();
        let job = state.runs.runs.iter().find(|r| r.id == id);
        let how = crate::runs::how_it_stops(job.and_then(|r| r.job.as_ref()));
        state.set_status(format!("stopping {id}: {how}"), false);
        self.background("stop-run", move || {
            let result = store
                .find(&id)
                .and_then(|run| crate::runs::stop_run(&run, crate::runs::DEFAULT_GRACE));
            let line = match result {
                Ok(crate::runs::StopOutcome::AlreadyFinished(s)) => {
                    run_done(format!("{id} had already ended ({s})"), false, None)
                }
                Ok(crate::runs::StopOutcome::Stopped { signal, run }) => run_done(
                    format!("{id} {} (ranks gone after {signal})", run.state()),
                    false,
                    None,
                ),
                Ok(crate::runs::StopOutcome::EndNotRecorded {
                    signal,
                    why,
                    supervisor_alive,
                }) => {
                    let end = crate::runs::StopOutcome::end_not_recorded(
                        &id,
                        &why.replace('\n', " "),
                        supervisor_alive,
                    );
                    run_done(
                        format!("stopped {id} (ranks gone after {signal}); {end}"),
                        true,
                        None,
                    )
                }
                // One status line: a message wrapped for the terminal is joined back up.
                Err(e) => run_done(e.to_string().replace('\n', " "), true, None),
            };
            let _ = done.blocking_send(line);
        });
        self.runs.send(RunsCommand::Refresh);
    }

    /// A new run from the selected one's spec, checked against the GPUs as the dashboard sees
    /// them now; starting waits for the supervisor (up to seconds): on a thread.
    fn rerun(&self, id: String, state: &mut AppState) {
        let Some(StartParts {
            gpus,
            exe,
            gpu_source,
            container,
            slurm,
        }) = self.start_parts(state)
        else {
            return;
        };
        let store = self.store.clone();
        let done = self.events.clone();
        state.set_status(format!("starting {id} again…"), false);
        self.background("rerun", move || {
            let started = store.find(&id).and_then(|run| {
                let ctx = crate::runs::StartContext {
                    gpus: &gpus,
                    store: &store,
                    cwd: run.record.workdir.clone(),
                    path: std::env::var_os("PATH"),
                    exe,
                    gpu_source,
                    container,
                    slurm,
                };
                crate::runs::rerun(&run, &ctx)
            });
            let _ = done.blocking_send(started_line(started));
        });
    }

    /// A service stopped (when live) and started again from its spec on the same port: on a
    /// thread, as a stop and a start each are.
    fn restart_service(&self, id: String, state: &mut AppState) {
        let Some(parts) = self.start_parts(state) else {
            return;
        };
        let store = self.store.clone();
        let done = self.events.clone();
        state.set_status(format!("restarting {id}: stopping it first…"), false);
        self.background("restart-service", move || {
            let started = store.find(&id).and_then(|run| {
                crate::runs::stop_run(&run, crate::runs::DEFAULT_GRACE)?;
                let ctx = crate::runs::StartContext {
                    gpus: &parts.gpus,
                    store: &store,
                    cwd: run.record.workdir.clone(),
                    path: std::env::var_os("PATH"),
                    exe: parts.exe,
                    gpu_source: parts.gpu_source,
                    container: parts.container,
                    slurm: parts.slurm,
                };
                crate::services::launch::restart(&run, &ctx, (false, None))
            });
            let _ = done.blocking_send(started_line(started));
        });
        self.services.send(crate::services::ServicesCommand::Look);
    }

    /// A notebook from the Services tab's form, started as `gpudeck notebook` would (from the
    /// dashboard's directory): on a thread; the tab shows it starting, then ready.
    fn start_service(&self, request: crate::services::ServiceRequest, state: &mut AppState) {
        let Some(parts) = self.start_parts(state) else {
            return;
        };
        let store = self.store.clone();
        let done = self.events.clone();
        let mount_point = self.mount_point.clone();
        let scratch = self.scratch.clone();
        self.background("start-service", move || {
            let started = std::env::current_dir()
                .map_err(|e| format!("the current directory cannot be read: {e}"))
                .and_then(|cwd| {
                    let placement = crate::services::Placement {
                        cwd: &cwd,
                        mount_point: &mount_point,
                        scratch: &scratch,
                    };
                    let spec = crate::services::service_spec(&request, placement)
                        .map_err(|e| format!("{e} {}", e.fix()))?;
                    let ctx = crate::runs::StartContext {
                        gpus: &parts.gpus,
                        store: &store,
                        cwd: cwd.clone(),
                        path: std::env::var_os("PATH"),
                        exe: parts.exe,
                        gpu_source: parts.gpu_source,
                        container: parts.container,
                        slurm: parts.slurm,
                    };
                    crate::runs::start_run(&spec, &ctx).map_err(|e| e.to_string())
                });
            let line = match started {
                Ok(s) => started_line(Ok(s)),
                Err(why) => run_done(why.replace('\n', " "), true, None),
            };
            let _ = done.blocking_send(line);
        });
    }

    /// A new run from the form, started as `gpudeck run` would: on a thread.
    fn start(&self, spec: crate::runs::RunSpec, state: &mut AppState) {
        let Some(ctx) = self.start_parts(state) else {
            return;
        };
        let store = self.store.clone();
        let done = self.events.clone();
        self.background("start-run", move || {
            let StartParts {
                gpus,
                exe,
                gpu_source,
                container,
                slurm,
            } = ctx;
            let cwd = spec.workdir.clone().unwrap_or_else(|| PathBuf::from("."));
            let ctx = crate::runs::StartContext {
                gpus: &gpus,
                store: &store,
                cwd,
                path: std::env::var_os("PATH"),
                exe,
                gpu_source,
                container,
                slurm,
            };
            let _ = done.blocking_send(started_line(crate::runs::start(&spec, &ctx)));
        });
    }

    /// What starting a run needs from here, or None (and why, on the status line).
    fn start_parts(&self, state: &mut AppState) -> Option<StartParts> {
        let Some(gpus) = state.gpu_report() else {
            state.set_status(
                "the GPUs have not been read yet; try again in a moment",
                true,
            );
            return None;
        };
        match std::env::current_exe() {
            Ok(exe) => Some(StartParts {
                gpus,
                exe,
                gpu_source: self.gpu_choice.clone(),
                container: self.container.clone(),
                slurm: self.slurm.clone(),
            }),
            Err(e) => {
                state.set_status(format!("the gpudeck binary cannot be found: {e}"), true);
                None
            }
        }
    }

    fn background(&self, name: &str, work: impl FnOnce() + Send + 'static) {
        if let Err(e) = std::thread::Builder::new().name(name.into()).spawn(work) {
            let _ = self.events.try_send(run_done(
                format!("could not start a thread: {e}"),
                true,
                None,
            ));
        }
    }

    /// The diagnosis runs `nvcc --version`, reads /proc and /sys and asks Docker: on a thread
    /// of its own, so none of it ever holds up a frame. It judges what `gpudeck doctor` judges
    /// (`doctor::diagnose`): the GPUs as the collector read them, with the health counters the
    /// collector reads once for it.
    fn run_doctor(&self, state: &mut AppState) {
        let Some(gpu) = state.gpu_report() else {
            state.doctor.running = false;
            return;
        };
        let (health_tx, mut health_rx) = tokio::sync::mpsc::channel(1);
        self.gpu
            .send(crate::gpu::collector::CollectorCommand::ReadHealthNow(
                crate::gpu::collector::HealthReply(health_tx),
            ));
        let mut job = DoctorJob {
            gpu,
            docker_host: self.docker_host.clone(),
            compat: state.compat.data.clone(),
            catalog: state.docker.catalog.clone(),
            // The notebooks as the services collector last saw them (at most 30 s ago).
            idle: crate::services::idle_check(&state.services.rows, state.idle_alert),
            state_dir: self.scratch.clone(),
        };
        let done = self.events.clone();
        let spawned = std::thread::Builder::new()
            .name("doctor".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                // A collector that has stopped (no GPUs) answers nothing: the channel closes.
                let health = runtime.block_on(async {
                    tokio::time::timeout(HEALTH_WAIT, health_rx.recv())
                        .await
                        .ok()
                        .flatten()
                });
                job.set_health(health.unwrap_or_default());
                let report = job.run(&runtime);
                let _ = done.blocking_send(Event::Doctor(Box::new(report)));
            });
        if let Err(e) = spawned {
            state.doctor.running = false;
            state.set_status(format!("could not start the diagnosis: {e}"), true);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The request a terminal (and tmux's `set-clipboard`) reads: OSC 52 for the clipboard `c`,
    /// the text in base64, ended by ST.
    #[test]
    fn a_copy_is_one_osc_52_request_with_the_text_in_base64() {
        let mut out = Vec::new();
        super::write_clipboard(&mut out, "4242 train.py").expect("written to memory");
        assert_eq!(out, b"\x1b]52;c;NDI0MiB0cmFpbi5weQ==\x1b\\");
    }
}
