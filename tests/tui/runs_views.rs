//! The Runs tab: the runs collector on run directories as the supervisor leaves them (summaries,
//! the focused run's GPU traces, progress and alerts, log tails that only bring what is new), the
//! tab's state and commands, and what it draws.

use crate::support;

use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::run_form::GpuMode;
use gpudeck::app::state::{AppState, GpuStatus, Overlay};
use gpudeck::gpu::GpuSample;
use gpudeck::host::{KillSignal, ProcessIdentity, ProcessTarget};
use gpudeck::runs::recorded::summary::AlertKind;
use gpudeck::runs::watch::{RunsCommand, RunsUpdate, Watcher};
use gpudeck::runs::{RunState, RunStore};
use support::demo::demo_state;
use support::run_fixture::{FakeRun, RunFacts};
use support::screen::{find, render, text};
use tokio::sync::mpsc;

const T0: u64 = 1_800_000_000_000;

fn finished(data: &std::path::Path, id: &str, gpus: &[u32]) -> FakeRun {
    FakeRun::write(
        data,
        &RunFacts {
            id,
            state: "succeeded",
            gpus,
            ranks: gpus.len(),
            started_ms: T0,
            ended_ms: Some(T0 + 60_000),
            exit_code: Some(0),
            supervised: false,
        },
    )
}

/// Everything the collector has sent so far.
fn drain(rx: &mut mpsc::Receiver<RunsUpdate>) -> Vec<RunsUpdate> {
    let mut out = Vec::new();
    while let Ok(u) = rx.try_recv() {
        out.push(u);
    }
    out
}

#[test]
fn the_collector_lists_runs_with_their_gpu_use_and_follows_the_focused_one() {
    let data = tempfile::tempdir().unwrap();
    let run = finished(data.path(), "20270115-080000-train-0001", &[0, 1]);
    // GPU 0 busy every other second, GPU 1 always: 75% of the GPU-seconds busy.
    let rows: Vec<_> = (1..=60u64)
        .flat_map(|s| {
            let t = T0 + s * 1000;
            [(t, 0, (s % 2 * 80) as u32, s, 300.0), (t, 1, 95, 40, 650.0)]
        })
        .collect();
    run.metrics(&rows);
    let progress: String = (1..=50)
        .map(|s| format!("step={s} loss={:.4} acc=0.{s:02}\n", 3.0 / f64::from(s)))
        .collect();
    run.log(0, "stdout", &progress);
    run.log(0, "stderr", "warning: slow data loader\n");
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);

    assert!(watcher.tick());
    let updates = drain(&mut rx);
    let Some(RunsUpdate::Listed { runs, warnings }) = updates.first() else {
        panic!("no listing: {updates:?}");
    };
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].state, RunState::Succeeded);
    let summary = runs[0]
        .summary
        .as_ref()
        .expect("a summary from metrics.csv");
    assert!(
        (summary.busy_ratio.unwrap() - 0.75).abs() < 0.02,
        "{summary:?}"
    );
    assert_eq!(summary.gpus[0].peak_mem_bytes, Some(60 << 30));

    assert!(watcher.apply(RunsCommand::Focus(Some(run.id.clone()))));
    let detail = drain(&mut rx)
        .into_iter()
        .find_map(|u| match u {
            RunsUpdate::Detail(d) => Some(d),
            _ => None,
        })
        .expect("the focused run's detail");
    assert_eq!(detail.gpus.len(), 2);
    assert_eq!(detail.gpus[1].util_pct.len(), 60);
    assert_eq!(detail.gpus[1].util_pct[0], (1.0, 95.0));
    assert!((detail.gpus[0].mem_pct[59].1 - 75.0).abs() < 1e-9);
    let (name, curve) = detail.progress.curve.as_ref().expect("a loss curve");
    assert_eq!(name, "loss");
    assert_eq!(curve.len(), 50);
    assert_eq!(curve.last().unwrap().0, 50.0);
    assert!(
        detail.alerts.is_empty(),
        "a finished run raises no live alerts"
    );

    assert!(watcher.apply(RunsCommand::FollowLogs {
        id: run.id.clone(),
        rank: 0
    }));
    let chunk = drain(&mut rx)
        .into_iter()
        .find_map(|u| match u {
            RunsUpdate::Log(c) => Some(c),
            _ => None,
        })
        .expect("the rank's log tail");
    assert!(chunk.reset);
    assert_eq!(chunk.lines.len(), 51);
    assert_eq!(
        chunk.lines[0],
        (false, "step=1 loss=3.0000 acc=0.01".into())
    );
    assert_eq!(chunk.lines[50], (true, "warning: slow data loader".into()));

    // Only what is appended comes next; a progress bar's redraws show their last state.
    run.log(0, "stdout", "epoch 1\r 10/100\r 20/100\n");
    assert!(watcher.tick());
    let chunks: Vec<_> = drain(&mut rx)
        .into_iter()
        .filter_map(|u| match u {
            RunsUpdate::Log(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert!(!chunks[0].reset);
    assert_eq!(chunks[0].lines, vec![(false, " 20/100".to_string())]);
}

#[test]
fn an_ended_run_is_read_once_and_not_again_at_later_looks() {
    let data = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // Ended five minutes ago: done changing.
    let started = now - 600_000;
    let run = FakeRun::write(
        data.path(),
        &RunFacts {
            id: "20250101-000000-old-0001",
            state: "succeeded",
            gpus: &[0],
            ranks: 1,
            started_ms: started,
            ended_ms: Some(started + 60_000),
            exit_code: Some(0),
            supervised: false,
        },
    );
    let rows: Vec<_> = (1..=60u64)
        .map(|s| (started + s * 1000, 0, 50, 10, 300.0))
        .collect();
    run.metrics(&rows);
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    let listing = |rx: &mut mpsc::Receiver<RunsUpdate>| match drain(rx).pop() {
        Some(RunsUpdate::Listed { runs, warnings }) => (runs, warnings),
        other => panic!("no listing: {other:?}"),
    };
    assert!(watcher.tick());
    let (first, warnings) = listing(&mut rx);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(first[0].summary.is_some(), "{first:?}");
    // Its files are not read again: were they, these would break the listing.
    std::fs::write(run.dir.join("run.json"), "{ not a record").unwrap();
    std::fs::write(run.dir.join("metrics.csv"), "garbage\n").unwrap();
    for _ in 0..3 {
        assert!(watcher.tick());
    }
    let (later, warnings) = listing(&mut rx);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(later, first);
}

#[test]
fn changed_rows_replace_theirs_and_keep_the_order_and_the_selection() {
    let data = tempfile::tempdir().unwrap();
    finished(data.path(), "20270115-080000-a-0001", &[0]);
    finished(data.path(), "20270115-090000-b-0002", &[1]);
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.tick());
    let Some(RunsUpdate::Listed { runs, warnings }) = drain(&mut rx).pop() else {
        panic!("no listing");
    };
    let mut state = runs_state();
    state.apply_runs(RunsUpdate::Listed {
        runs: runs.clone(),
        warnings,
    });
    state.runs.select(Some("20270115-080000-a-0001".into()));
    let mut changed = runs[0].clone();
    changed.state = RunState::Failed;
    state.apply_runs(RunsUpdate::Changed {
        rows: vec![changed],
        warnings: vec!["a warning".into()],
    });
    let ids: Vec<&str> = state.runs.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["20270115-090000-b-0002", "20270115-080000-a-0001"]);
    assert_eq!(state.runs.runs[1].state, RunState::Failed);
    assert_eq!(state.runs.runs[0].state, RunState::Succeeded);
    assert_eq!(
        state.runs.selected.as_deref(),
        Some("20270115-080000-a-0001")
    );
    assert_eq!(state.runs.warnings, ["a warning"]);
}

