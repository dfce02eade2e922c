//! The keymap as tables, one line per binding: the key, where it applies, what it does and the
//! words help and the footer show; and the keys of the dialogs, which take every key before the
//! tabs do. Keys are looked up and help is generated from these tables only.

use crossterm::event::KeyCode::{
    self, BackTab, Backspace, Char, Down, End, Enter, Esc, Home, PageDown, PageUp, Up, F,
};
use crossterm::event::KeyModifiers;

use super::action::{Action as A, Tab};

/// Where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Global,
    Tab(Tab),
    /// A logs view: a container's (Containers tab) or a run's (Runs tab).
    Logs,
    /// Only in a run's logs view: its ranks.
    RunLogs,
    /// The view of one process (Enter on the Processes tab).
    ProcessView,
}

/// One key binding.
#[derive(Clone, Debug)]
pub struct Binding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
    pub action: A,
    pub context: Context,
    /// The key as help shows it; one label may stand for several bindings (e.g. "↓/j").
    pub label: &'static str,
    pub description: &'static str,
    /// The footer's short wording, for the few keys worth a place there (it must fit in 80 columns).
    pub footer: Option<&'static str>,
}

const ALL: Context = Context::Global;
const GPUS: Context = Context::Tab(Tab::Gpus);
const PROCS: Context = Context::Tab(Tab::Processes);
const TOPO: Context = Context::Tab(Tab::Topology);
const CONTS: Context = Context::Tab(Tab::Containers);
const IMAGES: Context = Context::Tab(Tab::Images);
const COMPAT: Context = Context::Tab(Tab::Compat);
const DOCTOR: Context = Context::Tab(Tab::Doctor);
const RUNS: Context = Context::Tab(Tab::Runs);
const SVCS: Context = Context::Tab(Tab::Services);
const LOGS: Context = Context::Logs;
const RANKS: Context = Context::RunLogs;
const PROC: Context = Context::ProcessView;

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

const fn key(
    modifiers: KeyModifiers,
    code: KeyCode,
    context: Context,
    action: A,
    label: &'static str,
    description: &'static str,
    footer: Option<&'static str>,
) -> Binding {
    Binding {
        code,
        modifiers,
        action,
        context,
        label,
        description,
        footer,
    }
}

