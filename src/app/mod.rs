//! The TUI: the event loop that feeds keys, mouse, GPU updates and signals into the state and draws it.

pub mod action;
mod bindings;
pub mod compat;
mod cursor;
pub mod docker;
mod docker_actions;
pub mod doctor;
pub mod keymap;
pub mod processes;
mod pull_actions;
pub mod pulls;
pub mod shell_dialog;
mod shell_run;
pub mod state;
pub mod terminal;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream, KeyEventKind, MouseButton, MouseEventKind};
use futures::StreamExt;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::config::{Config, Theme};
use crate::docker::update::DockerUpdate;
use crate::doctor::DoctorReport;
use crate::gpu::collector::{self, GpuUpdate, Opener};
use crate::host::{KillSignal, ProcessTable};
use action::{Action, Command, DockerCommand};
use keymap::Binding;
use state::AppState;

/// The app: state plus what it needs to act on it.
pub struct App {
    pub state: AppState,
    pub theme: Theme,
    pub keymap: Vec<Binding>,
    /// The `[shell]` settings, for shells opened from the dashboard.
    pub shell: crate::config::ShellConfig,
}

impl App {
    pub fn new(config: &Config, theme: Theme, host: String, read_only: bool) -> Self {
        Self {
            state: AppState::new(config, host, read_only),
            theme,
            keymap: keymap::bindings(),
            shell: config.shell.clone(),
        }
    }

    /// Turns a terminal event into state changes; returns whether to redraw and any commands.
    pub fn handle_event(&mut self, event: &Event, area: Rect) -> (bool, Vec<Command>) {
        let action = match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => {
                keymap::action_for(&self.state, &self.keymap, *key)
            }
            Event::Mouse(m) => match m.kind {
                MouseEventKind::Down(MouseButton::Left) => {
                    crate::ui::click(area, &self.state, m.column, m.row)
                }
                MouseEventKind::ScrollUp => Some(Action::Up),
                MouseEventKind::ScrollDown => Some(Action::Down),
                // Motion events arrive by the hundred; they change nothing, so they cost no frame.
                _ => return (false, Vec::new()),
            },
            Event::Resize(..) => return (true, Vec::new()),
            _ => None,
        };
        match action {
            Some(a) => (true, self.state.update(a)),
            None => (false, Vec::new()),
        }
    }

    pub fn draw<B: Backend>(&mut self, terminal: &mut Terminal<B>) -> Result<(), B::Error> {
        let state = &mut self.state;
        let (theme, keymap) = (&self.theme, &self.keymap);
        terminal.draw(|f| {
            crate::ui::render(f.area(), f.buffer_mut(), state, theme, keymap);
        })?;
        Ok(())
    }
}

/// How the TUI gets its GPU data.
pub struct Sources {
    pub open_gpus: Opener,
    pub processes: Arc<dyn ProcessTable>,
    /// `--docker-host`, else DOCKER_HOST, else the default socket.
    pub docker_host: Option<String>,
    /// Where saved logs go.
    pub data_dir: PathBuf,
}

/// Carries out the app's commands: signals, Docker actions, files, diagnoses.
struct Effects {
    processes: Arc<dyn ProcessTable>,
    signal_done: mpsc::Sender<(u32, KillSignal, Result<(), String>)>,
    docker: tokio::sync::mpsc::UnboundedSender<DockerCommand>,
    docker_host: Option<String>,
    doctor_done: mpsc::Sender<DoctorReport>,
    data_dir: PathBuf,
}

impl Effects {
    fn execute(&self, command: Command, state: &mut AppState) {
        match command {
            Command::SignalProcess { pid, signal } => {
                let table = Arc::clone(&self.processes);
                let done = self.signal_done.clone();
                tokio::task::spawn_blocking(move || {
                    let result = table.signal(pid, signal).map_err(|e| e.to_string());
                    let _ = done.blocking_send((pid, signal, result));
                });
            }
            Command::Docker(cmd) => {
                // The collector only goes away with the app, so a failed send has no one to tell.
                let _ = self.docker.send(cmd);
            }
            Command::SaveLogs { name, text } => match save_logs(&self.data_dir, &name, &text) {
                Ok(path) => state.set_status(format!("logs saved to {}", path.display()), false),
                Err(e) => state.set_status(format!("could not save the logs: {e}"), true),
            },
            Command::RunDoctor => self.run_doctor(state),
        }
    }

