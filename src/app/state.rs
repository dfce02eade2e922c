//! The single owner of what the TUI shows: GPU data, selections, overlays; changed only through `update`.

use crate::secrets::Secrets;

use super::action::{Action, Command, Tab};
use super::compat::CompatView;
use super::docker::DockerView;
use super::doctor::DoctorView;
use super::filter::ListFilter;
use super::processes::{ProcessListState, TermSent};
use super::pulls::PullPicker;
use super::runs::RunsView;
use super::shell_dialog::{ShellDialog, ShellLaunch};
use crate::config::{Config, GraphMetric};
use crate::gpu::collector::{CollectorCommand, GpuUpdate};
use crate::gpu::history::{capacity_for, GpuHistory};
use crate::gpu::process_watch::PROCESS_UTIL_EVERY;
use crate::gpu::{GpuError, GpuProcess, GpuSample, Inventory, SourceKind};
use crate::host::{KillSignal, ProcessTarget};
use crate::runs::slurm::SlurmDefaults;

/// Where the GPU data stands.
#[derive(Clone, Debug)]
pub enum GpuStatus {
    Loading,
    Failed(GpuError),
    Ready(Box<GpuData>),
}

/// GPU facts, the latest samples and their history.
#[derive(Clone, Debug)]
pub struct GpuData {
    pub inventory: Inventory,
    pub samples: Vec<GpuSample>,
    pub history: Vec<GpuHistory>,
}

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
    RunForm(super::run_form::RunForm),
}

/// What an action will do, asked before doing it.
#[derive(Clone, Debug, PartialEq)]
pub struct Confirmation {
    pub title: String,
    pub question: String,
    pub details: Vec<String>,
    pub command: Command,
}

pub use super::messages::StatusMessage;