/// Every binding. Order matters: the first binding of a key active here wins, bindings sharing a
/// label are one help line (the first one's words), and help and the footer list them in order.
#[rustfmt::skip]
pub const KEYS: &[Binding] = &[
    //  mods   key            where    action                          label         help text                                              footer
    key(NONE,  Char('q'),     ALL,     A::Quit,                        "q",          "quit",                                                Some("quit")),
    key(CTRL,  Char('c'),     ALL,     A::Quit,                        "Ctrl-C",     "quit",                                                None),
    key(CTRL,  Char('z'),     ALL,     A::Suspend,                     "Ctrl-Z",     "suspend to the shell (fg resumes)",                   None),
    key(NONE,  Char('M'),     ALL,     A::ShowMessages,                "M",          "messages: the recent ones, each whole",               None),
    key(NONE,  Char('T'),     ALL,     A::CycleTheme,                  "T",          "switch to the next colour theme",                     None),
    key(NONE,  Char('?'),     ALL,     A::ToggleHelp,                  "?",          "help: all keys",                                      Some("help")),
    key(NONE,  KeyCode::Tab,  ALL,     A::NextTab,                     "Tab",        "next tab",                                            Some("tab")),
    key(NONE,  BackTab,       ALL,     A::PrevTab,                     "Shift-Tab",  "previous tab",                                        None),
    key(NONE,  Char('1'),     ALL,     A::SelectTab(Tab::Gpus),        "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('2'),     ALL,     A::SelectTab(Tab::Processes),   "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('3'),     ALL,     A::SelectTab(Tab::Topology),    "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('4'),     ALL,     A::SelectTab(Tab::Containers),  "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('5'),     ALL,     A::SelectTab(Tab::Images),      "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('6'),     ALL,     A::SelectTab(Tab::Compat),      "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('7'),     ALL,     A::SelectTab(Tab::Doctor),      "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('8'),     ALL,     A::SelectTab(Tab::Runs),        "1-9",        "go to a tab by number",                               None),
    key(NONE,  Char('9'),     ALL,     A::SelectTab(Tab::Services),    "1-9",        "go to a tab by number",                               None),
    key(NONE,  Up,            ALL,     A::Up,                          "↑/k",        "move up",                                             None),
    key(NONE,  Char('k'),     ALL,     A::Up,                          "↑/k",        "move up",                                             None),
    key(NONE,  Down,          ALL,     A::Down,                        "↓/j",        "move down",                                           None),
    key(NONE,  Char('j'),     ALL,     A::Down,                        "↓/j",        "move down",                                           None),
    key(NONE,  PageUp,        ALL,     A::PageUp,                      "PgUp/PgDn",  "move a page",                                         None),
    key(NONE,  PageDown,      ALL,     A::PageDown,                    "PgUp/PgDn",  "move a page",                                         None),
    key(NONE,  Home,          ALL,     A::Top,                         "Home/g",     "first row",                                           None),
    key(NONE,  Char('g'),     ALL,     A::Top,                         "Home/g",     "first row",                                           None),
    key(NONE,  End,           ALL,     A::Bottom,                      "End/G",      "last row",                                            None),
    key(NONE,  Char('G'),     ALL,     A::Bottom,                      "End/G",      "last row",                                            None),
    key(NONE,  Char('p'),     GPUS,    A::TogglePower,                 "p",          "show/hide the power graph",                           Some("power")),
    key(NONE,  Char('m'),     GPUS,    A::CycleGraph,                  "m",          "row graph: utilisation, memory, power",               Some("graph")),
    key(NONE,  Enter,         GPUS,    A::ShowGpuProcesses,            "Enter",      "processes of the selected GPU",                       Some("processes")),
    key(NONE,  Char('c'),     GPUS,    A::CopyGpuUuid,                 "c",          "copy the selected GPU's UUID to the clipboard (OSC 52)", Some("copy UUID")),
    key(NONE,  Char('J'),     TOPO,    A::DetailDown,                  "J/K",        "scroll the links pane down/up",                       Some("scroll links")),
    key(NONE,  Char('K'),     TOPO,    A::DetailUp,                    "J/K",        "scroll the links pane down/up",                       None),
    key(NONE,  Char('s'),     PROCS,   A::CycleSort,                   "s",          "sort by the next column",                             Some("sort")),
    key(NONE,  Char('r'),     PROCS,   A::ReverseSort,                 "r",          "reverse the sort order",                              Some("reverse")),
    key(NONE,  Char('/'),     PROCS,   A::StartFilter,                 "/",          "filter (text, or gpu:N)",                             Some("filter")),
    key(NONE,  Esc,           PROCS,   A::FilterClear,                 "Esc",        "clear the filter",                                    None),
    key(NONE,  Enter,         PROCS,   A::OpenProcess,                 "Enter",      "open the selected process's view",                    Some("details")),
    key(NONE,  Char('x'),     PROCS,   A::KillSelected,                "x/F9",       "kill: SIGTERM, again for SIGKILL",                    Some("kill")),
    key(NONE,  F(9),          PROCS,   A::KillSelected,                "x/F9",       "kill: SIGTERM, again for SIGKILL",                    None),
    key(NONE,  Esc,           PROC,    A::CloseView,                   "Esc",        "back to the process list",                            Some("back")),
    key(NONE,  Char('x'),     PROC,    A::KillSelected,                "x/F9",       "kill this process: SIGTERM, again for SIGKILL",       Some("kill")),
    key(NONE,  F(9),          PROC,    A::KillSelected,                "x/F9",       "kill this process: SIGTERM, again for SIGKILL",       None),
    key(NONE,  Enter,         CONTS,   A::OpenLogs,                    "Enter/l",    "logs of the selected container",                      Some("logs")),
    key(NONE,  Char('l'),     CONTS,   A::OpenLogs,                    "Enter/l",    "logs of the selected container",                      None),
    key(NONE,  Char('e'),     CONTS,   A::ReenterShell,                "e",          "enter a kept gpudeck shell",                          None),
    key(NONE,  Char('i'),     CONTS,   A::OpenInspect,                 "i",          "inspect: command, mounts, env, ports",                Some("inspect")),
    key(NONE,  Char('s'),     CONTS,   A::StartContainer,              "s",          "start the container",                                 Some("start")),
    key(NONE,  Char('t'),     CONTS,   A::StopContainer,               "t",          "stop the container (asks first)",                     Some("stop")),
    key(NONE,  Char('R'),     CONTS,   A::RestartContainer,            "R",          "restart the container (asks first)",                  None),
    key(NONE,  Char('d'),     CONTS,   A::RemoveSelected,              "d",          "remove the container (asks first)",                   Some("remove")),
    key(NONE,  Esc,           CONTS,   A::CloseView,                   "Esc",        "close the inspect view, or clear the filter",         None),
    key(NONE,  Char('d'),     IMAGES,  A::RemoveSelected,              "d",          "remove the image (asks first)",                       Some("remove")),
    key(NONE,  Char('r'),     DOCTOR,  A::RunDoctor,                   "r",          "diagnose again",                                      Some("again")),
    key(NONE,  Char('J'),     DOCTOR,  A::DetailDown,                  "J/K",        "scroll the selected check's detail down/up",          Some("scroll fix")),
    key(NONE,  Char('K'),     DOCTOR,  A::DetailUp,                    "J/K",        "scroll the selected check's detail down/up",          None),
    key(NONE,  Char('p'),     COMPAT,  A::PullSelected,                "p",          "pull the selected image (verdict shown first)",       Some("pull")),
    key(NONE,  Char('n'),     COMPAT,  A::NextWontRun,                 "n/N",        "next/previous image that will not run here",          Some("next ✗")),
    key(NONE,  Char('N'),     COMPAT,  A::PrevWontRun,                 "n/N",        "next/previous image that will not run here",          None),
    key(NONE,  Char('s'),     IMAGES,  A::OpenShell,                   "s",          "a shell in this image on chosen GPUs",                Some("shell")),
    key(NONE,  Char('p'),     IMAGES,  A::OpenPullPicker,              "p",          "pull an image: pick from the catalog or type any",    Some("pull")),
    key(NONE,  Char('c'),     IMAGES,  A::CancelPull,                  "c",          "cancel the newest running pull",                      Some("cancel pull")),
    key(NONE,  Char('r'),     IMAGES,  A::RetryPull,                   "r",          "retry the pull the Docker Engine cut",                None),
    key(NONE,  Char('f'),     LOGS,    A::ToggleFollow,                "f",          "follow new lines on/off",                             Some("follow")),
    key(NONE,  Char('/'),     LOGS,    A::StartFilter,                 "/",          "search",                                              Some("search")),
    key(NONE,  Char('n'),     LOGS,    A::NextMatch,                   "n",          "next (older) match",                                  Some("next")),
    key(NONE,  Char('w'),     LOGS,    A::SaveLogs,                    "w",          "save the lines to a file",                            Some("save")),
    key(NONE,  Esc,           LOGS,    A::CloseView,                   "Esc",        "close the logs",                                      Some("close")),
    key(NONE,  Enter,         RUNS,    A::OpenLogs,                    "Enter/l",    "the run's whole output (follow, search, save)",       Some("logs")),
    key(NONE,  Char('l'),     RUNS,    A::OpenLogs,                    "Enter/l",    "the run's whole output (follow, search, save)",       None),
    key(NONE,  Char('n'),     RUNS,    A::NewRun,                      "n",          "start a new run (command, GPUs, launcher)",           Some("new")),
    key(NONE,  Char('m'),     RUNS,    A::CycleGraph,                  "m",          "chart its GPUs' utilisation, memory or power",        None),
    key(NONE,  Char('x'),     RUNS,    A::StopRun,                     "x",          "stop: SIGINT, SIGTERM, SIGKILL (asks first)",         Some("stop")),
    key(NONE,  Char('R'),     RUNS,    A::RerunRun,                    "R",          "run again with the same spec (asks first)",           Some("re-run")),
    key(NONE,  Char('K'),     RUNS,    A::KillLeftovers,               "K",          "kill what still holds its GPUs (asks first)",         None),
    key(NONE,  Char('['),     RUNS,    A::PrevRank,                    "[/]",        "previous/next rank's output",                         Some("rank")),
    key(NONE,  Char(']'),     RUNS,    A::NextRank,                    "[/]",        "previous/next rank's output",                         None),
    key(NONE,  Char('['),     RANKS,   A::PrevRank,                    "[/]",        "previous/next rank's output",                         Some("rank")),
    key(NONE,  Char(']'),     RANKS,   A::NextRank,                    "[/]",        "previous/next rank's output",                         None),
    key(NONE,  Enter,         SVCS,    A::OpenLogs,                    "Enter/l",    "the service's output (follow, search, save)",         Some("logs")),
    key(NONE,  Char('l'),     SVCS,    A::OpenLogs,                    "Enter/l",    "the service's output (follow, search, save)",         None),
    key(NONE,  Char('n'),     SVCS,    A::NewRun,                      "n",          "start a notebook: here or in an image, on chosen GPUs", Some("new")),
    key(NONE,  Char('c'),     SVCS,    A::CopyUrl,                     "c",          "copy its URL to the clipboard (OSC 52)",              Some("copy URL")),
    key(NONE,  Char('s'),     SVCS,    A::CopySsh,                     "s",          "copy its SSH line to the clipboard (OSC 52)",         None),
    key(NONE,  Char('x'),     SVCS,    A::StopRun,                     "x",          "stop the service (asks first)",                       Some("stop")),
    key(NONE,  Char('R'),     SVCS,    A::RerunRun,                    "R",          "restart: stop, start again the same (asks first)",    Some("restart")),
    // `/` and Esc on every list tab but Processes (which words its own); on Containers, Esc
    // first closes the inspect view (above).
    key(NONE,  Char('/'),     CONTS,   A::StartFilter,                 "/",          "filter the list: rows with this text in any column",  None),
    key(NONE,  Char('/'),     IMAGES,  A::StartFilter,                 "/",          "filter the list: rows with this text in any column",  None),
    key(NONE,  Esc,           IMAGES,  A::FilterClear,                 "Esc",        "clear the filter",                                    None),
    key(NONE,  Char('/'),     COMPAT,  A::StartFilter,                 "/",          "filter the list: rows with this text in any column",  None),
    key(NONE,  Esc,           COMPAT,  A::FilterClear,                 "Esc",        "clear the filter",                                    None),
    key(NONE,  Char('/'),     RUNS,    A::StartFilter,                 "/",          "filter the list: rows with this text in any column",  None),
    key(NONE,  Esc,           RUNS,    A::FilterClear,                 "Esc",        "clear the filter",                                    None),
];

/// The whole keymap, as the app holds it.
pub fn bindings() -> Vec<Binding> {
    KEYS.to_vec()
}

/// A dialog, or text being typed, that takes the keys before the tabs do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialog {
    /// A yes/no question: any key without a line here answers no.
    Confirm,
    /// Help or the messages view: any key without a line here closes it.
    Scroll,
    Shell,
    RunForm,
    /// The Services tab's start form.
    ServiceForm,
    Pull,
    /// A filter or a logs search being typed.
    Typing,
}

