//! The Runs tab's keys and the rank keys of a run's logs view.

use crossterm::event::KeyCode::{Char, Enter};

use super::action::{Action, Tab};
use super::bindings::bind;
use super::keymap::{Binding, Context};

pub fn bindings() -> Vec<Binding> {
    let rn = Context::Tab(Tab::Runs);
    let rl = Context::RunLogs;
    vec![
        bind(
            Enter,
            Action::OpenLogs,
            rn,
            "Enter/l",
            "the run's whole output (follow, search, save)",
            Some("logs"),
        ),
        bind(
            Char('l'),
            Action::OpenLogs,
            rn,
            "Enter/l",
            "the run's whole output (follow, search, save)",
            None,
        ),
        bind(
            Char('n'),
            Action::NewRun,
            rn,
            "n",
            "start a new run (command, GPUs, launcher)",
            Some("new"),
        ),
        bind(
            Char('m'),
            Action::CycleGraph,
            rn,
            "m",
            "chart its GPUs' utilisation, memory or power",
            None,
        ),
        bind(
            Char('x'),
            Action::StopRun,
            rn,
            "x",
            "stop: SIGINT, SIGTERM, SIGKILL (asks first)",
            Some("stop"),
        ),
        bind(
            Char('R'),
            Action::RerunRun,
            rn,
            "R",
            "run again with the same spec (asks first)",
            Some("re-run"),
        ),
        bind(
            Char('K'),
            Action::KillLeftovers,
            rn,
            "K",
            "kill what still holds its GPUs (asks first)",
            None,
        ),
        bind(
            Char('['),
            Action::PrevRank,
            rn,
            "[/]",
            "previous/next rank's output",
            Some("rank"),
        ),
        bind(
            Char(']'),
            Action::NextRank,
            rn,
            "[/]",
            "previous/next rank's output",
            None,
        ),
        bind(
            Char('['),
            Action::PrevRank,
            rl,
            "[/]",
            "previous/next rank's output",
            Some("rank"),
        ),
        bind(
            Char(']'),
            Action::NextRank,
            rl,
            "[/]",
            "previous/next rank's output",
            None,
        ),
    ]
}
