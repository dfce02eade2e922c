//! The TUI: the event loop that feeds keys, mouse, GPU updates and signals into the state and draws it.

pub mod action;
mod bindings;
pub mod compat;
mod compat_actions;
mod cursor;
pub mod docker;
mod docker_actions;
pub mod doctor;
mod doctor_actions;
mod effects;
pub use effects::DoctorJob;
pub mod event;
pub mod filter;
mod filter_actions;
pub mod gpus;
mod gpus_actions;
#[cfg(test)]
mod handle_tests {
    //! The loop's one event type fed straight into the app: what each event changes, which commands
    //! it asks for and when it is drawn.

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::action::Command;
    use super::event::{Event, ExitSignal, Redraw, RunDone, SignalResult};
    use super::state::GpuStatus;
    use super::App;
    use crate::config::{Config, Theme};
    use crate::gpu::collector::GpuUpdate;
    use crate::gpu::GpuError;
    use crate::host::{KillSignal, ProcessTarget};
    use crate::runs::watch::RunsCommand;
    use ratatui::layout::Rect;

    fn app() -> App {
        let theme = Theme::builtin("dark").expect("the dark theme is built in");
        App::new(&Config::default(), theme, "testhost".into(), false)
    }

    const AREA: Rect = Rect {
        x: 0,
        y: 0,
        width: 100,
        height: 30,
    };

    #[test]
    fn a_key_is_drawn_at_once_and_q_quits() {
        let mut app = app();
        let q = crossterm::event::Event::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE));
        let handled = app.handle(Event::Input(q), AREA, None);
        assert_eq!(handled.redraw, Redraw::Now);
        assert!(handled.commands.is_empty());
        assert!(app.state.quit);
        assert!(!handled.exit);
    }

    #[test]
    fn collector_updates_wait_for_the_data_frame() {
        let mut app = app();
        let handled = app.handle(
            Event::Gpu(GpuUpdate::Failed(GpuError::NoGpus { system: None })),
            AREA,
            None,
        );
        assert_eq!(handled.redraw, Redraw::Data);
        assert!(matches!(
            app.state.gpu,
            GpuStatus::Failed(GpuError::NoGpus { .. })
        ));
    }

    #[test]
    fn a_finished_run_start_is_shown_selected_and_the_list_refreshed() {
        let mut app = app();
        let done = RunDone {
            line: "started r1 (running)".into(),
            is_error: false,
            new_run: Some("r1".into()),
        };
        let handled = app.handle(Event::RunDone(done), AREA, None);
        assert_eq!(
            handled.commands,
            vec![
                Command::Runs(RunsCommand::Refresh),
                Command::Services(crate::services::ServicesCommand::Look)
            ]
        );
        assert_eq!(handled.redraw, Redraw::Now);
        assert_eq!(app.state.runs.select_when_listed.as_deref(), Some("r1"));
        let status = app.state.status.as_ref().expect("a status line");
        assert_eq!(status.text, "started r1 (running)");
        assert!(!status.is_error);
    }

    #[test]
    fn a_sent_signal_is_reported_and_a_failed_one_is_an_error() {
        let mut app = app();
        let target = ProcessTarget {
            pid: 42,
            start_ticks: Some(7),
        };
        let sent = SignalResult {
            target,
            signal: KillSignal::Term,
            result: Ok(()),
        };
        let handled = app.handle(Event::Signalled(sent), AREA, None);
        assert_eq!(handled.redraw, Redraw::Now);
        let status = app.state.status.as_ref().expect("a status line");
        assert_eq!(status.text, "sent SIGTERM to process 42");
        let failed = SignalResult {
            target,
            signal: KillSignal::Kill,
            result: Err("no such process".into()),
        };
        app.handle(Event::Signalled(failed), AREA, None);
        let status = app.state.status.as_ref().expect("a status line");
        assert!(status.is_error);
        assert_eq!(status.text, "no such process");
    }

    #[test]
    fn every_exit_signal_ends_the_loop() {
        for signal in [
            ExitSignal::Terminate,
            ExitSignal::Hangup,
            ExitSignal::Interrupt,
        ] {
            let handled = app().handle(Event::Exit(signal), AREA, None);
            assert!(handled.exit);
            assert!(handled.commands.is_empty());
        }
    }
}
pub mod keymap;
pub mod logs_view;
pub mod logs_view_actions;
pub mod messages;
mod messages_actions;
pub mod processes;
mod processes_actions;
pub mod pulls;
mod pulls_actions;
pub mod run_form;
mod run_form_actions;
pub mod runs;
mod runs_actions;
mod saved_logs;
pub mod service_form;
mod service_form_actions;
pub mod services;
mod services_actions;
pub mod shell_dialog;
mod shell_dialog_actions;
mod shell_run;
pub mod shown;
pub mod state;
pub mod terminal;
pub mod themes;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{EventStream, KeyEventKind, MouseButton, MouseEventKind};
use futures::StreamExt;
use ratatui::backend::Backend;
use ratatui::layout::Rect;
use ratatui::Terminal;
use tokio::sync::mpsc;

