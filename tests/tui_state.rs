//! `AppState::update`: actions in, state and commands out, no terminal and no async.

mod support;

use gpudeck::app::action::{Action, Command, Tab};
use gpudeck::app::state::{AppState, Confirmation, GpuStatus, Overlay};
use gpudeck::config::{Config, GraphMetric, ProcessSort};
use gpudeck::gpu::collector::GpuUpdate;
use gpudeck::gpu::GpuError;
use gpudeck::host::KillSignal;
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
        Tab::Runs,
        "the last tab, going backwards from the first"
    );
    s.update(Action::PrevTab);
    assert_eq!(s.tab, Tab::Doctor);
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
    s.update(Action::CycleSort);
    assert_eq!(s.processes.sort, ProcessSort::Pid);
    s.update(Action::ReverseSort);
    let pids: Vec<_> = s.visible_processes().iter().map(|p| p.pid).collect();
    assert!(pids.windows(2).all(|w| w[0] <= w[1]), "{pids:?}");
    let gpu = s.visible_processes()[0].gpu_index;
    s.update(Action::StartFilter);
    for c in format!("gpu:{gpu}").chars() {
        s.update(Action::FilterInput(c));
    }
    s.update(Action::FilterDone);
    assert!(!s.processes.editing_filter);
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
    assert_eq!(s.processes.filter, "gpu:1");
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
    assert_eq!(
        s.update(Action::Confirm),
        vec![Command::SignalProcess {
            pid,
            signal: KillSignal::Term
        }]
    );
    s.apply_signal_result(pid, KillSignal::Term, Ok(()));
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
        7,
        KillSignal::Term,
        Err("process 7 has already exited".into()),
    );
    assert!(s
        .status
        .as_ref()
        .is_some_and(|m| m.is_error && m.text.contains("already exited")));
    assert!(!s.terminated.contains(&7));
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