#[test]
fn a_live_run_with_one_idle_gpu_raises_the_straggler_alert() {
    let data = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let start = now - 120_000;
    let run = FakeRun::write(
        data.path(),
        &RunFacts {
            id: "20270115-090000-train-0002",
            state: "running",
            gpus: &[0, 1],
            ranks: 2,
            started_ms: start,
            ended_ms: None,
            exit_code: None,
            supervised: true,
        },
    );
    let rows: Vec<_> = (1..=100u64)
        .flat_map(|s| {
            let t = start + s * 1000;
            let idle = s > 55;
            [
                (t, 0, if idle { 0 } else { 90 }, 30, 300.0),
                (t, 1, 97, 30, 600.0),
            ]
        })
        .collect();
    run.metrics(&rows);
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.apply(RunsCommand::Focus(Some(run.id.clone()))));
    let detail = drain(&mut rx)
        .into_iter()
        .find_map(|u| match u {
            RunsUpdate::Detail(d) => Some(d),
            _ => None,
        })
        .expect("detail");
    assert_eq!(detail.alerts.len(), 1, "{:?}", detail.alerts);
    assert_eq!(detail.alerts[0].kind, AlertKind::Straggler);
    assert_eq!(detail.alerts[0].gpus, vec![0]);
}

/// The Runs tab's state with the collector that feeds it and the store it reads.
struct Fixture {
    state: gpudeck::app::state::AppState,
    watcher: Watcher,
    rx: mpsc::Receiver<RunsUpdate>,
    _data: tempfile::TempDir,
}

impl Fixture {
    /// Hands the state's commands for the collector to it, and its answers to the state.
    fn pump(&mut self, commands: Vec<Command>) {
        for c in commands {
            if let Command::Runs(c) = c {
                assert!(self.watcher.apply(c));
            }
        }
        for update in drain(&mut self.rx) {
            self.state.apply_runs(update);
        }
    }
}

/// A Runs tab that has listed two runs: a failed one and, newer, a running one.
pub(crate) fn runs_state() -> gpudeck::app::state::AppState {
    fixture().state
}

