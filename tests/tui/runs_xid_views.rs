//! A run an Xid hit, in the Runs tab: the marker in its row of the list and what the detail says
//! (whom the Xid points at, what it means, what to do), read whole at 80 columns.

use crate::support;

use std::path::PathBuf;

use gpudeck::app::action::{Action, Tab};
use gpudeck::config::Theme;
use gpudeck::health::XidCatalog;
use gpudeck::runs::recorded::xids::{attribute, RunWindow, XidSighting, XidSource};
use gpudeck::runs::watch::{RunRow, RunsUpdate};
use gpudeck::runs::RunOwner;
use gpudeck::runs::{Launcher, RankRecord, RunRecord, RunState};
use gpudeck::ui::style::Styles;
use support::demo::demo_state;
use support::screen::{find, render, text};

/// 2027-01-15 08:00:00 UTC.
const START_MS: u64 = 1_800_000_000_000;

/// A torchrun run whose rank 1 died 40 s after GPU 1 fell off the bus (Xid 79), and a later
/// Xid 13 that named no process.
fn failed_run() -> RunRow {
    let mut record = RunRecord::starting(
        "20270115-080000-bert-00aa".into(),
        "bert".into(),
        Launcher::Torchrun,
        "/".into(),
        "h".into(),
        START_MS,
    );
    record.started_ms = Some(START_MS);
    record.ranks = (0..2)
        .map(|rank| RankRecord {
            rank,
            argv: vec!["python".into()],
            env: Default::default(),
            gpus: vec![rank as u32],
            pid: Some(4000 + rank as u32),
            exit_code: Some(1),
            ended_ms: Some(START_MS + 47_000),
        })
        .collect();
    record.first_failed_rank = Some(1);
    record.ended_ms = Some(START_MS + 50_000);
    let window = RunWindow::of(&record, RunState::Failed, START_MS + 50_000).expect("a window");
    let seen = |xid, at_s: u64| XidSighting {
        gpu: 1,
        pci_bus_id: "00000000:30:00.0".into(),
        xid,
        at_ms: START_MS + at_s * 1000,
        pid: None,
        process: None,
        source: XidSource::Live,
    };
    let xids = attribute(&window, &[seen(79, 7), seen(13, 8)], &XidCatalog::builtin());
    RunRow {
        id: record.id.clone(),
        name: record.name.clone(),
        state: RunState::Failed,
        launcher: Launcher::Torchrun,
        image: None,
        gpus: vec![0, 1],
        ranks: 2,
        command: "python finetune.py".into(),
        created_ms: START_MS,
        started_ms: record.started_ms,
        ended_ms: record.ended_ms,
        exit_code: Some(1),
        first_failed_rank: Some(1),
        error: None,
        dir: PathBuf::from("/nonexistent"),
        summary: None,
        job: None,
        engine_away: None,
        xids,
        owner: RunOwner::default(),
    }
}

#[test]
fn a_run_an_xid_hit_is_marked_in_the_list_and_the_detail_says_whose_fault() {
    let mut s = demo_state("gpus=2,seed=7,frozen=100", 1);
    s.now = (START_MS / 1000) as i64 + 600;
    s.update(Action::SelectTab(Tab::Runs));
    s.apply_runs(RunsUpdate::Listed {
        runs: vec![failed_run()],
        warnings: vec![],
    });
    let buf = render(&s, 80, 30);
    let screen = text(&buf);
    let theme = Theme::builtin("dark").expect("theme");
    let styles = Styles::new(&theme);
    let red = styles.error().fg.expect("a colour");
    // The list: the marker before the command (cut at 80 columns), in red.
    let (x, y) = find(&buf, "Xid 79 · ");
    assert_eq!(buf[(x, y)].fg, red, "{screen}");
    // The detail: the whole sentence, wrapped, and what to do.
    let joined = screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ");
    for needle in [
        "⚠ GPU 1 reported Xid 79 (the GPU has fallen off the bus) at 08:00:07 UTC, 40s before \
         rank 1 died: the machine, not your code.",
        "Xid 79: the GPU has fallen off the bus",
        "Do: Reboot the machine",
        "(1 more Xid; `gpudeck runs --json` lists them all.)",
    ] {
        assert!(joined.contains(needle), "{needle:?} in\n{screen}");
    }
    let (x, y) = find(&buf, "⚠ GPU 1 reported Xid 79");
    assert_eq!(buf[(x, y)].fg, red);
    insta::assert_snapshot!("runs_tab_xid_79_hit_a_failed_run", screen);
}