    /// The diagnosis runs `nvcc --version`, reads /proc and /sys and asks Docker: on a thread
    /// of its own, so none of it ever holds up a frame.
    fn run_doctor(&self, state: &mut AppState) {
        let Some(gpu) = state.gpu_report() else {
            state.doctor.running = false;
            return;
        };
        let frameworks =
            crate::compat::doctor::framework_check(&gpu, &state.compat.data, &state.docker.catalog);
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

fn save_logs(data_dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let dir = data_dir.join("logs");
    std::fs::create_dir_all(&dir)?;
    let stamp = unix_now();
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = dir.join(format!("{safe}-{stamp}.log"));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The wall clock in Unix seconds; the app loop reads it, renderers get it through the state.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// New data is drawn at most this often; keys are drawn at once. Twenty containers' stats streams
/// each deliver a sample a second, and a frame per sample would cost more than everything else.
const DATA_FRAME: Duration = Duration::from_millis(250);

/// Decides when to draw: at once for input, and for data no more than once per `DATA_FRAME`.
struct Pacer {
    input: bool,
    data: bool,
    last: Instant,
    first: bool,
}

impl Pacer {
    fn new() -> Self {
        Self {
            input: true,
            data: false,
            last: Instant::now(),
            first: true,
        }
    }

    fn due(&self) -> bool {
        self.input || (self.data && self.last.elapsed() >= DATA_FRAME)
    }

    /// When pending data may be drawn.
    fn wake_at(&self) -> Instant {
        self.last + DATA_FRAME
    }
}

fn draw_frame<B: Backend>(
    app: &mut App,
    terminal: &mut Terminal<B>,
    pacer: &mut Pacer,
    started: Instant,
) -> color_eyre::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let size = terminal.size()?;
    app.state.page_size = usize::from(size.height.saturating_sub(8)).max(1);
    app.state.now = unix_now();
    app.draw(terminal)?;
    pacer.input = false;
    pacer.data = false;
    pacer.last = Instant::now();
    if pacer.first {
        pacer.first = false;
        tracing::info!(
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "first frame drawn"
        );
    }
    Ok(())
}

/// Runs the TUI until the user quits or a signal arrives; the terminal is restored on every path.
pub async fn run(
    mut app: App,
    sources: Sources,
    interval: Duration,
    mouse: bool,
    started: Instant,
) -> color_eyre::Result<()> {
    let (gpu_tx, mut gpu_rx) = mpsc::channel::<GpuUpdate>(8);
    let (docker_tx, mut docker_rx) = mpsc::channel::<DockerUpdate>(64);
    let collector = collector::spawn(
        sources.open_gpus,
        Arc::clone(&sources.processes),
        interval,
        gpu_tx,
    );
    let (done_tx, mut done_rx) = mpsc::channel::<(u32, KillSignal, Result<(), String>)>(8);
    let (doctor_tx, mut doctor_rx) = mpsc::channel::<DoctorReport>(1);
    let effects = Effects {
        processes: Arc::clone(&sources.processes),
        signal_done: done_tx,
        docker: crate::docker::collector::spawn(sources.docker_host.clone(), docker_tx),
        docker_host: sources.docker_host.clone(),
        doctor_done: doctor_tx,
        data_dir: sources.data_dir.clone(),
    };
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut terminal = terminal::enter(mouse)?;
    let result = async {
        let mut events = EventStream::new();
        let docker_host = sources.docker_host.clone();
        let mut pacer = Pacer::new();
        loop {
            if pacer.due() {
                draw_frame(&mut app, &mut terminal, &mut pacer, started)?;
            }
            let wake = pacer.wake_at();
            tokio::select! {
                event = events.next() => match event {
                    Some(Ok(event)) => {
                        let size = terminal.size()?;
                        let (redraw, commands) = app.handle_event(&event, Rect::new(0, 0, size.width, size.height));
                        pacer.input |= redraw;
                        for c in commands {
                            effects.execute(c, &mut app.state);
                        }
                    }
                    Some(Err(e)) => return Err(e.into()),
                    None => break,
                },
                Some(update) = gpu_rx.recv() => {
                    app.state.apply_gpu(update);
                    pacer.data = true;
                }
                Some(update) = docker_rx.recv() => {
                    for c in app.state.apply_docker(update) {
                        effects.execute(c, &mut app.state);
                    }
                    pacer.data = true;
                }
                Some(report) = doctor_rx.recv() => {
                    app.state.apply_doctor(report);
                    pacer.input = true;
                }
                Some((pid, sig, result)) = done_rx.recv() => {
                    app.state.apply_signal_result(pid, sig, result);
                    pacer.input = true;
                }
                () = tokio::time::sleep_until(wake.into()), if pacer.data => {}
                _ = sigterm.recv() => { tracing::info!("SIGTERM: exiting"); break }
                _ = sighup.recv() => { tracing::info!("SIGHUP (terminal gone): exiting"); break }
                _ = sigint.recv() => break,
            }
            if let Some(launch) = app.state.pending_shell.take() {
                // The event stream reads the terminal on a thread of its own: it must be gone
                // while the shell owns the keyboard, and come back new afterwards.
                drop(events);
                terminal::suspend();
                let ctx = shell_run::ShellContext::from_state(&app.state, docker_host.clone());
                let (line, is_error) = shell_run::run(launch, ctx, &app.shell).await;
                terminal::resume(&mut terminal, mouse)?;
                events = EventStream::new();
                app.state.set_status(line, is_error);
                pacer.input = true;
            }
            if app.state.quit {
                break;
            }
        }
        Ok::<(), color_eyre::Report>(())
    }
    .await;
    terminal::restore();
    drop(collector);
    result
}