fn fixture() -> Fixture {
    let data = tempfile::tempdir().unwrap();
    let failed = FakeRun::write(
        data.path(),
        &RunFacts {
            id: "20270115-070000-bert-00aa",
            state: "failed",
            gpus: &[2],
            ranks: 1,
            started_ms: T0,
            ended_ms: Some(T0 + 30_000),
            exit_code: Some(3),
            supervised: false,
        },
    );
    let rows: Vec<_> = (1..=30u64)
        .map(|s| {
            (
                T0 + s * 1000,
                2,
                if s < 25 { 90 } else { 0 },
                10 + s / 3,
                400.0,
            )
        })
        .collect();
    failed.metrics(&rows);
    let epochs: String = (1..=3)
        .map(|e| {
            format!(
                "Epoch {e}/5\n100/100 - 12s - loss: {:.4} - accuracy: 0.{e}5\n",
                1.0 / f64::from(e)
            )
        })
        .collect();
    failed.log(0, "stdout", &epochs);
    failed.log(0, "stderr", "RuntimeError: CUDA out of memory\n");
    FakeRun::write(
        data.path(),
        &RunFacts {
            id: "20270115-080000-resnet-00bb",
            state: "running",
            gpus: &[0, 1],
            ranks: 2,
            started_ms: T0 + 60_000,
            ended_ms: None,
            exit_code: None,
            supervised: true,
        },
    );
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.tick());
    let mut state = demo_state("gpus=4,seed=42,frozen=120", 2);
    state.now = (T0 / 1000) as i64 + 120;
    for update in drain(&mut rx) {
        state.apply_runs(update);
    }
    Fixture {
        state,
        watcher,
        rx,
        _data: data,
    }
}

#[test]
fn the_tab_follows_the_selection_and_asks_before_stopping() {
    let mut state = runs_state();
    assert_eq!(
        state.runs.selected.as_deref(),
        Some("20270115-080000-resnet-00bb"),
        "the newest run is selected first"
    );
    let shown = state.update(Action::SelectTab(Tab::Runs));
    assert!(shown.contains(&Command::Runs(RunsCommand::Focus(Some(
        "20270115-080000-resnet-00bb".into()
    )))));
    let moved = state.update(Action::Down);
    assert_eq!(
        moved,
        vec![
            Command::Runs(RunsCommand::Focus(Some("20270115-070000-bert-00aa".into()))),
            Command::Runs(RunsCommand::FollowLogs {
                id: "20270115-070000-bert-00aa".into(),
                rank: 0
            }),
        ]
    );
    // The failed run has ended: nothing to stop.
    assert!(state.update(Action::StopRun).is_empty());
    assert_eq!(state.overlay, Overlay::None);
    assert!(state
        .status
        .as_ref()
        .unwrap()
        .text
        .contains("already ended"));
    state.update(Action::Up);
    state.update(Action::StopRun);
    let Overlay::Confirm(c) = &state.overlay else {
        panic!("stopping asks first: {:?}", state.overlay);
    };
    assert_eq!(
        c.command,
        Command::StopRun {
            id: "20270115-080000-resnet-00bb".into()
        }
    );
    assert_eq!(
        state.update(Action::Confirm),
        vec![Command::StopRun {
            id: "20270115-080000-resnet-00bb".into()
        }]
    );
    // Ranks of a two-rank run; leaving the tab stops following.
    assert_eq!(
        state.update(Action::NextRank),
        vec![Command::Runs(RunsCommand::FollowLogs {
            id: "20270115-080000-resnet-00bb".into(),
            rank: 1
        })]
    );
    assert_eq!(
        state.update(Action::SelectTab(Tab::Gpus)),
        vec![Command::Runs(RunsCommand::Focus(None))]
    );
}

#[test]
fn read_only_refuses_stop_rerun_and_kill() {
    let mut state = runs_state();
    state.read_only = true;
    state.update(Action::SelectTab(Tab::Runs));
    for action in [Action::StopRun, Action::RerunRun, Action::KillLeftovers] {
        assert!(state.update(action).is_empty());
        assert_eq!(state.overlay, Overlay::None);
        assert!(state.status.as_ref().unwrap().text.contains("read-only"));
    }
}

/// Replaces what the dashboard last sampled, without a tick (which would add to the after-end
/// watch at the state's own clock).
fn set_samples(state: &mut AppState, samples: Vec<GpuSample>) {
    let GpuStatus::Ready(data) = &mut state.gpu else {
        panic!("GPUs are read");
    };
    data.samples = samples;
}

