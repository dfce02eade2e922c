//! The single owner of what the TUI shows: GPU data, selections, overlays; changed only through `update`.

use crate::secrets::Secrets;

use super::action::{Action, Command, Tab};
use super::compat::CompatView;
use super::docker::DockerView;
use super::doctor::DoctorView;
use super::messages::MessageLog;
use super::processes::{ProcessListState, TermSent};
use super::pulls::PullPicker;
use super::run_form::RunForm;
use super::runs::RunsView;
use super::service_form::ServiceForm;
use super::services::ServicesView;
use super::shell_dialog::{ShellDialog, ShellLaunch};
use super::themes::ThemeChoice;
use crate::config::{Config, GraphMetric};
use crate::gpu::collector::CollectorCommand;
use crate::gpu::history::capacity_for;
use crate::gpu::process_watch::PROCESS_UTIL_EVERY;
use crate::runs::SlurmDefaults;

pub use super::gpus::{GpuData, GpuStatus};
pub use super::messages::StatusMessage;

/// A modal on top of the tabs.
#[derive(Clone, Debug, PartialEq)]
pub enum Overlay {
    None,
    Help,
    /// The recent messages, each whole, newest first.
    Messages,
    /// A yes/no question; `y` sends the command.
    Confirm(Confirmation),
    /// The image picker of the Images tab.
    Pull(PullPicker),
    /// GPUs and options for a shell in the selected image.
    Shell(ShellDialog),
    /// A new training run's spec, field by field.
    RunForm(RunForm),
    /// A notebook to start: where and on which GPUs.
    ServiceForm(ServiceForm),
}

/// What an action will do, asked before doing it.
#[derive(Clone, Debug, PartialEq)]
pub struct Confirmation {
    pub title: String,
    pub question: String,
    pub details: Vec<String>,
    pub command: Command,
}

/// Everything the renderers read.
#[derive(Clone, Debug)]
pub struct AppState {
    pub host: String,
    /// What each Xid means and what to do, for the GPUs tab (built in, with the user's files).
    pub xid_catalog: crate::health::XidCatalog,
    pub tab: Tab,
    pub gpu: GpuStatus,
    pub selected_gpu: usize,
    /// How far the Topology tab's links pane is scrolled, in peers (`J`/`K`); back to the
    /// first when another GPU is selected.
    pub links_scroll: usize,
    pub graph: GraphMetric,
    pub show_power: bool,
    pub compact_threshold: usize,
    pub history_capacity: usize,
    pub refresh_ms: u64,
    pub processes: ProcessListState,
    pub overlay: Overlay,
    /// The latest message, shown in the footer until it times out or an action clears it.
    pub status: Option<StatusMessage>,
    /// The recent messages, for the messages view.
    pub messages: MessageLog,
    /// How far help or the messages view is scrolled, in lines.
    pub overlay_scroll: usize,
    /// The colour themes `T` cycles through, and the one in use.
    pub themes: ThemeChoice,
    /// Set by Ctrl-Z: the run loop hands the terminal back and stops the process.
    pub suspend: bool,
    pub read_only: bool,
    pub quit: bool,
    /// Processes already sent SIGTERM: the next kill on them offers SIGKILL.
    pub terminated: TermSent,
    /// Rows a page-up/down moves; the draw code knows the real height, this is close enough.
    pub page_size: usize,
    pub docker: DockerView,
    pub compat: CompatView,
    pub doctor: DoctorView,
    pub runs: RunsView,
    pub services: ServicesView,
    /// `[notebook] idle_alert`: a notebook idle this long while holding GPUs is flagged.
    pub idle_alert: Option<std::time::Duration>,
    /// `[notebook] idle_stop`: what a notebook started from here shuts idle kernels down after.
    pub idle_stop: Option<std::time::Duration>,
    /// A shell to start once the TUI has stepped aside (the run loop takes it).
    pub pending_shell: Option<ShellLaunch>,
    /// Unix seconds at the last tick, for ages and uptimes (the renderers never read the clock).
    pub now: i64,
    /// The config's backend and `[slurm]` settings, which the new-run form starts from.
    pub slurm: SlurmDefaults,
    /// Which environment values the inspect view hides (`--show-secrets`: none).
    pub secrets: Secrets,
}

impl AppState {
    pub fn new(config: &Config, host: String, read_only: bool) -> Self {
        Self {
            host,
            xid_catalog: crate::health::XidCatalog::builtin(),
            tab: Tab::Gpus,
            gpu: GpuStatus::Loading,
            selected_gpu: 0,
            links_scroll: 0,
            graph: config.gpu.graph,
            show_power: false,
            compact_threshold: config.gpu.compact_threshold,
            history_capacity: capacity_for(config.general.history_secs, config.general.refresh_ms),
            refresh_ms: config.general.refresh_ms,
            processes: ProcessListState::new(
                config.processes.sort,
                config.processes.sort_descending,
            ),
            overlay: Overlay::None,
            status: None,
            messages: Default::default(),
            overlay_scroll: 0,
            themes: Default::default(),
            suspend: false,
            read_only: read_only || config.general.read_only,
            quit: false,
            terminated: TermSent::default(),
            page_size: 10,
            docker: DockerView::new(String::new()),
            compat: CompatView::default(),
            doctor: DoctorView::default(),
            runs: RunsView::default(),
            services: ServicesView::default(),
            idle_alert: config.notebook.idle_alert.0,
            idle_stop: config.notebook.idle_stop.0,
            pending_shell: None,
            now: 0,
            slurm: SlurmDefaults {
                backend: config.runs.backend,
                settings: config.slurm.settings(),
            },
            secrets: Secrets::hidden(&config.general.secret_names),
        }
    }

