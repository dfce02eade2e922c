//! MIG, MPS and GPM in the model: the `mig=`, `mig-pending=` and `mps=` knobs, instance
//! layouts as real boards make them, processes per instance, and GPM metrics.

use gpudeck_sim_model::{
    MigWorkload, Phase, Profile, SimSpec, Simulation, GPM_ANY_TENSOR_UTIL, GPM_SM_UTIL,
    MIG_IDLE_MIB, MPS_SERVER, SIM_PID_BASE,
};

const MIB: u64 = 1024 * 1024;

fn sim(spec: &str) -> Simulation {
    Simulation::new(SimSpec::parse(spec).expect("spec"))
}

fn error_of(s: &str) -> String {
    SimSpec::parse(s).expect_err("should be rejected")
}

const BALANCED: &str = "gpus=2,frozen=200,mig=0:1g.10gb@serve/3g.40gb@train/2g.20gb@shared/1g.10gb";

#[test]
fn the_knob_takes_profiles_workloads_repeats_and_every_gpu() {
    let spec = SimSpec::parse("gpus=4,mig=*:7x1g.10gb;2:3g.40gb@train/4g.40gb").expect("spec");
    // The README's example.
    let readme = "mig=0:3g.40gb@train/2g.20gb@shared/1g.10gb@serve/1g.10gb;1:7x1g.10gb@serve,\
                  mig-pending=2:on";
    let r = sim(readme);
    assert_eq!(r.mig(1).map(|m| m.instances.len()), Some(7));
    assert!(r.mig(2).is_some_and(|m| !m.current && m.pending));
    assert_eq!(spec.mig_of(0).map(<[_]>::len), Some(7));
    let two = spec.mig_of(2).expect("GPU 2");
    assert_eq!(two[0].profile, "3g.40gb");
    assert_eq!(two[0].workload, MigWorkload::Train);
    assert_eq!(two[1].workload, MigWorkload::Idle);
    let spec = SimSpec::parse("gpus=2,mig=1:").expect("spec");
    assert_eq!(spec.mig_of(0), None);
    assert_eq!(spec.mig_of(1).map(<[_]>::len), Some(0));
}

#[test]
fn mixes_a_board_refuses_are_errors_that_say_why() {
    let e = error_of("mig=0:3g.40gb/3g.40gb/1g.10gb");
    assert!(
        e.contains("do not fit") && e.contains("8 memory slices"),
        "{e}"
    );
    let e = error_of("mig=0:5g.50gb");
    assert!(
        e.contains("5g.50gb") && e.contains("1g.10gb, 1g.10gb+me"),
        "{e}"
    );
    let e = error_of("profile=rtx4090,mig=0:1g.10gb");
    assert!(e.contains("cannot do MIG"), "{e}");
    let e = error_of("mig=0:1g.10gb@mine");
    assert!(e.contains("idle, train, shared, serve"), "{e}");
    let e = error_of("gpus=2,mig=2:1g.10gb");
    assert!(e.contains("out of range"), "{e}");
    let e = error_of("mig=0:1g.10gb,mps=0");
    assert!(e.contains("MPS on whole GPUs"), "{e}");
    let e = error_of("mig=0:,pids=0:1234");
    assert!(e.contains("no instance"), "{e}");
    let e = error_of("mig=0:,unsupported=mig");
    assert!(e.contains("unsupported=mig"), "{e}");
    let e = error_of("mig-pending=0:maybe");
    assert!(e.contains("GPU:on"), "{e}");
}