#[test]
fn memory_still_held_after_the_end_offers_to_kill_only_the_runs_own_processes() {
    let mut state = runs_state();
    state.update(Action::SelectTab(Tab::Runs));
    state.update(Action::Down);
    let owner = state.runs.selected_run().unwrap().owner;
    let mut samples = state.data().unwrap().samples.clone();
    assert!(
        !samples[2].processes.is_empty(),
        "the simulation has processes on GPU 2"
    );
    // GPU 2's processes are the run's user's, started during the run, after the first: alice's
    // job, there before the run started.
    let mut alices = samples[2].processes[0].clone();
    alices.pid = 424_242;
    samples[2].processes.insert(0, alices);
    let me = owner.uid.expect("the run directory's owner");
    for (i, p) in samples[2].processes.iter_mut().enumerate() {
        let alice = i == 0;
        p.user = Some(if alice { "alice" } else { "me" }.into());
        p.identity = Some(ProcessIdentity {
            start_ticks: 100 + i as u64,
            started_unix_ms: Some(if alice { T0 - 3_600_000 } else { T0 + 2_000 }),
            uid: Some(if alice { me + 1 } else { me }),
            pgid: 50_000 + i as u32,
            session: 50_000 + i as u32,
        });
    }
    set_samples(&mut state, samples.clone());
    let alice = samples[2].processes[0].pid;
    let own: Vec<ProcessTarget> = samples[2].processes[1..]
        .iter()
        .map(|p| p.target())
        .collect();
    assert!(state.runs.held.is_none());
    let statics = state.data().unwrap().inventory.gpus.clone();
    for s in 0..15 {
        let now = (T0 + 31_000 + s * 1000) as i64;
        state.runs.watch_after_end(now, &statics, &samples);
    }
    let held = state.runs.held.clone().expect("memory held after the end");
    assert_eq!(held.gpus, vec![2]);
    // The alert reads whole at 80 columns, what to do included, in the error colour.
    let buf = support::screen::render(&state, 80, 40);
    let screen = support::screen::text(&buf);
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let detail_rows: Vec<&str> = screen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect();
    let whole = format!("⚠ {} K kills them (asks first).", held.message);
    assert!(
        flat(&detail_rows.join(" ")).contains(&flat(&whole)),
        "{whole}\n{screen}"
    );
    let (x, y) = support::screen::find(&buf, "⚠ ");
    assert_eq!(
        buf[(x, y)].fg,
        gpudeck::config::Theme::builtin("dark").unwrap().error
    );
    state.update(Action::KillLeftovers);
    let Overlay::Confirm(c) = &state.overlay else {
        panic!("killing asks first");
    };
    assert_eq!(
        c.command,
        Command::SignalProcesses {
            targets: own,
            signal: KillSignal::Term
        }
    );
    assert!(c.details.iter().any(|d| d.starts_with("GPU 2 · pid ")));
    // Counted in words, as everywhere: "1 process", never "1 process(es)".
    assert_eq!(
        c.question,
        "Send SIGTERM to 1 process of this run still on GPU 2?"
    );
    assert!(
        c.details
            .iter()
            .any(|d| d == &format!("not offered, not this run's: pid {alice} (alice)")),
        "{:?}",
        c.details
    );

    // Only alice's job left: nothing is offered, and the status says whose it is.
    state.update(Action::Cancel);
    let mut only_alice = samples.clone();
    only_alice[2].processes.truncate(1);
    set_samples(&mut state, only_alice);
    state.update(Action::KillLeftovers);
    assert_eq!(state.overlay, Overlay::None);
    let status = state.status.clone().unwrap();
    assert!(status.is_error);
    assert_eq!(
        status.text,
        format!("GPU 2: not this run's, left alone: pid {alice} (alice)")
    );
}

#[test]
fn the_selected_runs_facts_are_read_whole_at_80_columns() {
    let mut f = fixture();
    let commands = f.state.update(Action::SelectTab(Tab::Runs));
    f.pump(commands);
    let commands = f.state.update(Action::Down);
    f.pump(commands);
    let screen = text(&render(&f.state, 80, 30));
    // The GPU use line is longer than the pane: it wraps, its end (the energy) is not cut.
    let words = screen
        .lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("peak memory 20.0GiB · 400 W mean · 3.3 Wh"),
        "{screen}"
    );
}

#[test]
fn the_tab_draws_runs_with_their_state_and_the_selected_one_in_detail() {
    let mut f = fixture();
    let commands = f.state.update(Action::SelectTab(Tab::Runs));
    f.pump(commands);
    let commands = f.state.update(Action::Down);
    f.pump(commands);
    let state = &f.state;
    let buf = render(state, 100, 30);
    let screen = text(&buf);
    insta::assert_snapshot!(screen);
    let theme = gpudeck::config::Theme::builtin("dark").unwrap();
    let (x, y) = find(&buf, "failed");
    assert_eq!(buf[(x, y)].fg, theme.error);
    let (x, y) = find(&buf, "bert-00aa");
    assert_eq!(buf[(x, y)].bg, theme.selected_bg, "the selected row");
    assert!(screen.contains("Runs · 2 · 1 running"));
    assert!(screen.contains("epoch 3/5"), "{screen}");
    let (x, y) = find(&buf, "RuntimeError: CUDA out of memory");
    assert_eq!(buf[(x - 2, y)].fg, theme.error, "stderr is marked");
    assert!(screen.contains("GPU util %"));
    let (_, y) = find(&buf, "resnet-00bb");
    let area = ratatui::layout::Rect::new(0, 0, 100, 30);
    assert_eq!(
        gpudeck::ui::click(area, state, 10, y),
        Some(Action::SelectRow(0))
    );
    f.state.update(Action::CycleGraph);
    assert!(text(&render(&f.state, 100, 30)).contains("GPU memory %"));
    f.state.update(Action::CycleGraph);
    let power = text(&render(&f.state, 100, 30));
    assert!(
        power.contains("GPU power W") && power.contains("400"),
        "{power}"
    );
}

