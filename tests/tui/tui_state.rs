//! `AppState::update`: actions in, state and commands out, no terminal and no async.

use crate::support;

use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::state::{AppState, Confirmation, GpuStatus, Overlay};
use gpudeck::config::{Config, GraphMetric, ProcessSort};
use gpudeck::gpu::collector::GpuUpdate;
use gpudeck::gpu::{GpuError, GpuProcess};
use gpudeck::host::{
    FakeProcessTable, HostError, KillSignal, ProcessDetails, ProcessIdentity, ProcessTable,
    ProcessTarget,
};
use support::demo::demo_state;

const SPEC: &str = "gpus=4,seed=42,frozen=120";

#[test]
fn tabs_cycle_both_ways_and_jump() {
    let mut s = demo_state(SPEC, 1);
    assert_eq!(s.tab, Tab::Gpus);
    s.update(Action::NextTab);
    assert_eq!(s.tab, Tab::Processes);
    s.update(Action::PrevTab);
    s.update(Action::PrevTab);
    assert_eq!(
        s.tab,
        Tab::Services,
        "the last tab, going backwards from the first"
    );
    s.update(Action::PrevTab);
    assert_eq!(s.tab, Tab::Runs);
    s.update(Action::SelectTab(Tab::Gpus));
    assert_eq!(s.tab, Tab::Gpus);
}

#[test]
fn gpu_selection_is_clamped_to_the_gpus_present() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::Up);
    assert_eq!(s.selected_gpu, 0);
    for _ in 0..10 {
        s.update(Action::Down);
    }
    assert_eq!(s.selected_gpu, 3);
    s.update(Action::Top);
    assert_eq!(s.selected_gpu, 0);
    s.update(Action::Bottom);
    assert_eq!(s.selected_gpu, 3);
    s.update(Action::SelectRow(1));
    assert_eq!(s.selected_gpu, 1);
    s.update(Action::SelectRow(99));
    assert_eq!(s.selected_gpu, 1);
}

#[test]
fn history_is_bounded_by_its_capacity() {
    let mut config = Config::default();
    config.general.history_secs = 5;
    config.general.refresh_ms = 1000;
    let mut s = AppState::new(&config, "h".into(), false);
    support::demo::feed(&mut s, SPEC, 20);
    let GpuStatus::Ready(data) = &s.gpu else {
        panic!("ready")
    };
    assert_eq!(data.history[0].util.len(), 5);
    assert_eq!(data.history[0].util.capacity(), 5);
}

#[test]
fn a_failed_source_is_kept_for_the_view_to_explain() {
    let mut s = AppState::new(&Config::default(), "h".into(), false);
    s.apply_gpu(GpuUpdate::Failed(GpuError::DriverNotLoaded));
    assert!(matches!(
        s.gpu,
        GpuStatus::Failed(GpuError::DriverNotLoaded)
    ));
    // Keys still work with no GPUs at all.
    s.update(Action::Down);
    s.update(Action::NextTab);
    assert_eq!(s.selected_gpu, 0);
}

#[test]
fn processes_sort_and_filter() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::SelectTab(Tab::Processes));
    let all = s.visible_processes().len();
    assert!(all >= 2, "the demo has processes");
    let mem: Vec<_> = s
        .visible_processes()
        .iter()
        .map(|p| p.used_memory_bytes)
        .collect();
    assert!(
        mem.windows(2).all(|w| w[0] >= w[1]),
        "memory descending by default: {mem:?}"
    );
    for _ in 0..3 {
        s.update(Action::CycleSort);
    }
    assert_eq!(s.processes.sort, ProcessSort::Pid);
    let pids: Vec<_> = s.visible_processes().iter().map(|p| p.pid).collect();
    assert!(pids.windows(2).all(|w| w[0] <= w[1]), "{pids:?}");
    s.update(Action::ReverseSort);
    let pids: Vec<_> = s.visible_processes().iter().map(|p| p.pid).collect();
    assert!(pids.windows(2).all(|w| w[0] >= w[1]), "{pids:?}");
    let gpu = s.visible_processes()[0].gpu_index;
    s.update(Action::StartFilter);
    for c in format!("gpu:{gpu}").chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    assert!(!s.processes.filter.editing);
    assert!(s.visible_processes().iter().all(|p| p.gpu_index == gpu));
    s.update(Action::FilterClear);
    assert_eq!(s.visible_processes().len(), all);
}

#[test]
fn enter_on_a_gpu_lists_its_processes() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::Down);
    s.update(Action::ShowGpuProcesses);
    assert_eq!(s.tab, Tab::Processes);
    assert_eq!(s.processes.filter.text, "gpu:1");
}