use crate::config::{Config, Theme};
use crate::docker::update::DockerUpdate;
use crate::gpu::collector::{self, GpuUpdate, Opener};
use crate::host::ProcessTable;
use crate::metrics::MetricsFeed;
use crate::runs::watch::{RunsCommand, RunsUpdate};
use crate::runs::RunStore;
use crate::services::{ServicesCommand, ServicesUpdate};
use action::{Action, Command};
use effects::{unix_now, Effects};
use event::{Event, ExitSignal, Handled, Redraw};
use keymap::Binding;
use state::AppState;

/// The app: state plus what it needs to act on it.
pub struct App {
    pub state: AppState,
    pub theme: Theme,
    pub keymap: Vec<Binding>,
    /// The `[shell]` settings, for shells opened from the dashboard.
    pub shell: crate::config::ShellConfig,
    /// What GPU data last put on screen, so an update that changes none of it costs no frame.
    shown: shown::ShownTracker,
}

impl App {
    pub fn new(config: &Config, theme: Theme, host: String, read_only: bool) -> Self {
        let mut state = AppState::new(config, host, read_only);
        state.themes = themes::ThemeChoice::new(Vec::new(), &config.general.theme, theme);
        Self {
            state,
            theme,
            keymap: keymap::bindings(),
            shell: config.shell.clone(),
            shown: shown::ShownTracker::default(),
        }
    }

    /// Folds one event into the state: the one place the loop's events are told apart. `area`
    /// is the screen that input lands on; `metrics` sees every GPU update.
    pub fn handle(
        &mut self,
        event: Event,
        area: Rect,
        metrics: Option<&mut MetricsFeed>,
    ) -> Handled {
        let mut handled = Handled::default();
        match event {
            Event::Input(input) => handled = self.handle_event(&input, area),
            Event::Gpu(update) => {
                if let Some(feed) = metrics {
                    feed.observe(&update);
                }
                self.state.apply_gpu(update);
                if self.shown.changed(&self.state, unix_now()) {
                    handled.redraw = Redraw::Data;
                }
            }
            Event::Docker(update) => {
                handled.commands = self.state.apply_docker(update);
                handled.redraw = Redraw::Data;
            }
            Event::Runs(update) => {
                handled.commands = self.state.apply_runs(update);
                handled.redraw = Redraw::Data;
            }
            Event::Services(update) => {
                self.state.apply_services(update);
                handled.redraw = Redraw::Data;
            }
            Event::RunDone(done) => {
                self.state.set_status(done.line, done.is_error);
                match self.state.tab {
                    action::Tab::Services => self.state.services.select_when_listed = done.new_run,
                    _ => self.state.runs.select_when_listed = done.new_run,
                }
                handled.commands = vec![
                    Command::Runs(RunsCommand::Refresh),
                    Command::Services(ServicesCommand::Look),
                ];
                handled.redraw = Redraw::Now;
            }
            Event::Doctor(report) => {
                self.state.apply_doctor(*report);
                handled.redraw = Redraw::Now;
            }
            Event::Signalled(sent) => {
                self.state
                    .apply_signal_result(sent.target, sent.signal, sent.result);
                handled.redraw = Redraw::Now;
            }
            Event::Exit(signal) => {
                match signal {
                    ExitSignal::Terminate => tracing::info!("SIGTERM: exiting"),
                    ExitSignal::Hangup => tracing::info!("SIGHUP (terminal gone): exiting"),
                    ExitSignal::Interrupt => {}
                }
                handled.exit = true;
            }
        }
        handled
    }