#[test]
fn the_new_run_form_builds_a_spec_and_says_what_is_missing() {
    let mut state = runs_state();
    state.update(Action::SelectTab(Tab::Runs));
    state.update(Action::NewRun);
    let Overlay::RunForm(form) = &state.overlay else {
        panic!("n opens the form: {:?}", state.overlay);
    };
    let suggested: Vec<u32> = form
        .gpus
        .iter()
        .filter(|g| g.chosen)
        .map(|g| g.index)
        .collect();
    assert_eq!(suggested.len(), 1, "one free GPU is suggested");
    assert!(form
        .gpus
        .iter()
        .filter(|g| g.chosen)
        .all(|g| g.busy.is_none()));
    // Enter with no command says what to type, and the form stays.
    assert!(state.update(Action::Confirm).is_empty());
    let Overlay::RunForm(form) = &state.overlay else {
        panic!("the form stays open");
    };
    assert!(form.error.as_deref().unwrap().contains("type the command"));
    for c in "python train.py --note 'two words'".chars() {
        state.update(Action::FilterInput(c));
    }
    state.update(Action::NextTab);
    for c in "bert".chars() {
        state.update(Action::FilterInput(c));
    }
    for _ in 0..3 {
        state.update(Action::NextTab);
    }
    state.update(Action::FilterInput(' '));
    state.update(Action::FilterInput(' '));
    let commands = state.update(Action::Confirm);
    assert_eq!(state.overlay, Overlay::None);
    let [Command::StartRun(spec)] = commands.as_slice() else {
        panic!("Enter starts the run: {commands:?}");
    };
    assert_eq!(spec.command, ["python", "train.py", "--note", "two words"]);
    assert_eq!(spec.name.as_deref(), Some("bert"));
    assert_eq!(spec.launcher, gpudeck::runs::Launcher::PerGpu);
    assert_eq!(spec.gpus, gpudeck::runs::GpuSelection::Indices(suggested));
    assert!(spec.image.is_none());
}

#[test]
fn the_form_refuses_no_gpus_on_the_host_and_an_unclosed_quote() {
    let mut state = runs_state();
    state.update(Action::SelectTab(Tab::Runs));
    state.update(Action::NewRun);
    for c in "sh -c 'echo".chars() {
        state.update(Action::FilterInput(c));
    }
    state.update(Action::Confirm);
    let Overlay::RunForm(form) = &state.overlay else {
        panic!("the form stays open");
    };
    assert!(form.error.as_deref().unwrap().contains("unclosed quote"));
    state.update(Action::FilterInput('\''));
    // To the GPU list (past the backend): take the suggested GPU away.
    for _ in 0..6 {
        state.update(Action::NextTab);
    }
    state.update(Action::FilterInput('a'));
    state.update(Action::FilterInput('a'));
    state.update(Action::Confirm);
    let Overlay::RunForm(form) = &state.overlay else {
        panic!("the form stays open");
    };
    assert!(form.gpus.iter().all(|g| !g.chosen));
    assert!(
        form.error.as_deref().unwrap().contains("at least one GPU"),
        "{:?}",
        form.error
    );
    state.update(Action::Cancel);
    assert_eq!(state.overlay, Overlay::None);
    state.read_only = true;
    state.update(Action::NewRun);
    assert_eq!(state.overlay, Overlay::None);
}

#[test]
fn a_host_without_gpus_starts_a_cpu_run_from_the_form() {
    let mut state = runs_state();
    state.gpu = GpuStatus::Failed(gpudeck::gpu::GpuError::DriverNotLoaded);
    state.update(Action::SelectTab(Tab::Runs));
    state.update(Action::NewRun);
    let Overlay::RunForm(form) = &state.overlay else {
        panic!("n opens the form: {:?}", state.overlay);
    };
    assert_eq!(form.gpu_mode, GpuMode::None);
    let theme = gpudeck::config::Theme::builtin("dark").unwrap();
    let buf = render(&state, 100, 30);
    let (x, y) = find(&buf, "GPUs      none  (a CPU run · m: GPUs ticked)");
    assert_eq!(buf[(x + 10, y)].fg, theme.fg, "the choice reads as a value");
    assert_eq!(buf[(x + 16, y)].fg, theme.muted, "the keys are a hint");
    for c in "python train.py".chars() {
        state.update(Action::FilterInput(c));
    }
    let commands = state.update(Action::Confirm);
    let [Command::StartRun(spec)] = commands.as_slice() else {
        panic!("Enter starts the run: {commands:?} {:?}", state.overlay);
    };
    assert_eq!(spec.gpus, gpudeck::runs::GpuSelection::None);
}

#[test]
fn the_form_offers_a_count_of_free_gpus_and_none() {
    let mut state = runs_state();
    state.update(Action::SelectTab(Tab::Runs));
    state.update(Action::NewRun);
    for c in "python train.py".chars() {
        state.update(Action::FilterInput(c));
    }
    for _ in 0..6 {
        state.update(Action::NextTab);
    }
    state.update(Action::FilterInput('m'));
    state.update(Action::FilterBackspace);
    state.update(Action::FilterInput('2'));
    let buf = render(&state, 100, 30);
    let theme = gpudeck::config::Theme::builtin("dark").unwrap();
    let (x, y) = find(&buf, "count:2▏");
    assert_eq!(
        buf[(x, y)].bg,
        theme.selected_bg,
        "the focused field is marked"
    );
    assert!(!text(&buf).contains("[x] GPU"), "no GPU rows with a count");
    let commands = state.update(Action::Confirm);
    let [Command::StartRun(spec)] = commands.as_slice() else {
        panic!("Enter starts the run: {commands:?}");
    };
    assert_eq!(spec.gpus, gpudeck::runs::GpuSelection::Count(2));
}