/// Everything the renderers read.
#[derive(Clone, Debug)]
pub struct AppState {
    pub host: String,
    pub tab: Tab,
    pub gpu: GpuStatus,
    pub selected_gpu: usize,
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
    pub messages: super::messages::MessageLog,
    /// How far help or the messages view is scrolled, in lines.
    pub overlay_scroll: usize,
    /// The colour themes `T` cycles through, and the one in use.
    pub themes: super::themes::ThemeChoice,
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
            tab: Tab::Gpus,
            gpu: GpuStatus::Loading,
            selected_gpu: 0,
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
            pending_shell: None,
            now: 0,
            slurm: SlurmDefaults {
                backend: config.runs.backend,
                settings: config.slurm.settings(),
            },
            secrets: Secrets::hidden(&config.general.secret_names),
        }
    }

    pub fn data(&self) -> Option<&GpuData> {
        match &self.gpu {
            GpuStatus::Ready(d) => Some(d),
            _ => None,
        }
    }

    pub fn is_demo(&self) -> bool {
        self.data()
            .is_some_and(|d| d.inventory.system.source == SourceKind::Demo)
    }

    pub fn gpu_count(&self) -> usize {
        self.data().map_or(0, |d| d.inventory.gpus.len())
    }

    /// All processes on all GPUs as the processes tab lists them.
    pub fn visible_processes(&self) -> Vec<&GpuProcess> {
        match self.data() {
            Some(d) => self
                .processes
                .visible(d.samples.iter().flat_map(|s| s.processes.iter())),
            None => Vec::new(),
        }
    }

    /// The selected row of the processes list.
    pub fn selected_process_row(&self) -> Option<usize> {
        let pid = self.processes.selected_pid?;
        self.visible_processes().iter().position(|p| p.pid == pid)
    }

    /// Folds a collector update into the state.
    pub fn apply_gpu(&mut self, update: GpuUpdate) {
        match update {
            GpuUpdate::Ready(inventory) => {
                let n = inventory.gpus.len();
                self.gpu = GpuStatus::Ready(Box::new(GpuData {
                    inventory: *inventory,
                    samples: vec![GpuSample::default(); n],
                    history: (0..n)
                        .map(|_| GpuHistory::new(self.history_capacity))
                        .collect(),
                }));
                self.selected_gpu = self.selected_gpu.min(n.saturating_sub(1));
                self.refresh_compat();
            }
            GpuUpdate::Failed(e) => {
                self.gpu = GpuStatus::Failed(e);
                self.refresh_compat();
            }
            GpuUpdate::Sampled(samples) => {
                if let GpuStatus::Ready(data) = &mut self.gpu {
                    for ((gpu, sample), history) in data
                        .inventory
                        .gpus
                        .iter()
                        .zip(&samples)
                        .zip(data.history.iter_mut())
                    {
                        history.record(gpu, sample);
                    }
                    self.runs
                        .watch_after_end(self.now * 1000, &data.inventory.gpus, &samples);
                    self.terminated.forget_gone(&samples);
                    data.samples = samples;
                }
                self.keep_process_selection();
            }
        }
    }

    /// Records the outcome of a signal sent on the user's behalf.
    pub fn apply_signal_result(
        &mut self,
        target: ProcessTarget,
        signal: KillSignal,
        result: Result<(), String>,
    ) {
        let pid = target.pid;
        match result {
            Ok(()) => {
                if signal == KillSignal::Term {
                    self.terminated.mark(target);
                }
                let name = signal_name(signal);
                self.set_status(format!("sent {name} to process {pid}"), false);
            }
            Err(e) => self.set_status(e, true),
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
            Action::CycleGraph => self.graph = next_graph(self.graph),
            Action::TogglePower => self.show_power = !self.show_power,
            Action::ShowGpuProcesses => {
                self.processes.filter = ListFilter::with_text(format!("gpu:{}", self.selected_gpu));
                self.keep_process_selection();
                return self.show_tab(Tab::Processes);
            }
            Action::OpenProcess if self.tab == Tab::Processes => {
                self.processes.view_pid = self.processes.selected_pid;
            }
            // The view stays on its process: moving would select another behind it.
            Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom
            | Action::SelectRow(_)
                if self.processes.view_pid.is_some() && self.tab == Tab::Processes => {}
            Action::CloseView if self.tab == Tab::Processes => self.processes.view_pid = None,
            Action::CycleSort => self.processes.next_sort(),
            Action::ReverseSort => self.processes.descending = !self.processes.descending,
            Action::StartFilter
            | Action::FilterInput(_)
            | Action::FilterBackspace
            | Action::FilterDone
            | Action::FilterClear => {
                self.processes.filter.apply(&action);
            }
            Action::KillSelected => self.ask_to_kill(),
            Action::Up => self.move_selection(-1),
            Action::Down => self.move_selection(1),
            Action::PageUp => self.move_selection(-(self.page_size as isize)),
            Action::PageDown => self.move_selection(self.page_size as isize),
            Action::Top => self.move_selection(isize::MIN / 2),
            Action::Bottom => self.move_selection(isize::MAX / 2),
            Action::SelectRow(row) => self.select_row(row),
            Action::Confirm | Action::Cancel => self.status = None,
            // Container and image actions only mean something on their tabs.
            _ => {}
        }
        // Filtering or re-sorting may have hidden the selected process: select one that is shown.
        self.keep_process_selection();
        Vec::new()
    }

    fn show_tab(&mut self, tab: Tab) -> Vec<Command> {
        let left_runs = self.tab == Tab::Runs && tab != Tab::Runs;
        let entered_runs = self.tab != Tab::Runs && tab == Tab::Runs;
        let watch = self.watch_processes(tab);
        self.tab = tab;
        let mut commands: Vec<Command> = watch.into_iter().collect();
        commands.extend(match tab {
            Tab::Doctor => self.doctor_on_show(),
            Tab::Runs if entered_runs => self.runs_on_show(),
            _ if left_runs => self.runs_on_hide(),
            _ => Vec::new(),
        });
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

    fn ask_to_kill(&mut self) {
        if self.read_only {
            self.set_status("read-only mode: killing processes is disabled", true);
            return;
        }
        if let Some(pid) = self
            .processes
            .view_pid
            .filter(|_| self.tab == Tab::Processes)
        {
            // The view's process, never whichever row the list selected after it exited.
            if !self.visible_processes().iter().any(|p| p.pid == pid) {
                let why = format!("process {pid} has exited; nothing to kill (Esc: the list)");
                self.set_status(why, true);
                return;
            }
        }
        let target = match self.tab {
            Tab::Processes => self
                .selected_process_row()
                .and_then(|row| self.visible_processes().get(row).map(|p| (*p).clone())),
            _ => None,
        };
        let Some(p) = target else {
            self.set_status("select a process in the Processes tab first", true);
            return;
        };
        if p.identity.is_none() {
            // Without its start time a PID reused by another process could not be told apart.
            let why = format!(
                "process {}'s start time cannot be read; not signalling it",
                p.pid
            );
            self.set_status(why, true);
            return;
        }
        let signal = if self.terminated.contains(&p) {
            KillSignal::Kill
        } else {
            KillSignal::Term
        };
        let effect = match signal {
            KillSignal::Term => "SIGTERM asks it to stop; it may clean up first.",
            KillSignal::Kill => "SIGKILL ends it at once; unsaved work is lost.",
        };
        self.overlay = Overlay::Confirm(Confirmation {
            title: "Kill process".into(),
            question: format!("Send {} to process {}?", signal_name(signal), p.pid),
            details: vec![
                p.command.unwrap_or_else(|| "unknown command".into()),
                effect.into(),
            ],
            command: Command::SignalProcess {
                pid: p.pid,
                start_ticks: p.identity.map(|i| i.start_ticks),
                signal,
            },
        });
    }

    fn move_selection(&mut self, delta: isize) {
        match self.tab {
            Tab::Gpus
            | Tab::Topology
            | Tab::Containers
            | Tab::Images
            | Tab::Compat
            | Tab::Doctor
            | Tab::Runs => {
                let n = self.gpu_count();
                self.selected_gpu = offset(self.selected_gpu, delta, n);
            }
            Tab::Processes => {
                let n = self.visible_processes().len();
                let current = self.selected_process_row().unwrap_or(0);
                let row = if self.processes.selected_pid.is_none() && delta > 0 {
                    0
                } else {
                    offset(current, delta, n)
                };
                self.select_row(row);
            }
        }
    }

    fn select_row(&mut self, row: usize) {
        match self.tab {
            Tab::Gpus
            | Tab::Topology
            | Tab::Containers
            | Tab::Images
            | Tab::Compat
            | Tab::Doctor
            | Tab::Runs => {
                if row < self.gpu_count() {
                    self.selected_gpu = row;
                }
            }
            Tab::Processes => {
                if let Some(p) = self.visible_processes().get(row) {
                    self.processes.selected_pid = Some(p.pid);
                }
            }
        }
    }

    /// After new samples, keep the selected PID if it still runs, else the first row.
    fn keep_process_selection(&mut self) {
        let visible = self.visible_processes();
        let still_there = self
            .processes
            .selected_pid
            .is_some_and(|pid| visible.iter().any(|p| p.pid == pid));
        if !still_there {
            self.processes.selected_pid = visible.first().map(|p| p.pid);
        }
    }
}

fn offset(current: usize, delta: isize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let target = current as isize + delta;
    target.clamp(0, len as isize - 1) as usize
}

fn next_graph(g: GraphMetric) -> GraphMetric {
    match g {
        GraphMetric::Utilization => GraphMetric::Memory,
        GraphMetric::Memory => GraphMetric::Power,
        GraphMetric::Power => GraphMetric::Utilization,
    }
}

pub fn signal_name(signal: KillSignal) -> &'static str {
    match signal {
        KillSignal::Term => "SIGTERM",
        KillSignal::Kill => "SIGKILL",
    }
}
