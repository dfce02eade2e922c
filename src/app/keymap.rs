//! Keys to actions, each binding with its description; the help overlay and footer are generated from it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::{Action, Tab};
use super::state::{AppState, Overlay};

/// Where a binding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Global,
    Tab(Tab),
}

/// One key binding.
#[derive(Clone, Debug)]
pub struct Binding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
    pub action: Action,
    pub context: Context,
    /// The key as help shows it; one label may stand for several bindings (e.g. "↓/j").
    pub label: &'static str,
    pub description: &'static str,
    /// The footer's short wording, for the few keys worth a place there (it must fit in 80 columns).
    pub footer: Option<&'static str>,
}

const NONE: KeyModifiers = KeyModifiers::NONE;

fn bind(
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
    let mut ctrl_c = bind(Char('c'), Action::Quit, G, "Ctrl-C", "quit", None);
    ctrl_c.modifiers = KeyModifiers::CONTROL;
    vec![
        bind(Char('q'), Action::Quit, G, "q", "quit", Some("quit")),
        ctrl_c,
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
            "1 2 3",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('2'),
            Action::SelectTab(super::action::Tab::Processes),
            G,
            "1 2 3",
            "go to a tab by number",
            None,
        ),
        bind(
            Char('3'),
            Action::SelectTab(super::action::Tab::Topology),
            G,
            "1 2 3",
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
    ]
}

/// Maps a key press to an action in the current mode.
pub fn action_for(state: &AppState, keymap: &[Binding], key: KeyEvent) -> Option<Action> {
    if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
        return Some(Action::Quit);
    }
    match &state.overlay {
        Overlay::Confirm(_) => {
            return Some(match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => Action::Confirm,
                _ => Action::Cancel,
            });
        }
        Overlay::Help => return Some(Action::Cancel),
        Overlay::None => {}
    }
    if state.processes.editing_filter && state.tab == Tab::Processes {
        return match key.code {
            KeyCode::Enter => Some(Action::FilterDone),
            KeyCode::Esc => Some(Action::FilterClear),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char(c) => Some(Action::FilterInput(c)),
            _ => None,
        };
    }
    let modifiers = key.modifiers - KeyModifiers::SHIFT;
    keymap
        .iter()
        .filter(|b| b.context == Context::Global || b.context == Context::Tab(state.tab))
        .find(|b| b.code == key.code && b.modifiers == modifiers)
        .map(|b| b.action.clone())
}

/// Help lines: (section, key label, description), one per distinct label.
pub fn help_lines(keymap: &[Binding]) -> Vec<(&'static str, &'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str, &'static str)> = Vec::new();
    for b in keymap {
        let section = match b.context {
            Context::Global => "Everywhere",
            Context::Tab(t) => t.title(),
        };
        if !out.iter().any(|(s, l, _)| *s == section && *l == b.label) {
            out.push((section, b.label, b.description));
        }
    }
    out
}

/// Footer hints for the current tab: (key label, short description).
pub fn footer_hints(state: &AppState, keymap: &[Binding]) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = keymap
        .iter()
        .filter(|b| b.context == Context::Tab(state.tab) || b.context == Context::Global)
        .filter(|b| !(state.read_only && b.action == Action::KillSelected))
        .filter_map(|b| b.footer.map(|short| (b.label, short)))
        .collect();
    out.dedup();
    // Tab-specific keys first: they are what the user is looking for here.
    out.sort_by_key(|(label, _)| {
        keymap
            .iter()
            .any(|b| b.label == *label && b.context == Context::Global)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_is_described_once_per_section() {
        let map = bindings();
        let lines = help_lines(&map);
        assert!(lines
            .iter()
            .any(|(s, l, _)| *s == "Everywhere" && *l == "q"));
        assert!(lines
            .iter()
            .any(|(s, l, _)| *s == "Processes" && *l == "x/F9"));
        let labels: Vec<_> = lines.iter().map(|(s, l, _)| (s, l)).collect();
        let mut dedup = labels.clone();
        dedup.dedup();
        assert_eq!(labels.len(), dedup.len());
    }
}
