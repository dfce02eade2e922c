//! Simulated processes: start times, per-process shares of a GPU, and ending one as a kill does.

use gpudeck_sim_model::{SimSpec, Simulation, SIM_PID_BASE};

fn sim(spec: &str) -> Simulation {
    Simulation::new(SimSpec::parse(spec).expect("spec"))
}

#[test]
fn jobs_start_with_the_simulation_and_the_desktop_long_before() {
    let s = sim("gpus=4,seed=42,frozen=200,profile=rtx4090");
    let all: Vec<_> = (0..4).flat_map(|i| s.processes(i, 200.0)).collect();
    let desktop = all.iter().find(|p| p.graphics).expect("a display GPU");
    assert!(desktop.started_s < -86_400, "{desktop:?}");
    let notebook = all
        .iter()
        .find(|p| p.user == "carol")
        .expect("the notebook");
    assert!(
        (-90 * 60..=-20 * 60).contains(&notebook.started_s),
        "{notebook:?}"
    );
    let train = all
        .iter()
        .find(|p| p.name.starts_with("python train.py"))
        .expect("a job");
    assert_eq!(train.started_s, 0);
}

#[test]
fn shares_split_the_gpu_between_its_simulated_processes() {
    let s = sim("gpus=4,seed=42,frozen=200");
    let shared = s.process_utilization(1, 200.0);
    let util = s.sample(1, 200.0).util_gpu;
    assert_eq!(shared.len(), 2, "{shared:?}");
    assert_eq!(shared[0].sm, util * 85 / 100, "the main process takes most");
    assert_eq!(shared[1].sm, util - util * 85 / 100);
    assert!(shared.iter().all(|u| u.enc == 0 && u.dec == 0));
}

#[test]
fn an_ended_process_frees_its_memory_and_its_share() {
    let s = sim("gpus=4,seed=42,frozen=200");
    let before = s.sample(1, 200.0);
    let procs = s.processes(1, 200.0);
    let (main, rest) = (&procs[0], &procs[1]);
    assert!(
        !s.end_process(12),
        "a host pid is not the simulation's to end"
    );
    assert!(!s.end_process(SIM_PID_BASE), "a pid nothing runs under");
    assert!(s.end_process(main.pid));
    let after = s.sample(1, 200.0);
    assert_eq!(s.processes(1, 200.0), vec![rest.clone()]);
    assert_eq!(
        before.mem_used_bytes - after.mem_used_bytes,
        main.used_memory_bytes
    );
    assert_eq!(after.util_gpu, s.process_utilization(1, 200.0)[0].sm);
    assert!(after.util_gpu < before.util_gpu);
    assert!(!s.end_process(main.pid), "already ended");
    assert!(s
        .process_utilization(1, 200.0)
        .iter()
        .all(|u| u.pid != main.pid));
}
