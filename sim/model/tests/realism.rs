//! The default demo machine looks like a real 8x H100 SXM box with a plausible workload.

use gpudeck_sim_model::{
    reason, NvLinkRemote, Phase, Profile, Role, SimSpec, Simulation, TopoLevel, SIM_PID_BASE,
};

const MIB: u64 = 1024 * 1024;

fn default_sim() -> Simulation {
    Simulation::new(SimSpec::default())
}

#[test]
fn h100_sxm_static_facts_match_a_real_board() {
    let s = default_sim();
    assert_eq!(s.device_count(), 8);
    let d = s.device(0).expect("gpu 0");
    assert_eq!(d.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(d.memory_total_bytes, 81559 * MIB);
    assert_eq!(d.memory_reserved_bytes, 480 * MIB);
    assert_eq!(d.power_limit_mw, 700_000);
    assert_eq!(d.max_sm_clock_mhz, 1980);
    assert_eq!(d.max_mem_clock_mhz, 2619);
    assert_eq!((d.pcie_max_gen, d.pcie_max_width), (5, 16));
    assert_eq!(d.num_fans, 0);
    assert_eq!(d.compute_capability, (9, 0));
    assert_eq!(d.architecture, "Hopper");
    assert_eq!(d.pci_device_id, 0x2330_10DE);
    assert!(d.ecc_enabled && d.persistence && !d.mig_enabled);
    assert_eq!(d.pci_bus_id, "00000000:18:00.0");
    assert_eq!(
        s.device(7).map(|d| d.pci_bus_id.as_str()),
        Some("00000000:DB:00.0")
    );
}

#[test]
fn uuids_and_bus_ids_are_well_formed_and_unique() {
    let s = default_sim();
    let mut uuids = Vec::new();
    for i in 0..8 {
        let d = s.device(i).expect("device");
        let u = &d.uuid;
        assert_eq!(u.len(), 40, "{u}");
        assert!(u.starts_with("GPU-"));
        let groups: Vec<usize> = u[4..].split('-').map(str::len).collect();
        assert_eq!(groups, vec![8, 4, 4, 4, 12], "{u}");
        assert_eq!(d.pci_bus_id.len(), 16);
        uuids.push(u.clone());
    }
    uuids.sort();
    uuids.dedup();
    assert_eq!(uuids.len(), 8);
}

#[test]
fn the_workload_mix_is_the_documented_one() {
    let s = default_sim();
    let t = 300.0;
    for i in 0..4 {
        assert!(matches!(s.role(i), Some(Role::Train { ranks: 4, .. })));
        assert_eq!(s.processes(i, t).len(), 1);
    }
    let shared = s.processes(4, t);
    assert_eq!(shared.len(), 2);
    assert_ne!(shared[0].user, shared[1].user);
    let served = s.processes(5, t);
    assert_eq!(served.len(), 1);
    let id = served[0].container.as_deref().expect("container id");
    assert_eq!(id.len(), 64);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    for i in 6..8 {
        assert_eq!(s.role(i), Some(Role::Idle));
        assert!(s.processes(i, t).is_empty());
        let idle = s.sample(i, t);
        assert_eq!((idle.util_gpu, idle.mem_used_bytes), (0, 0));
        assert_eq!(idle.throttle_reasons & reason::GPU_IDLE, reason::GPU_IDLE);
    }
}

#[test]
fn simulated_pids_can_not_collide_with_real_ones() {
    for seed in 0..50 {
        let s = Simulation::new(SimSpec {
            seed,
            ..SimSpec::default()
        });
        for i in 0..8 {
            for p in s.processes(i, 100.0) {
                assert!(p.pid >= SIM_PID_BASE, "{}", p.pid);
                assert!(!p.name.is_empty() && !p.user.is_empty());
            }
        }
    }
}

#[test]
fn steady_training_runs_hot_and_busy() {
    let s = default_sim();
    let steady: Vec<_> = (60..1500)
        .map(|t| s.sample(0, f64::from(t)))
        .filter(|x| x.phase == Phase::Steady)
        .collect();
    assert!(steady.len() > 1000);
    for x in &steady {
        assert!((85..=99).contains(&x.util_gpu), "{x:?}");
        assert!(x.power_mw >= 450_000 && x.power_mw <= 700_000, "{x:?}");
        assert!(x.mem_used_bytes > 60 * 1024 * MIB, "{x:?}");
    }
    let capped = steady
        .iter()
        .filter(|x| x.throttle_reasons & reason::SW_POWER_CAP != 0);
    assert!(capped.count() > 20, "some steps hit the power cap");
    let dips = (60..1500).filter(|t| s.sample(0, f64::from(*t)).phase == Phase::DataLoad);
    assert!(dips.count() > 30, "data-loading dips happen");
}

#[test]
fn readings_stay_within_the_boards_limits() {
    for profile in Profile::ALL {
        let s = Simulation::new(SimSpec {
            profile,
            ..SimSpec::default()
        });
        for i in 0..8 {
            let d = s.device(i).expect("device").clone();
            for t in (0..3000).step_by(7) {
                let x = s.sample(i, f64::from(t));
                assert!(x.util_gpu <= 100 && x.util_mem <= 100);
                assert!(x.mem_used_bytes + x.mem_reserved_bytes <= d.memory_total_bytes);
                assert!(x.power_mw <= d.power_limit_mw, "{profile:?} {x:?}");
                assert!(
                    x.temp_c > 20 && x.temp_c < d.temp_slowdown_c,
                    "{profile:?} {x:?}"
                );
                assert!(x.sm_clock_mhz <= d.max_sm_clock_mhz);
                assert!(x.mem_clock_mhz <= d.max_mem_clock_mhz);
                assert!(x.fan_percent <= 100);
                assert!(x.pcie_gen <= d.pcie_max_gen);
            }
        }
    }
}

#[test]
fn memory_follows_the_processes() {
    let s = default_sim();
    for i in 0..8 {
        for t in [5.0, 20.0, 200.0] {
            let procs: u64 = s.processes(i, t).iter().map(|p| p.used_memory_bytes).sum();
            let used = s.sample(i, t).mem_used_bytes;
            assert!(used >= procs && used <= procs + 16 * MIB, "gpu {i} t {t}");
        }
    }
    let early = s.sample(0, 2.0).mem_used_bytes;
    let late = s.sample(0, 200.0).mem_used_bytes;
    assert!(
        early < 2 * 1024 * MIB && late > 60 * 1024 * MIB,
        "{early} {late}"
    );
}

#[test]
fn temperature_lags_the_load() {
    let s = default_sim();
    let cold = s.sample(0, 0.0).temp_c;
    let warm = s.sample(0, 200.0).temp_c;
    assert!(cold < 40 && warm > 50, "{cold} {warm}");
}

#[test]
fn dgx_topology_and_nvlinks() {
    let s = default_sim();
    assert_eq!(s.topology(0, 1), TopoLevel::Single);
    assert_eq!(s.topology(2, 3), TopoLevel::Single);
    assert_eq!(s.topology(0, 3), TopoLevel::Node);
    assert_eq!(s.topology(1, 6), TopoLevel::System);
    assert_eq!(s.topology(2, 2), TopoLevel::Internal);
    assert_eq!(s.topology(1, 6).nvml_value(), 50);
    assert_eq!(s.device(3).map(|d| d.cpu_socket), Some(0));
    assert_eq!(s.device(4).map(|d| d.cpu_socket), Some(1));
    assert_eq!(s.nvlink_count(), 18);
    // An HGX H100 8-GPU board: every NVLink of every GPU ends at an NVSwitch.
    for a in 0..8 {
        for l in 0..18 {
            assert!(
                matches!(s.nvlink_remote(a, l), Some(NvLinkRemote::Switch(_))),
                "GPU {a} link {l}: {:?}",
                s.nvlink_remote(a, l)
            );
        }
    }
    assert_eq!(s.nvlink_remote(0, 18), None);
    let affinity = s.cpu_affinity(4);
    assert_eq!(affinity.len(), 112);
    assert_eq!(affinity[0], 56);
}

#[test]
fn geforce_desktop_has_a_display_and_fans() {
    let s = Simulation::new(SimSpec::parse("profile=rtx4090,gpus=2").expect("spec"));
    let d = s.device(0).expect("gpu 0");
    assert_eq!(d.name, "NVIDIA GeForce RTX 4090");
    assert!(d.display_active && !d.ecc_enabled && d.serial.is_none());
    assert!(d.num_fans > 0);
    let graphics = s
        .processes(0, 100.0)
        .into_iter()
        .filter(|p| p.graphics)
        .count();
    assert_eq!(graphics, 2);
    let busy = s.sample(0, 200.0);
    assert!(busy.fan_percent >= 30 && busy.pstate == 2, "{busy:?}");
    assert_eq!(s.topology(0, 1), TopoLevel::HostBridge);
}
