//! What the user can ask for (actions) and what the app asks of the outside world in return (commands).

use crate::host::KillSignal;

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
}

impl Tab {
    pub const ALL: [Tab; 7] = [
        Tab::Gpus,
        Tab::Processes,
        Tab::Topology,
        Tab::Containers,
        Tab::Images,
        Tab::Compat,
        Tab::Doctor,
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
        }
    }

    /// The title in a narrow terminal (80 columns hold all seven).
    pub fn short_title(self) -> &'static str {
        match self {
            Tab::Processes => "Procs",
            Tab::Topology => "Topo",
            Tab::Containers => "Cont",
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
    /// Pull the image selected in the Compatibility tab.
    PullSelected,
    /// Run the doctor's checks again.
    RunDoctor,
    /// Choose GPUs for a shell in the selected image.
    OpenShell,
    /// Back into the selected kept shell container.
    ReenterShell,
    CancelPull,
}

/// Work the app hands to the outside world; the result comes back as an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    SignalProcess {
        pid: u32,
        signal: KillSignal,
    },
    Docker(DockerCommand),
    /// Write the open logs view's lines to a file.
    SaveLogs {
        name: String,
        text: String,
    },
    /// Diagnose the host (the doctor's checks) in the background.
    RunDoctor,
}

/// Work for the Docker collector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DockerCommand {
    Start(String),
    Stop(String),
    Restart(String),
    RemoveContainer(String),
    RemoveImage(String),
    OpenLogs(String),
    CloseLogs,
    Inspect(String),
    /// Stream stats for these running containers only (the ones on screen).
    WatchStats(Vec<String>),
    /// Pull an image (a validated reference).
    Pull(String),
    CancelPull(u64),
}
