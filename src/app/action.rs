//! What the user can ask for (actions) and what the app asks of the outside world in return (commands).

use crate::host::KillSignal;

/// The tabs, in tab-bar order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Gpus,
    Processes,
    Topology,
}

impl Tab {
    pub const ALL: [Tab; 3] = [Tab::Gpus, Tab::Processes, Tab::Topology];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Gpus => "GPUs",
            Tab::Processes => "Processes",
            Tab::Topology => "Topology",
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
}

/// Work the app hands to the outside world; the result comes back as an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    SignalProcess { pid: u32, signal: KillSignal },
}