#[test]
fn kill_asks_first_then_sends_term_then_kill() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::SelectTab(Tab::Processes));
    s.update(Action::Down);
    let pid = s.processes.selected_pid.expect("a process is selected");
    assert!(
        s.update(Action::KillSelected).is_empty(),
        "nothing is sent before confirming"
    );
    assert!(matches!(
        s.overlay,
        Overlay::Confirm(Confirmation {
            command: Command::SignalProcess {
                signal: KillSignal::Term,
                ..
            },
            ..
        })
    ));
    let start_ticks = selected(&s).identity.map(|i| i.start_ticks);
    assert!(start_ticks.is_some(), "the start time is kept");
    assert_eq!(
        s.update(Action::Confirm),
        vec![Command::SignalProcess {
            pid,
            start_ticks,
            signal: KillSignal::Term
        }]
    );
    s.apply_signal_result(ProcessTarget { pid, start_ticks }, KillSignal::Term, Ok(()));
    s.update(Action::KillSelected);
    assert!(matches!(
        s.overlay,
        Overlay::Confirm(Confirmation {
            command: Command::SignalProcess {
                signal: KillSignal::Kill,
                ..
            },
            ..
        })
    ));
    assert!(s.update(Action::Cancel).is_empty(), "cancel sends nothing");
    assert_eq!(s.overlay, Overlay::None);
}

fn selected(s: &AppState) -> GpuProcess {
    let pid = s.processes.selected_pid.expect("a process is selected");
    let found = s.visible_processes().into_iter().find(|p| p.pid == pid);
    found.expect("the selected process is listed").clone()
}

/// The state's samples with `edit` applied, fed back as a new sample.
fn resample(s: &mut AppState, edit: impl Fn(&mut Vec<GpuProcess>)) {
    let mut samples = s.data().unwrap().samples.clone();
    for sample in &mut samples {
        edit(&mut sample.processes);
    }
    s.apply_gpu(GpuUpdate::Sampled(samples));
}

#[test]
fn a_pid_reused_between_confirm_and_signal_is_not_signalled() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::SelectTab(Tab::Processes));
    s.update(Action::Down);
    let chosen = selected(&s);
    s.update(Action::KillSelected);
    let commands = s.update(Action::Confirm);
    let [Command::SignalProcess {
        pid,
        start_ticks,
        signal,
    }] = commands.as_slice()
    else {
        panic!("{commands:?}");
    };
    let target = ProcessTarget {
        pid: *pid,
        start_ticks: *start_ticks,
    };
    assert_eq!(target, chosen.target());
    // Meanwhile the process exited and its PID went to someone else's new process.
    let newcomer = |start_ticks| ProcessDetails {
        pid: *pid,
        user: Some("alice".into()),
        command: Some("python serve.py".into()),
        container: None,
        identity: Some(ProcessIdentity {
            start_ticks,
            started_unix_ms: None,
            uid: Some(1001),
            pgid: *pid,
            session: *pid,
        }),
    };
    let table = FakeProcessTable::new([newcomer(start_ticks.unwrap() + 1)]);
    let refused = table.signal_exact(target, *signal).unwrap_err();
    assert!(matches!(refused, HostError::Replaced { .. }), "{refused}");
    assert!(
        refused.to_string().contains("nothing was sent"),
        "{refused}"
    );
    assert!(table.signals().is_empty(), "the newcomer got no signal");
    // The very process it was: signalled.
    let same = FakeProcessTable::new([newcomer(start_ticks.unwrap())]);
    same.signal_exact(target, *signal).unwrap();
    assert_eq!(same.signals(), [(*pid, KillSignal::Term)]);
    // A target without a start time is never signalled.
    let unknown = ProcessTarget {
        pid: *pid,
        start_ticks: None,
    };
    assert!(matches!(
        same.signal_exact(unknown, KillSignal::Kill),
        Err(HostError::Unidentified { .. }) | Err(HostError::Exited { .. })
    ));
}

#[test]
fn the_sigterm_mark_goes_with_its_process() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::SelectTab(Tab::Processes));
    s.update(Action::Down);
    let chosen = selected(&s);
    s.apply_signal_result(chosen.target(), KillSignal::Term, Ok(()));
    assert!(s.terminated.contains(&chosen));
    // A process under the same PID with another start time is a newcomer: asked politely.
    resample(&mut s, |ps| {
        for p in ps.iter_mut().filter(|p| p.pid == chosen.pid) {
            if let Some(id) = p.identity.as_mut() {
                id.start_ticks += 1;
            }
        }
    });
    assert!(s.terminated.is_empty(), "the mark went with the process");
    s.processes.selected_pid = Some(chosen.pid);
    s.update(Action::KillSelected);
    let Overlay::Confirm(c) = &s.overlay else {
        panic!("asks first");
    };
    assert!(
        matches!(
            c.command,
            Command::SignalProcess {
                signal: KillSignal::Term,
                ..
            }
        ),
        "{:?}",
        c.command
    );
    s.update(Action::Cancel);
    // Marked again, then gone from every GPU: forgotten.
    let now = selected(&s);
    s.apply_signal_result(now.target(), KillSignal::Term, Ok(()));
    assert!(!s.terminated.is_empty());
    resample(&mut s, |ps| ps.retain(|p| p.pid != chosen.pid));
    assert!(s.terminated.is_empty());
}