#[test]
fn a_store_of_long_runs_is_summarised_a_bounded_amount_per_look_newest_first() {
    let data = tempfile::tempdir().unwrap();
    let rows: Vec<_> = (1..=6000u64)
        .map(|s| (T0 + s * 10, 0, 50, 1, 100.0))
        .collect();
    for id in [
        "20270115-080000-a-0001",
        "20270115-090000-b-0002",
        "20270115-100000-c-0003",
    ] {
        finished(data.path(), id, &[0]).metrics(&rows);
    }
    let size = std::fs::metadata(data.path().join("runs/20270115-080000-a-0001/metrics.csv"))
        .unwrap()
        .len();
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher =
        Watcher::new(RunStore::new(data.path()), tx).with_summary_budget(size * 2 / 3);
    let summarised = |rx: &mut mpsc::Receiver<RunsUpdate>| -> Vec<bool> {
        match drain(rx).pop() {
            Some(RunsUpdate::Listed { runs, .. }) => {
                runs.iter().map(|r| r.summary.is_some()).collect()
            }
            other => panic!("no listing: {other:?}"),
        }
    };
    assert!(watcher.tick());
    assert_eq!(
        summarised(&mut rx),
        [false, false, false],
        "half a file is not a summary"
    );
    assert!(watcher.tick());
    assert_eq!(
        summarised(&mut rx),
        [false, false, true],
        "the newest run first"
    );
    for _ in 0..4 {
        assert!(watcher.tick());
    }
    assert_eq!(summarised(&mut rx), [true, true, true]);
    // Read in pieces over several looks, each summary is the whole file's.
    assert!(watcher.tick());
    let Some(RunsUpdate::Listed { runs, .. }) = drain(&mut rx).pop() else {
        panic!("no listing");
    };
    for run in runs {
        let util = run
            .summary
            .and_then(|s| s.mean_util_pct())
            .expect("mean util");
        assert!((util - 50.0).abs() < 1e-6, "{}: {util}", run.id);
    }
}

/// The collector tells the dashboard which GPUs live runs and shells claim, when that changes
/// (and only then), so its suggestions of free GPUs leave them out.
#[test]
fn the_collector_sends_the_live_claims_when_they_change() {
    use gpudeck::claims::{Claim, Claims, Owner};
    use gpudeck::runs::SystemLiveness;
    let data = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.tick());
    let claimed = |updates: Vec<RunsUpdate>| -> Vec<Vec<Claim>> {
        updates
            .into_iter()
            .filter_map(|u| match u {
                RunsUpdate::Claimed(c) => Some(c),
                _ => None,
            })
            .collect()
    };
    assert!(claimed(drain(&mut rx)).is_empty(), "nothing claimed yet");

    let claims = Claims::new(data.path());
    let shell = Owner::Shell {
        name: "dev".into(),
        container: None,
    };
    claims
        .claim(&SystemLiveness, |_| {
            Ok::<_, ()>(((), Some(Claim::by_me(shell.clone(), vec!["GPU-6".into()]))))
        })
        .unwrap()
        .unwrap();
    assert!(watcher.tick());
    let sent = claimed(drain(&mut rx));
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0][0].owner, shell);
    assert!(watcher.tick());
    assert!(
        claimed(drain(&mut rx)).is_empty(),
        "unchanged: not sent again"
    );

    claims.release(&shell).unwrap();
    assert!(watcher.tick());
    assert_eq!(claimed(drain(&mut rx)), [Vec::<Claim>::new()]);
}

#[test]
fn a_container_run_waiting_for_the_engine_says_so_in_the_detail() {
    let data = tempfile::tempdir().unwrap();
    let run = FakeRun::write(
        data.path(),
        &RunFacts {
            id: "20270115-090000-vit-00cc",
            state: "running",
            gpus: &[0],
            ranks: 1,
            started_ms: T0,
            ended_ms: None,
            exit_code: None,
            supervised: true,
        },
    );
    // What the supervisor writes while the engine is away.
    let path = run.dir.join("run.json");
    let mut rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    rec["container"] = serde_json::json!({
        "engine": "unix:///var/run/docker.sock",
        "image_id": "sha256:00",
        "network": "bridge",
        "gpu_request": "none",
        "engine_away": {"since_ms": T0 + 60_000, "detail": "Docker is not reachable"},
    });
    std::fs::write(&path, rec.to_string()).unwrap();
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.tick());
    let mut state = demo_state("gpus=4,seed=42,frozen=120", 2);
    state.now = (T0 / 1000) as i64 + 75;
    for update in drain(&mut rx) {
        state.apply_runs(update);
    }
    state.update(Action::SelectTab(Tab::Runs));
    let screen = text(&render(&state, 80, 30));
    assert!(
        screen.contains("⚠ The Docker Engine went away 15s ago; the containers run on."),
        "{screen}"
    );
    assert!(
        screen.contains("gpudeck reconnects by itself. Check it: `systemctl status docker`."),
        "{screen}"
    );
    assert_eq!(state.runs.runs[0].state, RunState::Running);
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The collector's listing and the Runs tab drawn from it, at 100x30.
fn listed_and_drawn(data: &std::path::Path) -> (Vec<RunsUpdate>, String) {
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data), tx);
    assert!(watcher.tick());
    let updates = drain(&mut rx);
    let mut state = demo_state("gpus=4,seed=42,frozen=120", 2);
    state.update(Action::SelectTab(Tab::Runs));
    for update in updates.clone() {
        state.apply_runs(update);
    }
    let screen = text(&render(&state, 100, 30));
    (updates, screen)
}

