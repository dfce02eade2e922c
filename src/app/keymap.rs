//! Keys to actions through the keymap tables (`bindings`), and the help lines and footer hints
//! generated from the same tables.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::{Action, Tab};
use super::state::{AppState, Overlay};

pub use super::bindings::{bindings, Binding, Context, Dialog, DialogKey, DIALOG_KEYS, KEYS};

/// Maps a key press to an action in the current mode.
pub fn action_for(state: &AppState, keymap: &[Binding], key: KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        // Ctrl-C and Ctrl-Z work from anywhere, dialogs included: raw mode turns off the
        // terminal's own, so the app does them.
        let anywhere = keymap
            .iter()
            .find(|b| b.modifiers == KeyModifiers::CONTROL && b.code == key.code);
        if let Some(b) = anywhere {
            return Some(b.action.clone());
        }
    }
    let dialog = match &state.overlay {
        Overlay::Confirm(_) => Some(Dialog::Confirm),
        Overlay::Help | Overlay::Messages => Some(Dialog::Scroll),
        Overlay::Shell(_) => Some(Dialog::Shell),
        Overlay::RunForm(_) => Some(Dialog::RunForm),
        Overlay::ServiceForm(_) => Some(Dialog::ServiceForm),
        Overlay::Pull(_) => Some(Dialog::Pull),
        Overlay::None => {
            let typing = state.list_filter().is_some_and(|f| f.editing)
                || open_logs(state).is_some_and(|l| l.editing_search);
            typing.then_some(Dialog::Typing)
        }
    };
    if let Some(dialog) = dialog {
        return dialog_action(dialog, key.code);
    }
    let modifiers = key.modifiers - KeyModifiers::SHIFT;
    keymap
        .iter()
        .filter(|b| active(state, b.context))
        .find(|b| b.code == key.code && b.modifiers == modifiers)
        .map(|b| b.action.clone())
}

/// A key in a dialog: its line in the table, else a typed character in the dialogs that take
/// text; in a question or help any other key closes it.
fn dialog_action(dialog: Dialog, code: KeyCode) -> Option<Action> {
    let listed = DIALOG_KEYS
        .iter()
        .find(|k| k.dialog == dialog && k.code == code);
    if let Some(k) = listed {
        return Some(k.action.clone());
    }
    match (dialog, code) {
        (Dialog::Confirm | Dialog::Scroll, _) => Some(Action::Cancel),
        (_, KeyCode::Char(c)) => Some(Action::FilterInput(c)),
        _ => None,
    }
}

/// Actions `--read-only` turns off, so the footer does not offer them.
fn changes_things(action: &Action) -> bool {
    matches!(
        action,
        Action::KillSelected
            | Action::StartContainer
            | Action::StopContainer
            | Action::RestartContainer
            | Action::RemoveSelected
            | Action::OpenPullPicker
            | Action::PullSelected
            | Action::RetryPull
            | Action::OpenShell
            | Action::ReenterShell
            | Action::StopRun
            | Action::NewRun
            | Action::RerunRun
            | Action::KillLeftovers
    )
}

/// Whether the key would act now: a key that works on the selected GPU, process, container,
/// image, run, service or check does nothing while there is none, so the footer does not
/// offer it (`c copy UUID` with no GPU).
fn does_something(state: &AppState, action: &Action) -> bool {
    use Action as A;
    let gpu = state
        .data()
        .is_some_and(|d| state.selected_gpu < d.inventory.gpus.len());
    let in_process_list = state.processes.view_pid.is_none();
    match (state.tab, action) {
        (_, A::CopyGpuUuid | A::ShowGpuProcesses | A::TogglePower | A::CycleGraph) => gpu,
        (Tab::Topology, A::DetailDown) => gpu,
        (Tab::Doctor, A::DetailDown) => state.doctor.selected_check().is_some(),
        (Tab::Processes, A::OpenProcess | A::KillSelected) if in_process_list => {
            state.selected_process_row().is_some()
        }
        (
            Tab::Containers,
            A::OpenLogs | A::OpenInspect | A::StartContainer | A::StopContainer | A::RemoveSelected,
        ) => state.docker.selected_container_info().is_some(),
        (Tab::Images, A::RemoveSelected | A::OpenShell) => {
            state.docker.selected_image_info().is_some()
        }
        (Tab::Images, A::CancelPull) => state.docker.pulls.iter().any(|p| p.running()),
        (Tab::Compat, A::PullSelected | A::NextWontRun) => {
            state.compat.selected_assessment().is_some()
        }
        (Tab::Runs, A::OpenLogs | A::StopRun | A::RerunRun | A::PrevRank) => {
            state.runs.selected_run().is_some()
        }
        (Tab::Services, A::OpenLogs | A::CopyUrl | A::StopRun | A::RerunRun) => {
            state.services.selected_service().is_some()
        }
        _ => true,
    }
}