/// One key of a dialog, whatever the modifiers; a character without a line is typed
/// (`FilterInput`) in the dialogs that take text.
#[derive(Clone, Debug)]
pub struct DialogKey {
    pub dialog: Dialog,
    pub code: KeyCode,
    pub action: A,
}

const fn dialog(dialog: Dialog, code: KeyCode, action: A) -> DialogKey {
    DialogKey {
        dialog,
        code,
        action,
    }
}

/// Every dialog key.
#[rustfmt::skip]
pub const DIALOG_KEYS: &[DialogKey] = &[
    //     dialog            key            action
    dialog(Dialog::Confirm,  Char('y'),     A::Confirm),
    dialog(Dialog::Confirm,  Char('Y'),     A::Confirm),
    dialog(Dialog::Confirm,  Enter,         A::Confirm),
    dialog(Dialog::Scroll,   Up,            A::Up),
    dialog(Dialog::Scroll,   Char('k'),     A::Up),
    dialog(Dialog::Scroll,   Down,          A::Down),
    dialog(Dialog::Scroll,   Char('j'),     A::Down),
    dialog(Dialog::Scroll,   PageUp,        A::PageUp),
    dialog(Dialog::Scroll,   PageDown,      A::PageDown),
    dialog(Dialog::Scroll,   Char(' '),     A::PageDown),
    dialog(Dialog::Scroll,   Home,          A::Top),
    dialog(Dialog::Scroll,   Char('g'),     A::Top),
    dialog(Dialog::Scroll,   End,           A::Bottom),
    dialog(Dialog::Scroll,   Char('G'),     A::Bottom),
    dialog(Dialog::Shell,    Enter,         A::Confirm),
    dialog(Dialog::Shell,    Esc,           A::Cancel),
    dialog(Dialog::Shell,    Up,            A::Up),
    dialog(Dialog::Shell,    Down,          A::Down),
    dialog(Dialog::RunForm,  Enter,         A::Confirm),
    dialog(Dialog::RunForm,  Esc,           A::Cancel),
    dialog(Dialog::RunForm,  KeyCode::Tab,  A::NextTab),
    dialog(Dialog::RunForm,  BackTab,       A::PrevTab),
    dialog(Dialog::RunForm,  Up,            A::Up),
    dialog(Dialog::RunForm,  Down,          A::Down),
    dialog(Dialog::RunForm,  Backspace,     A::FilterBackspace),
    dialog(Dialog::ServiceForm, Enter,      A::Confirm),
    dialog(Dialog::ServiceForm, Esc,        A::Cancel),
    dialog(Dialog::ServiceForm, KeyCode::Tab, A::NextTab),
    dialog(Dialog::ServiceForm, BackTab,    A::PrevTab),
    dialog(Dialog::ServiceForm, Up,         A::Up),
    dialog(Dialog::ServiceForm, Down,       A::Down),
    dialog(Dialog::ServiceForm, Backspace,  A::FilterBackspace),
    dialog(Dialog::Pull,     Enter,         A::Confirm),
    dialog(Dialog::Pull,     Esc,           A::Cancel),
    dialog(Dialog::Pull,     Up,            A::Up),
    dialog(Dialog::Pull,     Down,          A::Down),
    dialog(Dialog::Pull,     Backspace,     A::FilterBackspace),
    dialog(Dialog::Typing,   Enter,         A::FilterDone),
    dialog(Dialog::Typing,   Esc,           A::FilterClear),
    dialog(Dialog::Typing,   Backspace,     A::FilterBackspace),
];