fn listing(updates: &[RunsUpdate]) -> (Vec<gpudeck::runs::watch::RunRow>, Vec<String>) {
    updates
        .iter()
        .find_map(|u| match u {
            RunsUpdate::Listed { runs, warnings } => Some((runs.clone(), warnings.clone())),
            _ => None,
        })
        .expect("a listing")
}

#[test]
fn a_lost_run_stops_counting_at_its_last_evidence_in_the_tab() {
    let data = tempfile::tempdir().unwrap();
    let started = now_ms() - 200_000;
    let run = FakeRun::write(
        data.path(),
        &RunFacts {
            id: "20261125-000000-lost-0001",
            state: "running",
            gpus: &[0],
            ranks: 1,
            started_ms: started,
            ended_ms: None,
            exit_code: None,
            supervised: false,
        },
    );
    let rows: Vec<_> = (1..=15u64)
        .map(|s| (started + s * 1000, 0, 90, 10, 300.0))
        .collect();
    run.metrics(&rows);
    run.log(0, "stdout", "step=1\n");
    let written = std::time::UNIX_EPOCH + std::time::Duration::from_millis(started + 20_000);
    std::fs::File::options()
        .append(true)
        .open(run.dir.join("rank-0.stdout.log"))
        .unwrap()
        .set_modified(written)
        .unwrap();
    let (updates, _) = listed_and_drawn(data.path());
    let (runs, _) = listing(&updates);
    assert_eq!(runs[0].state, RunState::Lost);
    assert_eq!(
        runs[0].ended_ms,
        Some(started + 20_000),
        "its last log write"
    );
    let summary = runs[0].summary.as_ref().expect("a summary");
    assert_eq!(
        summary.ended_ms,
        (started + 15_000) as i64,
        "its last sample"
    );
    assert_eq!(summary.busy_ratio, Some(1.0), "{summary:?}");
}

#[test]
fn a_damaged_run_and_a_bad_metrics_line_are_named_in_the_tab_as_in_the_cli() {
    let data = tempfile::tempdir().unwrap();
    let good = finished(data.path(), "20270115-080000-train-0001", &[0]);
    let rows: Vec<_> = (1..=6u64)
        .map(|s| (T0 + s * 1000, 0, 50, 1, 100.0))
        .collect();
    good.metrics(&rows[..3]);
    std::fs::OpenOptions::new()
        .append(true)
        .open(good.dir.join("metrics.csv"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"1800000003500,0,GPU-0,lots,,,,,\n"))
        .unwrap();
    good.metrics(&rows[3..]);
    let damaged = finished(data.path(), "20270115-090000-train-0002", &[1]);
    let record = damaged.dir.join("run.json");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, &text[..text.len() / 2]).unwrap();

    let (updates, screen) = listed_and_drawn(data.path());
    let (runs, warnings) = listing(&updates);
    assert_eq!(runs.len(), 1);
    // The words `gpudeck runs` and `gpudeck export` print.
    let run = RunStore::new(data.path()).find(&good.id).unwrap();
    let read = run.read_metrics().unwrap().expect("metrics");
    assert_eq!(read.rows.len(), 6);
    let said = run.skipped_text(&read.skipped).expect("a bad line");
    assert!(said.contains("1 bad line skipped (the first: metrics line 5, column `util_pct`"));
    assert!(warnings.contains(&said), "{warnings:?}");
    let refused = RunStore::new(data.path()).find(&damaged.id).unwrap_err();
    assert!(warnings.contains(&refused.to_string()), "{warnings:?}");
    assert!(refused.to_string().contains("is damaged"), "{refused}");
    let flat = screen.replace('\n', " ");
    assert!(screen.contains("2 warnings"), "{screen}");
    assert!(flat.contains("train-0002/run.json is damaged"), "{screen}");

    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.apply(RunsCommand::Focus(Some(good.id.clone()))));
    let detail = drain(&mut rx)
        .into_iter()
        .find_map(|u| match u {
            RunsUpdate::Detail(d) => Some(d),
            _ => None,
        })
        .expect("detail");
    assert_eq!(detail.metrics_error.as_deref(), Some(said.as_str()));
    assert_eq!(detail.gpus[0].util_pct.len(), 6);
}

#[test]
fn an_unreadable_store_is_an_error_in_the_tab_not_no_runs() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("runs"), "not a directory").unwrap();
    let (_, screen) = listed_and_drawn(data.path());
    let flat = screen.replace('\n', " ");
    assert!(!screen.contains("No training runs yet"), "{screen}");
    assert!(flat.contains("cannot be read"), "{screen}");
}

