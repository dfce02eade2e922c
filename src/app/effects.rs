//! Carrying out the app's commands: signals, Docker actions, saved logs, diagnoses, and the
//! runs collector's work and run stops and restarts; results come back as events.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::action::{Command, DockerCommand};
use super::saved_logs::save_logs;
use super::state::AppState;
use super::unix_now;
use crate::doctor::DoctorReport;
use crate::host::{KillSignal, ProcessTable, ProcessTarget};
use crate::runs::watch::{RunsCommand, RunsHandle};
use crate::runs::RunStore;

/// Carries out the app's commands: signals, Docker actions, files, diagnoses, runs.
/// What starting a run needs: the GPUs as read, the binary, the GPU source, container setup.
type StartParts = (
    crate::gpu::report::GpuReport,
    PathBuf,
    crate::gpu::GpuSourceChoice,
    crate::runs::ContainerSetup,
    crate::runs::slurm::SlurmDefaults,
);

/// The status line for a start: the new id to select, or why it did not start.
fn started_line(started: Result<crate::runs::Started, crate::runs::RunError>) -> RunDone {
    match started {
        Ok(s) => {
            let mut line = match &s.run.record.slurm {
                Some(job) => format!("submitted {} as Slurm job {}", s.run.id(), job.job_id),
                None => format!("started {} ({})", s.run.id(), s.run.state()),
            };
            if let Some(w) = s.warnings.first() {
                line.push_str(&format!("; warning: {w}"));
            }
            (line, false, Some(s.run.id().to_string()))
        }
        Err(e) => (e.to_string(), true, None),
    }
}

/// How a stop or restart went: the status line, whether it failed, and a new run to select.
pub(super) type RunDone = (String, bool, Option<String>);

pub(super) struct Effects {
    /// The GPU collector; dropping the effects stops it.
    pub gpu: crate::gpu::collector::CollectorHandle,
    pub processes: Arc<dyn ProcessTable>,
    pub signal_done: mpsc::Sender<(ProcessTarget, KillSignal, Result<(), String>)>,
    pub docker: tokio::sync::mpsc::UnboundedSender<DockerCommand>,
    pub docker_host: Option<String>,
    pub doctor_done: mpsc::Sender<DoctorReport>,
    pub data_dir: PathBuf,
    pub runs: RunsHandle,
    pub store: RunStore,
    /// A stop or restart of a run finished.
    pub run_done: mpsc::Sender<RunDone>,
    pub gpu_choice: crate::gpu::GpuSourceChoice,
    pub container: crate::runs::ContainerSetup,
    pub slurm: crate::runs::slurm::SlurmDefaults,
}

impl Effects {
    pub(super) fn execute(&self, command: Command, state: &mut AppState) {
        match command {
            Command::SignalProcess {
                pid,
                start_ticks,
                signal,
            } => {
                let table = Arc::clone(&self.processes);
                let done = self.signal_done.clone();
                let target = ProcessTarget { pid, start_ticks };
                tokio::task::spawn_blocking(move || {
                    let result = table
                        .signal_exact(target, signal)
                        .map_err(|e| e.to_string());
                    let _ = done.blocking_send((target, signal, result));
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
        let done = self.run_done.clone();
        let job = state
            .runs
            .runs
            .iter()
            .find(|r| r.id == id)
            .and_then(|r| r.slurm.as_ref().map(|j| j.job_id.clone()));
        let how = match job {
            Some(job) => format!("cancelling Slurm job {job} (scancel)…"),
            None => "SIGINT, then SIGTERM, then SIGKILL…".into(),
        };
        state.set_status(format!("stopping {id}: {how}"), false);
        self.background("stop-run", move || {
            let result = store
                .find(&id)
                .and_then(|run| crate::runs::stop_run(&run, crate::runs::DEFAULT_GRACE));
            let line = match result {
                Ok(crate::runs::StopOutcome::AlreadyFinished(s)) => {
                    (format!("{id} had already ended ({s})"), false, None)
                }
                Ok(crate::runs::StopOutcome::Stopped { signal, run }) => (
                    format!("{id} {} (ranks gone after {signal})", run.state()),
                    false,
                    None,
                ),
                // One status line: a message wrapped for the terminal is joined back up.
                Err(e) => (e.to_string().replace('\n', " "), true, None),
            };
            let _ = done.blocking_send(line);
        });
        self.runs.send(RunsCommand::Refresh);
    }

    /// A new run from the selected one's spec, checked against the GPUs as the dashboard sees
    /// them now; starting waits for the supervisor (up to seconds): on a thread.
    fn rerun(&self, id: String, state: &mut AppState) {
        let Some((gpus, exe, choice, container, slurm)) = self.start_parts(state) else {
            return;
        };
        let store = self.store.clone();
        let done = self.run_done.clone();
        state.set_status(format!("starting {id} again…"), false);
        self.background("rerun", move || {
            let started = store.find(&id).and_then(|run| {
                let ctx = crate::runs::StartContext {
                    gpus: &gpus,
                    store: &store,
                    cwd: run.record.workdir.clone(),
                    path: std::env::var_os("PATH"),
                    exe,
                    gpu_source: choice,
                    container,
                    slurm,
                };
                crate::runs::rerun(&run, &ctx)
            });
            let _ = done.blocking_send(started_line(started));
        });
    }

    /// A new run from the form, started as `gpudeck run` would: on a thread.
    fn start(&self, spec: crate::runs::RunSpec, state: &mut AppState) {
        let Some(ctx) = self.start_parts(state) else {
            return;
        };
        let store = self.store.clone();
        let done = self.run_done.clone();
        self.background("start-run", move || {
            let (gpus, exe, choice, container, slurm) = ctx;
            let cwd = spec.workdir.clone().unwrap_or_else(|| PathBuf::from("."));
            let ctx = crate::runs::StartContext {
                gpus: &gpus,
                store: &store,
                cwd,
                path: std::env::var_os("PATH"),
                exe,
                gpu_source: choice,
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
            Ok(exe) => Some((
                gpus,
                exe,
                self.gpu_choice.clone(),
                self.container.clone(),
                self.slurm.clone(),
            )),
            Err(e) => {
                state.set_status(format!("the gpudeck binary cannot be found: {e}"), true);
                None
            }
        }
    }

    fn background(&self, name: &str, work: impl FnOnce() + Send + 'static) {
        if let Err(e) = std::thread::Builder::new().name(name.into()).spawn(work) {
            let _ = self
                .run_done
                .try_send((format!("could not start a thread: {e}"), true, None));
        }
    }

    /// The diagnosis runs `nvcc --version`, reads /proc and /sys and asks Docker: on a thread
    /// of its own, so none of it ever holds up a frame.
    fn run_doctor(&self, state: &mut AppState) {
        let Some(gpu) = state.gpu_report() else {
            state.doctor.running = false;
            return;
        };
        let frameworks = crate::doctor::frameworks::framework_check(
            &gpu,
            &state.compat.data,
            &state.docker.catalog,
        );
        let host = self.docker_host.clone();
        let done = self.doctor_done.clone();
        let spawned = std::thread::Builder::new()
            .name("doctor".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                let facts = runtime.block_on(crate::doctor::gather(
                    gpu,
                    host.as_deref(),
                    &crate::doctor::SystemEnv,
                ));
                let mut report = crate::doctor::run_checks(&facts);
                report.push(frameworks);
                let _ = done.blocking_send(report);
            });
        if let Err(e) = spawned {
            state.doctor.running = false;
            state.set_status(format!("could not start the diagnosis: {e}"), true);
        }
    }
}