    /// Applies one user action; returns the commands it implies for the outside world.
    pub fn update(&mut self, action: Action) -> Vec<Command> {
        let mut commands = self.apply_action(action);
        // Any action may have changed which containers are on screen.
        commands.extend(self.watch_stats());
        commands
    }

    fn apply_action(&mut self, action: Action) -> Vec<Command> {
        if action == Action::Suspend {
            // From any view or dialog: it comes back as it was.
            self.suspend = true;
            return Vec::new();
        }
        if self.overlay != Overlay::None {
            return self.update_overlay(action);
        }
        let global = matches!(
            action,
            Action::Quit
                | Action::NextTab
                | Action::PrevTab
                | Action::SelectTab(_)
                | Action::ToggleHelp
                | Action::ShowMessages
                | Action::CycleTheme
        );
        if !global {
            if let Some(commands) = self.update_list_filter(&action) {
                return commands;
            }
        }
        let in_docker = matches!(self.tab, Tab::Containers | Tab::Images);
        if in_docker && !global {
            return self.update_docker(action);
        }
        if self.tab == Tab::Compat && !global {
            return self.update_compat(action);
        }
        if self.tab == Tab::Doctor && !global {
            return self.update_doctor(action);
        }
        if self.tab == Tab::Runs && !global {
            return self.update_runs(action);
        }
        if self.tab == Tab::Services && !global {
            return self.update_services(action);
        }
        match action {
            Action::Quit => self.quit = true,
            Action::NextTab => {
                return self.show_tab(Tab::ALL[(self.tab.position() + 1) % Tab::ALL.len()])
            }
            Action::PrevTab => {
                let n = Tab::ALL.len();
                return self.show_tab(Tab::ALL[(self.tab.position() + n - 1) % n]);
            }
            Action::SelectTab(tab) => return self.show_tab(tab),
            Action::ToggleHelp => {
                self.overlay_scroll = 0;
                self.overlay = Overlay::Help;
            }
            Action::ShowMessages => self.open_messages(),
            Action::CycleTheme => self.cycle_theme(),
            Action::CycleGraph | Action::TogglePower | Action::ShowGpuProcesses => {
                return self.update_gpus(action)
            }
            _ if self.tab == Tab::Processes => return self.update_processes(action),
            _ => return self.update_gpus(action),
        }
        // As after every key outside the dialogs: a shown process stays selected.
        self.keep_process_selection();
        Vec::new()
    }

    pub(super) fn show_tab(&mut self, tab: Tab) -> Vec<Command> {
        let left_runs = self.tab == Tab::Runs && tab != Tab::Runs;
        let entered_runs = self.tab != Tab::Runs && tab == Tab::Runs;
        let left_services = self.tab == Tab::Services && tab != Tab::Services;
        let entered_services = self.tab != Tab::Services && tab == Tab::Services;
        let watch = self.watch_processes(tab);
        self.tab = tab;
        let mut commands: Vec<Command> = watch.into_iter().collect();
        commands.extend(match tab {
            Tab::Doctor => self.doctor_on_show(),
            Tab::Runs if entered_runs => self.runs_on_show(),
            _ if left_runs => self.runs_on_hide(),
            _ => Vec::new(),
        });
        if left_services {
            commands.extend(self.services_on_hide());
        }
        if entered_services {
            commands.extend(self.services_on_show());
        }
        commands
    }

    /// Per-process GPU shares cost milliseconds per GPU: the collector reads them only while
    /// the Processes tab is on screen.
    fn watch_processes(&self, next: Tab) -> Option<Command> {
        let every = match (self.tab == Tab::Processes, next == Tab::Processes) {
            (false, true) => Some(PROCESS_UTIL_EVERY),
            (true, false) => None,
            _ => return None,
        };
        Some(Command::Gpu(CollectorCommand::WatchProcesses(every)))
    }

    fn update_overlay(&mut self, action: Action) -> Vec<Command> {
        if matches!(self.overlay, Overlay::Pull(_)) {
            return self.update_picker(action);
        }
        if matches!(self.overlay, Overlay::Shell(_)) {
            return self.update_shell_dialog(action);
        }
        if matches!(self.overlay, Overlay::RunForm(_)) {
            return self.update_run_form(action);
        }
        if matches!(self.overlay, Overlay::ServiceForm(_)) {
            return self.update_service_form(action);
        }
        if matches!(self.overlay, Overlay::Help | Overlay::Messages) && self.scroll_overlay(&action)
        {
            return Vec::new();
        }
        match (&self.overlay, action) {
            (_, Action::Quit) => self.quit = true,
            (Overlay::Confirm(c), Action::Confirm) => {
                let command = c.command.clone();
                self.overlay = Overlay::None;
                return vec![command];
            }
            _ => self.overlay = Overlay::None,
        }
        Vec::new()
    }

    /// Switches to the next theme and says which it is and how to keep it.
    fn cycle_theme(&mut self) {
        match self.themes.advance() {
            Ok(line) => self.set_status(line, false),
            Err(why) => self.set_status(why, true),
        }
    }
}