#[test]
fn a_process_without_a_start_time_is_not_offered_for_killing() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::SelectTab(Tab::Processes));
    resample(&mut s, |ps| ps.iter_mut().for_each(|p| p.identity = None));
    s.update(Action::Down);
    assert!(s.update(Action::KillSelected).is_empty());
    assert_eq!(s.overlay, Overlay::None);
    let status = s.status.clone().unwrap();
    assert!(status.is_error && status.text.contains("start time cannot be read"));
}

#[test]
fn read_only_refuses_to_kill() {
    let mut s = AppState::new(&Config::default(), "h".into(), true);
    support::demo::feed(&mut s, SPEC, 1);
    s.update(Action::SelectTab(Tab::Processes));
    s.update(Action::Down);
    assert!(s.update(Action::KillSelected).is_empty());
    assert_eq!(s.overlay, Overlay::None);
    assert!(s
        .status
        .as_ref()
        .is_some_and(|m| m.is_error && m.text.contains("read-only")));
}

#[test]
fn a_failed_signal_is_reported() {
    let mut s = demo_state(SPEC, 1);
    s.apply_signal_result(
        ProcessTarget {
            pid: 7,
            start_ticks: Some(1),
        },
        KillSignal::Term,
        Err("process 7 has already exited".into()),
    );
    assert!(s
        .status
        .as_ref()
        .is_some_and(|m| m.is_error && m.text.contains("already exited")));
    assert!(s.terminated.is_empty());
}

#[test]
fn graph_choices_cycle() {
    let mut s = demo_state(SPEC, 1);
    assert_eq!(s.graph, GraphMetric::Utilization);
    s.update(Action::CycleGraph);
    assert_eq!(s.graph, GraphMetric::Memory);
    s.update(Action::TogglePower);
    assert!(s.show_power);
}

#[test]
fn help_opens_and_any_key_closes_it() {
    let mut s = demo_state(SPEC, 1);
    s.update(Action::ToggleHelp);
    assert_eq!(s.overlay, Overlay::Help);
    s.update(Action::NextTab);
    assert_eq!(s.overlay, Overlay::None);
    assert_eq!(
        s.tab,
        Tab::Gpus,
        "the key that closed help did nothing else"
    );
}

/// The footer offers only keys that act now: with no GPU (none read yet, or the driver found
/// none) `c copy UUID` and `Enter processes` do nothing, nor do a service's keys with no
/// service or `kill` with no process; with GPUs and a selection they are offered.
#[test]
fn the_footer_offers_no_key_that_has_nothing_to_act_on() {
    use gpudeck::app::keymap::{bindings, footer_hints};
    let keymap = bindings();
    let offered = |s: &AppState| -> Vec<&str> {
        footer_hints(s, &keymap)
            .into_iter()
            .map(|(_, what)| what)
            .collect()
    };
    let mut none = AppState::new(&Config::default(), "testhost".into(), false);
    for (tab, idle) in [
        (Tab::Gpus, &["copy UUID", "processes", "power", "graph"][..]),
        (Tab::Topology, &["scroll links"][..]),
        (Tab::Processes, &["kill", "details"][..]),
        (Tab::Services, &["copy URL", "stop", "restart", "logs"][..]),
        (Tab::Runs, &["stop", "re-run", "logs"][..]),
        (Tab::Containers, &["stop", "remove", "inspect", "logs"][..]),
        (Tab::Doctor, &["scroll fix"][..]),
    ] {
        none.tab = tab;
        let hints = offered(&none);
        for what in idle {
            assert!(!hints.contains(what), "{tab:?} offers {what:?}: {hints:?}");
        }
        // What works without a selection stays.
        assert!(hints.contains(&"help"), "{tab:?}: {hints:?}");
    }
    none.tab = Tab::Runs;
    assert!(offered(&none).contains(&"new"));
    let mut s = demo_state(SPEC, 1);
    let hints = offered(&s);
    for what in ["copy UUID", "processes", "power", "graph"] {
        assert!(hints.contains(&what), "with GPUs: {hints:?}");
    }
    s.update(Action::SelectTab(Tab::Processes));
    assert!(offered(&s).contains(&"kill"), "{:?}", offered(&s));
}