#[test]
fn a_deleted_rank_log_is_named_in_the_tab() {
    let data = tempfile::tempdir().unwrap();
    let run = finished(data.path(), "20270115-080000-train-0001", &[0]);
    // Its supervisor started rank 0 (so created its logs); they have since been deleted.
    let path = run.dir.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["ranks"][0]["pid"] = 4242.into();
    std::fs::write(&path, record.to_string()).unwrap();
    let (tx, mut rx) = mpsc::channel(64);
    let mut watcher = Watcher::new(RunStore::new(data.path()), tx);
    assert!(watcher.apply(RunsCommand::FollowLogs {
        id: run.id.clone(),
        rank: 0
    }));
    let chunk = drain(&mut rx)
        .into_iter()
        .find_map(|u| match u {
            RunsUpdate::Log(c) => Some(c),
            _ => None,
        })
        .expect("the log pane's first lines");
    let gone = |stream: &str| {
        (
            true,
            format!(
                "{} is gone: it was deleted or moved after the rank started, and its output with it",
                run.dir.join(format!("rank-0.{stream}.log")).display()
            ),
        )
    };
    assert_eq!(chunk.lines, vec![gone("stdout"), gone("stderr")]);
    // Said once.
    assert!(watcher.tick());
    assert!(!drain(&mut rx)
        .iter()
        .any(|u| matches!(u, RunsUpdate::Log(_))));
}

#[test]
fn a_gpu_that_fell_off_the_bus_shows_in_the_runs_detail() {
    let data = tempfile::tempdir().unwrap();
    let run = finished(data.path(), "20270115-080000-train-0001", &[0, 1]);
    let rows: Vec<_> = (1..=60u64)
        .flat_map(|s| {
            [
                (T0 + s * 1000, 0, 80, 10, 300.0),
                (T0 + s * 1000, 1, 80, 10, 300.0),
            ]
        })
        .collect();
    run.metrics(&rows);
    let path = run.dir.join("run.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    record["lost_gpus"] = serde_json::json!([{"index": 1, "uuid": "GPU-1", "at_ms": T0 + 42_000}]);
    std::fs::write(&path, record.to_string()).unwrap();
    let (updates, screen) = listed_and_drawn(data.path());
    let (runs, _) = listing(&updates);
    let lost = &runs[0].summary.as_ref().expect("a summary").lost_gpus;
    assert_eq!((lost[0].index, lost[0].at_ms), (1, T0 + 42_000));
    assert!(
        screen.contains("GPU 1 fell off the bus 42s into the run"),
        "{screen}"
    );
}

/// `gpudeck runs` and the Runs tab are twins: the same runs in the same order (newest first),
/// the same words for how long each ran, and a run without GPUs says `none` under GPUS in both.
#[test]
fn the_cli_and_the_tab_list_the_same_runs_newest_first() {
    let dirs = support::Dirs::new();
    let data = dirs.root.path().join("data");
    let ids = [
        ("20261125-000000-train-0001", T0, &[0u32, 1][..]),
        ("20261125-000100-train-0002", T0 + 60_000, &[][..]),
        ("20261125-000200-train-0003", T0 + 120_000, &[2][..]),
    ];
    // Written out of order: the listing's order is the runs' own, not the directory's.
    for (id, started, gpus) in [ids[1], ids[2], ids[0]] {
        FakeRun::write(
            &data,
            &RunFacts {
                id,
                state: "succeeded",
                gpus,
                ranks: 1,
                started_ms: started,
                ended_ms: Some(started + 90_000),
                exit_code: Some(0),
                supervised: false,
            },
        );
    }
    let newest_first: Vec<&str> = ids.iter().rev().map(|(id, _, _)| *id).collect();

    let (updates, screen) = listed_and_drawn(&data);
    let mut state = demo_state("gpus=4,seed=42,frozen=120", 2);
    for update in updates {
        state.apply_runs(update);
    }
    let in_tab: Vec<&str> = state.runs.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(in_tab, newest_first);
    let drawn: Vec<usize> = ["train-0003", "train-0002", "train-0001"]
        .iter()
        .map(|short| {
            screen
                .find(short)
                .unwrap_or_else(|| panic!("{short}: {screen}"))
        })
        .collect();
    assert!(drawn.windows(2).all(|w| w[0] < w[1]), "{screen}");
    let cpu_row = screen
        .lines()
        .find(|l| l.contains("train-0002"))
        .unwrap_or_default();
    assert!(cpu_row.contains(" none "), "{screen}");
    assert!(cpu_row.contains(" 1m30s "), "{screen}");

    let out = dirs
        .gpudeck("")
        .args(["runs"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::stderr(&out));
    let table = support::stdout(&out);
    let in_cli: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(in_cli, newest_first, "{table}");
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let gpus_at = header
        .iter()
        .position(|h| *h == "GPUS")
        .expect("a GPUS column");
    let gpus: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().nth(gpus_at).unwrap_or_default())
        .collect();
    assert_eq!(gpus, ["2", "none", "0,1"], "{table}");
    let duration_at = header
        .iter()
        .position(|h| *h == "DURATION")
        .expect("DURATION");
    assert!(
        table
            .lines()
            .skip(1)
            .all(|l| l.split_whitespace().nth(duration_at) == Some("1m30s")),
        "{table}"
    );

    let out = dirs.gpudeck("").args(["runs", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("runs --json");
    let in_json: Vec<&str> = doc["runs"]
        .as_array()
        .expect("runs[]")
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(in_json, newest_first);
}