#[test]
fn instances_get_the_ids_placements_and_names_of_a_real_board() {
    let s = sim(BALANCED);
    let mig = s.mig(0).expect("H100 can do MIG");
    assert!(mig.current && mig.pending);
    assert!(s.device(0).expect("GPU 0").mig_enabled);
    // all-balanced: the 3g.40gb takes the upper half, the rest fill the lower half; MIG
    // device indices follow the GPU instance ids.
    let layout: Vec<(u32, &str, u32, u32)> = mig
        .instances
        .iter()
        .map(|i| (i.index, i.profile.name, i.gpu_instance_id, i.placement))
        .collect();
    assert_eq!(
        layout,
        vec![
            (0, "3g.40gb", 2, 4),
            (1, "2g.20gb", 3, 0),
            (2, "1g.10gb", 9, 2),
            (3, "1g.10gb", 10, 3)
        ]
    );
    let big = &mig.instances[0];
    assert_eq!(big.name, "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    assert_eq!(big.memory_total_bytes, 40448 * MIB);
    assert_eq!((big.profile.sm_count, big.compute_instance_id), (60, 0));
    assert_eq!(big.workload, MigWorkload::Train);
    let uuid = &big.uuid;
    assert!(uuid.starts_with("MIG-") && uuid.len() == 40, "{uuid}");
    assert_eq!(uuid.as_bytes()[18], b'5', "{uuid}");
    let uuids: std::collections::HashSet<_> = mig.instances.iter().map(|i| &i.uuid).collect();
    assert_eq!(uuids.len(), 4);
    assert_eq!(sim(BALANCED).mig(0), Some(mig), "deterministic");
    // GPU 1 is MIG-capable but whole.
    let whole = s.mig(1).expect("capable");
    assert!(!whole.current && !whole.pending && whole.instances.is_empty());
}

#[test]
fn pending_changes_wait_for_a_reset() {
    let s = sim("gpus=3,mig=0:7g.80gb;1:,mig-pending=0:off;2:on");
    let modes: Vec<(bool, bool)> = (0..3)
        .map(|i| s.mig(i).map(|m| (m.current, m.pending)).expect("capable"))
        .collect();
    assert_eq!(modes, vec![(true, false), (true, true), (false, true)]);
    assert!(s.mig(1).expect("GPU 1").instances.is_empty());
    assert!(s.processes(1, 100.0).is_empty(), "no instance, no process");
    assert!(!s.device(2).expect("GPU 2").mig_enabled);
}

#[test]
fn defaults_have_no_mig_and_geforce_none_at_all() {
    let s = sim("");
    for i in 0..8 {
        let mig = s.mig(i).expect("H100 can do MIG");
        assert!(!mig.current && !mig.pending && mig.instances.is_empty());
        assert!(s
            .processes(i, 300.0)
            .iter()
            .all(|p| p.instance.is_none() && !p.mps_client));
    }
    assert_eq!(sim("profile=rtx4090,gpus=1").mig(0), None);
}

#[test]
fn instances_run_their_workloads_with_memory_inside_the_slice() {
    let s = sim(BALANCED);
    let t = 200.0;
    let mig = s.mig(0).expect("mig");
    for inst in &mig.instances {
        let procs = s.instance_processes(0, inst.index, t);
        let ids = Some((inst.gpu_instance_id, 0));
        assert!(procs
            .iter()
            .all(|p| p.instance == ids && p.pid >= SIM_PID_BASE));
        let used = s.instance_memory_used(0, inst.index, t);
        let sum: u64 = procs.iter().map(|p| p.used_memory_bytes).sum();
        assert_eq!(used, sum + MIG_IDLE_MIB * MIB);
        assert!(used <= inst.memory_total_bytes);
        let expected = match inst.workload {
            MigWorkload::Idle => 0,
            MigWorkload::Train | MigWorkload::Serve => 1,
            MigWorkload::Shared => 2,
        };
        assert_eq!(procs.len(), expected, "{}", inst.profile.name);
    }
    let train = s.instance_processes(0, 0, t);
    assert!(train[0].name.starts_with("python train.py"));
    assert!(
        train[0].used_memory_bytes > 30 * 1024 * MIB,
        "a 40 GB slice mostly filled"
    );
    let serve = s.instance_processes(0, 3, t);
    assert!(serve.is_empty(), "the second 1g.10gb is idle");
    let all = s.processes(0, t);
    assert_eq!(all.len(), 4);
    let mut pids: Vec<u32> = all.iter().map(|p| p.pid).collect();
    pids.extend(s.processes(1, t).iter().map(|p| p.pid));
    let n = pids.len();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), n, "pids are unique across instances and GPUs");
    let gpu_used = s.sample(0, t).mem_used_bytes;
    let sum: u64 = (0..4).map(|k| s.instance_memory_used(0, k, t)).sum();
    assert_eq!(gpu_used, sum);
}

#[test]
fn the_gpu_draws_power_for_its_busy_instances() {
    let busy = sim("gpus=1,mig=0:7g.80gb@train");
    let idle = sim("gpus=1,mig=0:7g.80gb");
    let steady = (60..400)
        .find(|s| busy.sample(0, f64::from(*s)).phase == Phase::Steady)
        .expect("a steady second");
    let t = f64::from(steady);
    assert!(busy.sample(0, t).power_mw > 3 * idle.sample(0, t).power_mw);
    assert_eq!(idle.sample(0, t).phase, Phase::Idle);
    assert!(
        busy.process_utilization(0, t).is_empty(),
        "no per-process samples under MIG"
    );
}

