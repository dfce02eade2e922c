//! The key bindings themselves: every key, where it applies, and the words help and the footer use.

use crossterm::event::{KeyCode, KeyModifiers};

use super::action::Action;
use super::keymap::{Binding, Context};

pub(super) const NONE: KeyModifiers = KeyModifiers::NONE;

pub(super) fn bind(
    code: KeyCode,
    action: Action,
    context: Context,
    label: &'static str,
    description: &'static str,
    footer: Option<&'static str>,
) -> Binding {
    Binding {
        code,
        modifiers: NONE,
        action,
        context,
        label,
        description,
        footer,
    }
}

/// The whole keymap. Bindings sharing a label are one help line.
pub fn bindings() -> Vec<Binding> {
    use Context::Global as G;
    use KeyCode::*;
    let p = Context::Tab(super::action::Tab::Processes);
    let g = Context::Tab(super::action::Tab::Gpus);
    let c = Context::Tab(super::action::Tab::Containers);
    let im = Context::Tab(super::action::Tab::Images);
    let cp = Context::Tab(super::action::Tab::Compat);
    let dr = Context::Tab(super::action::Tab::Doctor);
    let lg = Context::Logs;
    let pv = Context::ProcessView;
    let mut ctrl_c = bind(Char('c'), Action::Quit, G, "Ctrl-C", "quit", None);
    ctrl_c.modifiers = KeyModifiers::CONTROL;
    let mut ctrl_z = bind(
        Char('z'),
        Action::Suspend,
        G,
        "Ctrl-Z",
        "suspend to the shell (fg resumes)",
        None,
    );
    ctrl_z.modifiers = KeyModifiers::CONTROL;
    vec![
        bind(Char('q'), Action::Quit, G, "q", "quit", Some("quit")),
        ctrl_c,
        ctrl_z,
        bind(
            Char('M'),
            Action::ShowMessages,
            G,
            "M",
            "messages: the recent ones, each whole",
            None,
        ),
        bind(
            Char('T'),
            Action::CycleTheme,
            G,
            "T",
            "switch to the next colour theme",
            None,
        ),
        bind(
            Char('?'),
            Action::ToggleHelp,
            G,
            "?",
            "help: all keys",
            Some("help"),
        ),
        bind(Tab, Action::NextTab, G, "Tab", "next tab", Some("tab")),
        bind(
            BackTab,
            Action::PrevTab,
            G,
            "Shift-Tab",
            "previous tab",
            None,
        ),
        bind(
            Char('1'),
            Action::SelectTab(super::action::Tab::Gpus),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('2'),
            Action::SelectTab(super::action::Tab::Processes),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('3'),
            Action::SelectTab(super::action::Tab::Topology),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('4'),
            Action::SelectTab(super::action::Tab::Containers),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('5'),
            Action::SelectTab(super::action::Tab::Images),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('6'),
            Action::SelectTab(super::action::Tab::Compat),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('7'),
            Action::SelectTab(super::action::Tab::Doctor),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('8'),
            Action::SelectTab(super::action::Tab::Runs),
            G,
            "1-8",
            "go to a tab by number",
            None,
        ),
        bind(Up, Action::Up, G, "↑/k", "move up", None),
        bind(Char('k'), Action::Up, G, "↑/k", "move up", None),
        bind(Down, Action::Down, G, "↓/j", "move down", None),
        bind(Char('j'), Action::Down, G, "↓/j", "move down", None),
        bind(PageUp, Action::PageUp, G, "PgUp/PgDn", "move a page", None),
        bind(
            PageDown,
            Action::PageDown,
            G,
            "PgUp/PgDn",
            "move a page",
            None,
        ),
        bind(Home, Action::Top, G, "Home/g", "first row", None),
        bind(Char('g'), Action::Top, G, "Home/g", "first row", None),
        bind(End, Action::Bottom, G, "End/G", "last row", None),
        bind(Char('G'), Action::Bottom, G, "End/G", "last row", None),
        bind(
            Char('p'),
            Action::TogglePower,
            g,
            "p",
            "show/hide the power graph",
            Some("power"),
        ),
        bind(
            Char('m'),
            Action::CycleGraph,
            g,
            "m",
            "row graph: utilisation, memory, power",
            Some("graph"),
        ),
        bind(
            Enter,
            Action::ShowGpuProcesses,
            g,
            "Enter",
            "processes of the selected GPU",
            Some("processes"),
        ),
        bind(
            Char('s'),
            Action::CycleSort,
            p,
            "s",
            "sort by the next column",
            Some("sort"),
        ),
        bind(
            Char('r'),
            Action::ReverseSort,
            p,
            "r",
            "reverse the sort order",
            Some("reverse"),
        ),
        bind(
            Char('/'),
            Action::StartFilter,
            p,
            "/",
            "filter (text, or gpu:N)",
            Some("filter"),
        ),
        bind(Esc, Action::FilterClear, p, "Esc", "clear the filter", None),
        bind(
            Enter,
            Action::OpenProcess,
            p,
            "Enter",
            "open the selected process's view",
            Some("details"),
        ),
        bind(
            Char('x'),
            Action::KillSelected,
            p,
            "x/F9",
            "kill: SIGTERM, again for SIGKILL",
            Some("kill"),
        ),
        bind(
            F(9),
            Action::KillSelected,
            p,
            "x/F9",
            "kill: SIGTERM, again for SIGKILL",
            None,
        ),
        bind(
            Esc,
            Action::CloseView,
            pv,
            "Esc",
            "back to the process list",
            Some("back"),
        ),
        bind(
            Char('x'),
            Action::KillSelected,
            pv,
            "x/F9",
            "kill this process: SIGTERM, again for SIGKILL",
            Some("kill"),
        ),
        bind(
            F(9),
            Action::KillSelected,
            pv,
            "x/F9",
            "kill this process: SIGTERM, again for SIGKILL",
            None,
        ),
        bind(
            Enter,
            Action::OpenLogs,
            c,
            "Enter/l",
            "logs of the selected container",
            Some("logs"),
        ),
        bind(
            Char('l'),
            Action::OpenLogs,
            c,
            "Enter/l",
            "logs of the selected container",
            None,
        ),
        bind(
            Char('e'),
            Action::ReenterShell,
            c,
            "e",
            "enter a kept gpudeck shell",
            None,
        ),
        bind(
            Char('i'),
            Action::OpenInspect,
            c,
            "i",
            "inspect: command, mounts, env, ports",
            Some("inspect"),
        ),
        bind(
            Char('s'),
            Action::StartContainer,
            c,
            "s",
            "start the container",
            Some("start"),
        ),
        bind(
            Char('t'),
            Action::StopContainer,
            c,
            "t",
            "stop the container (asks first)",
            Some("stop"),
        ),
        bind(
            Char('R'),
            Action::RestartContainer,
            c,
            "R",
            "restart the container (asks first)",
            None,
        ),
        bind(
            Char('d'),
            Action::RemoveSelected,
            c,
            "d",
            "remove the container (asks first)",
            Some("remove"),
        ),
        bind(
            Esc,
            Action::CloseView,
            c,
            "Esc",
            "close the inspect view, or clear the filter",
            None,
        ),
        bind(
            Char('d'),
            Action::RemoveSelected,
            im,
            "d",
            "remove the image (asks first)",
            Some("remove"),
        ),
        bind(
            Char('r'),
            Action::RunDoctor,
            dr,
            "r",
            "diagnose again",
            Some("again"),
        ),
        bind(
            Char('p'),
            Action::PullSelected,
            cp,
            "p",
            "pull the selected image (verdict shown first)",
            Some("pull"),
        ),
        bind(
            Char('n'),
            Action::NextWontRun,
            cp,
            "n/N",
            "next/previous image that will not run here",
            Some("next ✗"),
        ),
        bind(
            Char('N'),
            Action::PrevWontRun,
            cp,
            "n/N",
            "next/previous image that will not run here",
            None,
        ),
        bind(
            Char('s'),
            Action::OpenShell,
            im,
            "s",
            "a shell in this image on chosen GPUs",
            Some("shell"),
        ),
        bind(
            Char('p'),
            Action::OpenPullPicker,
            im,
            "p",
            "pull an image: pick from the catalog or type any",
            Some("pull"),
        ),
        bind(
            Char('c'),
            Action::CancelPull,
            im,
            "c",
            "cancel the newest running pull",
            Some("cancel pull"),
        ),
        bind(
            Char('r'),
            Action::RetryPull,
            im,
            "r",
            "retry the pull the Docker Engine cut",
            None,
        ),
        bind(
            Char('f'),
            Action::ToggleFollow,
            lg,
            "f",
            "follow new lines on/off",
            Some("follow"),
        ),
        bind(
            Char('/'),
            Action::StartFilter,
            lg,
            "/",
            "search",
            Some("search"),
        ),
        bind(
            Char('n'),
            Action::NextMatch,
            lg,
            "n",
            "next (older) match",
            Some("next"),
        ),
        bind(
            Char('w'),
            Action::SaveLogs,
            lg,
            "w",
            "save the lines to a file",
            Some("save"),
        ),
        bind(
            Esc,
            Action::CloseView,
            lg,
            "Esc",
            "close the logs",
            Some("close"),
        ),
    ]
    .into_iter()
    .chain(super::bindings_runs::bindings())
    .chain(filter_bindings())
    .collect()
}

/// `/` and Esc on every list tab but Processes (which words its own); on Containers, Esc
/// first closes the inspect view.
fn filter_bindings() -> Vec<Binding> {
    use super::action::Tab;
    let mut out = Vec::new();
    for tab in [Tab::Containers, Tab::Images, Tab::Compat, Tab::Runs] {
        let context = Context::Tab(tab);
        out.push(bind(
            KeyCode::Char('/'),
            Action::StartFilter,
            context,
            "/",
            "filter the list: rows with this text in any column",
            None,
        ));
        if tab != Tab::Containers {
            out.push(bind(
                KeyCode::Esc,
                Action::FilterClear,
                context,
                "Esc",
                "clear the filter",
                None,
            ));
        }
    }
    out
}