    /// Turns a terminal event into state changes; returns when to draw and any commands.
    pub fn handle_event(&mut self, event: &crossterm::event::Event, area: Rect) -> Handled {
        use crossterm::event::Event;
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
                _ => return Handled::default(),
            },
            Event::Resize(..) => return Handled::now(Vec::new()),
            _ => None,
        };
        match action {
            Some(a) => Handled::now(self.state.update(a)),
            None => Handled::default(),
        }
    }

    /// Draws one frame through ratatui's `Terminal`, which writes only the cells that changed.
    pub fn draw<B: Backend>(&mut self, terminal: &mut Terminal<B>) -> Result<(), B::Error> {
        let state = &mut self.state;
        let keymap = &self.keymap;
        let theme = *state.themes.current().unwrap_or(&self.theme);
        terminal.draw(|frame| {
            let area = frame.area();
            let buf = frame.buffer_mut();
            // End (in help or the messages view) asks for the last page; keep the real one, so
            // that the next ↑ moves at once.
            state.overlay_scroll = state
                .overlay_scroll
                .min(crate::ui::overlay_scroll_limit(area, state, keymap));
            // The same for the Doctor detail's and the Topology links' `J` (only while scrolled).
            if state.doctor.detail_scroll > 0 {
                let limit = crate::ui::doctor_detail_scroll_limit(area, state);
                state.doctor.detail_scroll = state.doctor.detail_scroll.min(limit);
            }
            if state.links_scroll > 0 {
                let limit = crate::ui::links_scroll_limit(area, state);
                state.links_scroll = state.links_scroll.min(limit);
            }
            crate::ui::render(area, buf, state, &theme, keymap);
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
    /// gpudeck's private state directory: what a service started from here may make there (a
    /// host Triton's backend directory).
    pub state_dir: PathBuf,
    /// The GPU source as a run started from the dashboard records it for its supervisor.
    pub gpu_choice: crate::gpu::GpuSourceChoice,
    /// What a container run started from the dashboard (`R` on one) needs.
    pub container: crate::runs::ContainerSetup,
    /// The backend and Slurm settings a run started from the dashboard gets from the config.
    pub slurm: crate::runs::SlurmDefaults,
    /// Serve Prometheus metrics here while the dashboard runs (`[metrics] listen`, with
    /// `[metrics] web_config`).
    pub metrics_listen: Option<crate::metrics::feed::Endpoint>,
}

/// The metrics endpoint of `[metrics] listen`; a failure to start it is shown, not fatal, and a
/// web configuration that cannot be used means no endpoint rather than one without its TLS.
async fn start_metrics(
    endpoint: Option<crate::metrics::feed::Endpoint>,
    store: RunStore,
    state: &mut state::AppState,
) -> Option<MetricsFeed> {
    let endpoint = endpoint?;
    match MetricsFeed::start(&endpoint, store).await {
        Ok(feed) => {
            tracing::info!(addr = %feed.addr(), scheme = feed.scheme(), "serving Prometheus metrics");
            if let Some(warning) = endpoint.warning() {
                tracing::warn!("{warning}");
                state.set_status(warning, true);
            }
            Some(feed)
        }
        Err(e) => {
            tracing::warn!("{e}");
            state.set_status(e.to_string(), true);
            None
        }
    }
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
    app.state.stamp_messages(unix_now());
    app.draw(terminal)?;
    pacer.input = false;
    pacer.data = false;
    pacer.last = Instant::now();
    // For benchmarks that count frames (GPUDECK_LOG=gpudeck=trace); free when not enabled.
    tracing::trace!("frame drawn");
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
    // The form starts from what a start from here gets: the same defaults as the effects.
    app.state.slurm = sources.slurm.clone();
    // Everything the loop handles comes through here; each collector keeps its own channel,
    // forwarded into this one.
    let (events_tx, mut events_rx) = mpsc::channel::<Event>(64);
    let (gpu_tx, gpu_rx) = mpsc::channel::<GpuUpdate>(8);
    let (docker_tx, docker_rx) = mpsc::channel::<DockerUpdate>(64);
    let (runs_tx, runs_rx) = mpsc::channel::<RunsUpdate>(16);
    let (services_tx, services_rx) = mpsc::channel::<ServicesUpdate>(4);
    event::forward(gpu_rx, events_tx.clone(), Event::Gpu);
    event::forward(docker_rx, events_tx.clone(), Event::Docker);
    event::forward(runs_rx, events_tx.clone(), Event::Runs);
    event::forward(services_rx, events_tx.clone(), Event::Services);
    // The health counters are served, not shown: read only when metrics are served.
    let serving = sources.metrics_listen.is_some();
    let collector = collector::spawn_reading_health(
        sources.open_gpus,
        Arc::clone(&sources.processes),
        interval,
        gpu_tx,
        serving,
    );
    let store = RunStore::new(&sources.data_dir);
    let mut metrics = start_metrics(sources.metrics_listen, store.clone(), &mut app.state).await;
    if serving && metrics.is_none() {
        collector.send(collector::CollectorCommand::ReadHealth(false));
    }
    let effects = Effects {
        gpu: collector,
        processes: Arc::clone(&sources.processes),
        events: events_tx.clone(),
        docker: crate::docker::collector::spawn(sources.docker_host.clone(), docker_tx),
        docker_host: sources.docker_host.clone(),
        data_dir: sources.data_dir.clone(),
        runs: crate::runs::watch::spawn(store.clone(), runs_tx, app.state.xid_catalog.clone()),
        mount_point: app.shell.mount_point.clone(),
        scratch: sources.state_dir.clone(),
        services: crate::services::collector::spawn(
            store.clone(),
            services_tx,
            app.state.idle_alert,
        ),
        store,
        gpu_choice: sources.gpu_choice.clone(),
        container: sources.container.clone(),
        slurm: sources.slurm.clone(),
    };
    event::forward_signals(events_tx)?;
    let mut terminal = terminal::enter(mouse)?;
    let result = async {
        let mut input = EventStream::new();
        let docker_host = sources.docker_host.clone();
        let mut pacer = Pacer::new();
        loop {
            if pacer.due() {
                draw_frame(&mut app, &mut terminal, &mut pacer, started)?;
            }
            let wake = pacer.wake_at();
            let mut area = Rect::default();
            let event = tokio::select! {
                read = input.next() => match read {
                    Some(Ok(read)) => {
                        let size = terminal.size()?;
                        area = Rect::new(0, 0, size.width, size.height);
                        Event::Input(read)
                    }
                    Some(Err(e)) => return Err(e.into()),
                    None => break,
                },
                Some(event) = events_rx.recv() => event,
                // Pending data is due: the next turn draws it.
                () = tokio::time::sleep_until(wake.into()), if pacer.data => continue,
            };
            let handled = app.handle(event, area, metrics.as_mut());
            match handled.redraw {
                Redraw::Now => pacer.input = true,
                Redraw::Data => pacer.data = true,
                Redraw::No => {}
            }
            for c in handled.commands {
                effects.execute(c, &mut app.state);
            }
            if handled.exit {
                break;
            }
            if std::mem::take(&mut app.state.suspend) {
                // As for a shell: the event stream's reader thread must not hold the terminal.
                drop(input);
                terminal::stop_until_continued();
                terminal::resume(&mut terminal, mouse)?;
                input = EventStream::new();
                pacer.input = true;
            }
            if let Some(launch) = app.state.pending_shell.take() {
                // The event stream reads the terminal on a thread of its own: it must be gone
                // while the shell owns the keyboard, and come back new afterwards.
                drop(input);
                terminal::suspend();
                let ctx = shell_run::ShellContext::from_state(
                    &app.state,
                    docker_host.clone(),
                    Some(effects.store.claims()),
                );
                let ended = shell_run::run(launch, ctx, &app.shell).await;
                terminal::resume(&mut terminal, mouse)?;
                input = EventStream::new();
                app.state.set_status(ended.text, ended.is_error);
                pacer.input = true;
            }
            if app.state.quit {
                break;
            }
        }
        Ok::<(), color_eyre::Report>(())
    }
    .await;
    terminal::leave(terminal);
    drop(effects);
    result
}