/// The logs view that fills the current tab, if one does.
fn open_logs(state: &AppState) -> Option<&super::logs_view::LogsView> {
    match state.tab {
        Tab::Containers => state.docker.logs.as_ref(),
        Tab::Runs if state.runs.log_open => state.runs.logs.as_ref(),
        Tab::Services if state.services.log_open => state.services.logs.as_ref(),
        _ => None,
    }
}

/// Whether bindings of `context` apply right now.
fn active(state: &AppState, context: Context) -> bool {
    context == Context::Global
        || context == self::context(state)
        || (context == Context::RunLogs
            && self::context(state) == Context::Logs
            && state.tab == Tab::Runs)
}

/// The key sections the help shows on the current tab, the tab's own first (the logs view's keys
/// belong to Containers and Runs), the keys that work everywhere last.
pub fn help_contexts(state: &AppState) -> Vec<Context> {
    let mut out = vec![Context::Tab(state.tab)];
    if state.tab == Tab::Containers {
        out.push(Context::Logs);
    }
    if state.tab == Tab::Runs {
        out.extend([Context::Logs, Context::RunLogs]);
    }
    if state.tab == Tab::Services {
        out.push(Context::Logs);
    }
    if state.tab == Tab::Processes {
        out.push(Context::ProcessView);
    }
    out.push(Context::Global);
    out
}

/// The context the keys apply in right now.
fn context(state: &AppState) -> Context {
    if open_logs(state).is_some() {
        Context::Logs
    } else if state.tab == Tab::Processes && state.processes.view_pid.is_some() {
        Context::ProcessView
    } else {
        Context::Tab(state.tab)
    }
}

/// Help lines: (section, key label, description), one per distinct label, sections in the order
/// of `contexts`.
pub fn help_lines(
    keymap: &[Binding],
    contexts: &[Context],
) -> Vec<(&'static str, &'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str, &'static str)> = Vec::new();
    let in_order = contexts
        .iter()
        .flat_map(|c| keymap.iter().filter(move |b| b.context == *c));
    for b in in_order {
        let section = match b.context {
            Context::Global => "Everywhere",
            Context::Tab(t) => t.title(),
            Context::Logs => "Logs",
            Context::RunLogs => "Run logs",
            Context::ProcessView => "Process",
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
        .filter(|b| active(state, b.context))
        .filter(|b| !(state.read_only && changes_things(&b.action)))
        .filter(|b| does_something(state, &b.action))
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
        let all = [Context::Global, Context::Tab(Tab::Processes)];
        let lines = help_lines(&map, &all);
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

    #[test]
    fn no_key_is_bound_twice_where_it_applies() {
        // A second binding of a key in the same context would never be reached.
        for (i, a) in KEYS.iter().enumerate() {
            let shadowed = KEYS[..i]
                .iter()
                .any(|b| b.code == a.code && b.modifiers == a.modifiers && b.context == a.context);
            assert!(
                !shadowed,
                "{:?} {:?} in {:?}",
                a.modifiers, a.code, a.context
            );
        }
    }

    #[test]
    fn no_dialog_key_is_listed_twice() {
        for (i, a) in DIALOG_KEYS.iter().enumerate() {
            let twice = DIALOG_KEYS[..i]
                .iter()
                .any(|b| b.dialog == a.dialog && b.code == a.code);
            assert!(!twice, "{:?} in {:?}", a.code, a.dialog);
        }
    }

    #[test]
    fn a_question_takes_yes_and_a_form_takes_typing() {
        assert_eq!(
            dialog_action(Dialog::Confirm, KeyCode::Char('Y')),
            Some(Action::Confirm)
        );
        assert_eq!(
            dialog_action(Dialog::Confirm, KeyCode::Char('n')),
            Some(Action::Cancel)
        );
        assert_eq!(
            dialog_action(Dialog::RunForm, KeyCode::Char('g')),
            Some(Action::FilterInput('g'))
        );
        assert_eq!(
            dialog_action(Dialog::Scroll, KeyCode::Char('g')),
            Some(Action::Top)
        );
        assert_eq!(dialog_action(Dialog::Typing, KeyCode::Left), None);
    }
}