#[test]
fn gpm_follows_the_load_on_hopper_only() {
    let s = sim("gpus=8,frozen=0");
    assert!(s.gpm_supported(0));
    assert!(!sim("profile=a100-pcie,gpus=1").gpm_supported(0));
    assert!(!sim("profile=rtx4090,gpus=1").gpm_supported(0));
    assert!(!sim("gpus=1,unsupported=gpm").gpm_supported(0));
    // GPU 0 trains, GPU 7 is idle; a minute of steady epoch.
    let train = s.gpm(0, None, 60.0, 120.0).expect("GPU 0");
    let sm = train.metric(GPM_SM_UTIL).expect("sm");
    assert!((70.0..=100.0).contains(&sm), "{sm}");
    assert!(sm <= train.graphics_util);
    let tensor = train.metric(GPM_ANY_TENSOR_UTIL).expect("tensor");
    assert!((30.0..sm).contains(&tensor), "{tensor}");
    assert!(train.dram_bw_util > 10.0 && train.pcie_rx_mib_s > 0.0);
    assert_eq!(s.gpm(7, None, 60.0, 120.0).expect("GPU 7").sm_util, 0.0);
    assert_eq!(s.gpm(0, None, 60.0, 120.0), Some(train), "deterministic");
    assert_eq!(
        s.gpm(0, Some(1), 60.0, 120.0),
        None,
        "no instances without MIG"
    );
    assert_eq!(train.metric(60), None, "NVLink metrics are not modelled");
}

#[test]
fn gpm_per_instance_adds_up_to_the_gpu() {
    let s = sim(BALANCED);
    let mig = s.mig(0).expect("mig");
    let whole = s.gpm(0, None, 100.0, 160.0).expect("GPU");
    let mut sm = 0.0;
    for inst in &mig.instances {
        let g = s
            .gpm(0, Some(inst.gpu_instance_id), 100.0, 160.0)
            .expect("instance");
        sm += g.sm_util * f64::from(inst.profile.compute_slices) / 7.0;
        if inst.workload == MigWorkload::Idle {
            assert_eq!(g.sm_util, 0.0);
        }
    }
    assert!(
        (sm - whole.sm_util).abs() < 1e-9,
        "{sm} vs {}",
        whole.sm_util
    );
    let train = s.gpm(0, Some(2), 100.0, 160.0).expect("3g.40gb");
    assert!(train.sm_util > 50.0, "{}", train.sm_util);
    assert_eq!(s.gpm(0, Some(5), 100.0, 160.0), None, "no GPU instance 5");
}

#[test]
fn ending_a_process_idles_its_instance() {
    let s = sim(BALANCED);
    let pid = s.instance_processes(0, 0, 200.0)[0].pid;
    assert!(s.gpm(0, Some(2), 100.0, 160.0).expect("before").sm_util > 0.0);
    assert!(s.end_process(pid));
    assert!(s.instance_processes(0, 0, 200.0).is_empty());
    assert_eq!(s.gpm(0, Some(2), 100.0, 160.0).expect("after").sm_util, 0.0);
    assert_eq!(s.instance_memory_used(0, 0, 200.0), MIG_IDLE_MIB * MIB);
}

#[test]
fn an_mps_server_holds_the_clients_of_its_gpu() {
    let s = sim("gpus=8,frozen=200,mps=4");
    let procs = s.processes(4, 200.0);
    assert_eq!(procs[0].name, MPS_SERVER);
    assert_eq!(procs[0].user, "root");
    assert!(!procs[0].mps_client && procs[0].is_mps_server());
    let clients: Vec<_> = procs.iter().filter(|p| p.mps_client).collect();
    assert_eq!(clients.len(), 2, "the fine-tune and the notebook");
    assert!(clients.iter().any(|p| p.user == "bob"));
    // The server's kernels are its clients': it takes no share of the GPU.
    let shares = s.process_utilization(4, 200.0);
    assert_eq!(
        shares.iter().find(|u| u.pid == procs[0].pid).map(|u| u.sm),
        Some(0)
    );
    assert!(s.processes(5, 200.0).iter().all(|p| !p.mps_client));
    // One server for every GPU it serves, as nvidia-smi lists the same pid on each.
    let both = sim("gpus=8,frozen=200,mps=3;4");
    assert_eq!(
        both.processes(3, 200.0)[0].pid,
        both.processes(4, 200.0)[0].pid
    );
}

#[test]
fn the_h200_profile_is_a_bigger_h100() {
    let s = sim("profile=h200,gpus=8,mig=0:1g.18gb/1g.18gb/2g.35gb/3g.71gb");
    let d = s.device(0).expect("GPU 0");
    assert_eq!(d.name, "NVIDIA H200");
    assert_eq!(d.profile, Profile::H200);
    assert_eq!(d.memory_total_bytes, 143_771 * MIB);
    assert_eq!(d.power_limit_mw, 700_000);
    assert_eq!(d.pci_device_id, 0x2335_10DE);
    assert_eq!(d.pci_bus, 0x18, "an HGX board like the DGX H100");
    let names: Vec<&str> = s
        .mig(0)
        .expect("mig")
        .instances
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(names[0], "NVIDIA H200 MIG 3g.71gb");
    assert_eq!(
        s.mig(0).expect("mig").instances[0].memory_total_bytes,
        71168 * MIB
    );
    assert!(s.gpm_supported(0));
    let e = error_of("profile=h200,bridge=0-1:4");
    assert!(e.contains("wired on the board"), "{e}");
}
