//! What the user can ask for (actions) and what the app asks of the outside world in return (commands).

use crate::host::{KillSignal, ProcessTarget};
use crate::runs::watch::RunsCommand;

/// The tabs, in tab-bar order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Gpus,
    Processes,
    Topology,
    Containers,
    Images,
    Compat,
    Doctor,
    Runs,
    Services,
}

impl Tab {
    pub const ALL: [Tab; 9] = [
        Tab::Gpus,
        Tab::Processes,
        Tab::Topology,
        Tab::Containers,
        Tab::Images,
        Tab::Compat,
        Tab::Doctor,
        Tab::Runs,
        Tab::Services,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Gpus => "GPUs",
            Tab::Processes => "Processes",
            Tab::Topology => "Topology",
            Tab::Containers => "Containers",
            Tab::Images => "Images",
            Tab::Compat => "Compat",
            Tab::Doctor => "Doctor",
            Tab::Runs => "Runs",
            Tab::Services => "Services",
        }
    }

    /// The title in a narrow terminal (80 columns hold all nine).
    pub fn short_title(self) -> &'static str {
        match self {
            Tab::Processes => "Procs",
            Tab::Topology => "Topo",
            Tab::Containers => "Cont",
            Tab::Services => "Svc",
            other => other.title(),
        }
    }

    pub fn position(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
}

/// A user intent, independent of the key or click that produced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Quit,
    NextTab,
    PrevTab,
    SelectTab(Tab),
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Select a row of the current list (from a mouse click).
    SelectRow(usize),
    ToggleHelp,
    /// The recent messages, each whole.
    ShowMessages,
    /// The next colour theme.
    CycleTheme,
    /// Hand the terminal back and stop, as Ctrl-Z does in other programs (`fg` resumes).
    Suspend,
    CycleGraph,
    TogglePower,
    ShowGpuProcesses,
    CycleSort,
    ReverseSort,
    StartFilter,
    FilterInput(char),
    FilterBackspace,
    FilterDone,
    FilterClear,
    KillSelected,
    /// The selected process's own view: command line, start, CPU, memory, GPU share.
    OpenProcess,
    Confirm,
    Cancel,
    StartContainer,
    StopContainer,
    RestartContainer,
    RemoveSelected,
    OpenLogs,
    OpenInspect,
    /// Leave the logs or inspect view.
    CloseView,
    ToggleFollow,
    NextMatch,
    SaveLogs,
    OpenPullPicker,
    /// Select the next image in the Compatibility tab that will not run here (wrapping).
    NextWontRun,
    /// Select the previous image in the Compatibility tab that will not run here (wrapping).
    PrevWontRun,
    /// Pull the image selected in the Compatibility tab.
    PullSelected,
    /// Run the doctor's checks again.
    RunDoctor,
    /// Choose GPUs for a shell in the selected image.
    OpenShell,
    /// Back into the selected kept shell container.
    ReenterShell,
    CancelPull,
    /// Pull again the newest pull the Docker Engine cut by going away.
    RetryPull,
    /// Stop the selected training run (asks first).
    StopRun,
    /// Start the selected run again with its spec (asks first).
    RerunRun,
    /// Kill the processes still holding the GPUs of a run that ended (asks first).
    KillLeftovers,
    /// A form for a new training run.
    NewRun,
    /// Put the selected service's URL (with its token) on the terminal's clipboard.
    CopyUrl,
    /// Put the selected service's SSH line on the terminal's clipboard.
    CopySsh,
    /// Put the selected GPU's UUID on the terminal's clipboard.
    CopyGpuUuid,
    /// Scroll the selected doctor check's detail down or up a line.
    DetailDown,
    DetailUp,
    /// Show the previous or next rank's logs of the selected run.
    PrevRank,
    NextRank,
}

/// Work the app hands to the outside world; the result comes back as an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Signal one process; `start_ticks` is its start time when it was chosen, checked again
    /// right before the signal.
    SignalProcess {
        pid: u32,
        start_ticks: Option<u64>,
        signal: KillSignal,
    },
    Docker(DockerCommand),
    /// Work for the GPU collector (what to read besides the GPUs themselves).
    Gpu(crate::gpu::collector::CollectorCommand),
    /// Write the open logs view's lines to a file.
    SaveLogs {
        name: String,
        text: String,
    },
    /// Diagnose the host (the doctor's checks) in the background.
    RunDoctor,
    /// Work for the runs collector.
    Runs(RunsCommand),
    /// Stop a run (its supervisor and ranks) in the background.
    StopRun {
        id: String,
    },
    /// Start a new run from the form's spec.
    StartRun(Box<crate::runs::RunSpec>),
    /// Start a run again from its spec.
    RerunRun {
        id: String,
    },
    /// Stop a service's run, then start it again from its spec, in the background.
    RestartService {
        id: String,
    },
    /// Start a service from the Services tab's form, as `gpudeck notebook` would.
    StartService(Box<crate::services::ServiceRequest>),
    /// Work for the services collector.
    Services(crate::services::ServicesCommand),
    /// Put `text` on the clipboard through the terminal (OSC 52); `what` names it in the
    /// status line.
    Copy {
        what: String,
        text: String,
    },
    /// Signal several processes at once (what a run left on its GPUs).
    SignalProcesses {
        targets: Vec<ProcessTarget>,
        signal: KillSignal,
    },
}

/// Work for the Docker collector (its own type, named here with the other commands).
pub use crate::docker::update::DockerCommand;
