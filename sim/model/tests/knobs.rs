//! Each fault-injection knob changes exactly what it says.

use gpudeck_sim_model::{
    reason, Metric, NvLinkRemote, Profile, SimRemappedRows, SimSpec, Simulation,
};

fn sim(s: &str) -> Simulation {
    Simulation::new(SimSpec::parse(s).expect("valid spec"))
}

#[test]
fn unsupported_metrics_and_profile_gaps() {
    let s = sim("unsupported=power;temperature");
    assert!(!s.is_supported(Metric::Power));
    assert!(!s.is_supported(Metric::Temperature));
    assert!(s.is_supported(Metric::Utilization));
    assert!(!s.is_supported(Metric::Fan), "SXM boards report no fan");
    assert!(s.is_supported(Metric::NvLink) && s.is_supported(Metric::Ecc));

    let pcie = sim("profile=h100-pcie");
    assert!(!pcie.is_supported(Metric::NvLink) && !pcie.is_supported(Metric::Fan));
    assert_eq!(pcie.nvlink_count(), 0);
    assert_eq!(pcie.nvlink_remote(0, 0), None);
    assert_eq!(pcie.device(0).map(|d| d.power_limit_mw), Some(350_000));

    let geforce = sim("profile=rtx4090");
    assert!(!geforce.is_supported(Metric::Ecc) && !geforce.is_supported(Metric::Mig));
    assert!(geforce.is_supported(Metric::Fan));

    let a100 = sim("profile=a100-pcie");
    assert_eq!(a100.device(0).map(|d| d.compute_capability), Some((8, 0)));
    assert!(a100.is_supported(Metric::Mig) && !a100.is_supported(Metric::NvLink));
}

#[test]
fn bridges_join_pcie_cards_directly() {
    let s = sim("gpus=4,profile=a100-pcie,bridge=0-1:12;2-3:4");
    assert!(s.is_supported(Metric::NvLink));
    assert_eq!(s.nvlink_count(), 12);
    assert_eq!(s.device(0).map(|d| d.nvlink_version), Some(4), "NVLink 3.0");
    assert_eq!(s.nvlink_remote(0, 11), Some(NvLinkRemote::Gpu(1)));
    assert_eq!(s.nvlink_remote(1, 0), Some(NvLinkRemote::Gpu(0)));
    assert_eq!(s.nvlink_remote(2, 3), Some(NvLinkRemote::Gpu(3)));
    assert_eq!(
        s.nvlink_remote(2, 4),
        None,
        "only 4 of its 12 links are bridged"
    );
    let unbridged = sim("gpus=4,profile=h100-pcie,bridge=0-1:12");
    assert_eq!(unbridged.nvlink_remote(2, 0), None);
}

#[test]
fn bridges_are_checked() {
    for (s, words) in [
        ("bridge=0-1:12", "profile=h100-pcie"),
        ("profile=rtx4090,gpus=2,bridge=0-1:4", "no NVLink connector"),
        ("profile=h100-pcie,gpus=2,bridge=0-2:4", "out of range"),
        (
            "profile=h100-pcie,gpus=2,bridge=0-0:4",
            "two different GPUs",
        ),
        (
            "profile=h100-pcie,gpus=3,bridge=0-1:8;0-2:8",
            "GPU 0 is given 16",
        ),
        ("profile=h100-pcie,gpus=2,bridge=0-1", "GPU-GPU:LINKS"),
    ] {
        let e = SimSpec::parse(s).expect_err(s);
        assert!(e.contains("bridge") && e.contains(words), "{s}: {e}");
    }
}

#[test]
fn lost_gpus_are_reported() {
    let s = sim("lost=3;5");
    assert!(s.is_lost(3) && s.is_lost(5));
    assert!(!s.is_lost(0));
}

#[test]
fn pcie_downgrade_drops_the_link() {
    let s = sim("downgrade=1");
    let down = s.sample(1, 100.0);
    assert_eq!((down.pcie_gen, down.pcie_width), (3, 8));
    let up = s.sample(0, 100.0);
    assert_eq!((up.pcie_gen, up.pcie_width), (5, 16));
}

#[test]
fn an_idle_geforce_rests_at_p8_and_gen1_and_works_at_p2_and_full_speed() {
    let s = sim("profile=rtx4090,gpus=4");
    let (mut idle, mut busy) = (0, 0);
    for i in 0..4 {
        for t in (0..1200).step_by(13) {
            let x = s.sample(i, f64::from(t));
            match x.pstate {
                8 => {
                    idle += 1;
                    assert_eq!((x.pcie_gen, x.pcie_width), (1, 16), "{x:?}");
                }
                2 => {
                    busy += 1;
                    assert_eq!((x.pcie_gen, x.pcie_width), (4, 16), "{x:?}");
                }
                p => panic!("P{p}: {x:?}"),
            }
        }
    }
    assert!(idle > 0 && busy > 0, "idle {idle}, busy {busy}");
    // Datacenter boards stay at P0 and full speed.
    let h100 = sim("gpus=4");
    for i in 0..4 {
        let x = h100.sample(i, 600.0);
        assert_eq!((x.pstate, x.pcie_gen, x.pcie_width), (0, 5, 16), "{x:?}");
    }
}

#[test]
fn throttles_set_their_reason_bits() {
    let s = sim("throttle=0:thermal;1:power;2:sw-slowdown");
    for t in [40.0, 100.0, 500.0] {
        let hot = s.sample(0, t);
        assert_ne!(hot.throttle_reasons & reason::HW_THERMAL_SLOWDOWN, 0);
        assert!(hot.temp_c >= 89, "{hot:?}");
        assert!(hot.sm_clock_mhz <= 1000, "{hot:?}");
        let capped = s.sample(1, t);
        assert_ne!(capped.throttle_reasons & reason::SW_POWER_CAP, 0);
        assert!(capped.power_mw >= 680_000, "{capped:?}");
        let slow = s.sample(2, t);
        assert_ne!(slow.throttle_reasons & reason::SW_THERMAL_SLOWDOWN, 0);
        assert_eq!(s.sample(3, t).throttle_reasons & 0x68, 0);
    }
}

#[test]
fn ecc_counts_are_injected() {
    let s = sim("ecc=2:5:1");
    let x = s.sample(2, 10.0);
    assert_eq!((x.ecc_corrected, x.ecc_uncorrected), (5, 1));
    assert_eq!(s.sample(0, 10.0).ecc_corrected, 0);
}

#[test]
fn extra_pids_join_their_gpu() {
    let s = sim("pids=6:1234;0:5678");
    let idle = s.processes(6, 50.0);
    assert_eq!(idle.len(), 1);
    assert_eq!(idle[0].pid, 1234);
    assert!(idle[0].name.is_empty() && idle[0].container.is_none());
    assert!(s.sample(6, 50.0).mem_used_bytes >= idle[0].used_memory_bytes);
    let busy = s.processes(0, 50.0);
    assert_eq!(busy.len(), 2);
    assert_eq!(busy.last().map(|p| p.pid), Some(5678));
}

#[test]
fn gpu_count_and_profile_knobs() {
    let s = sim("gpus=3,profile=a100-pcie");
    assert_eq!(s.device_count(), 3);
    assert_eq!(s.spec().profile, Profile::A100Pcie);
    assert!(s.device(2).is_some() && s.device(3).is_none());
    let none = sim("gpus=0");
    assert_eq!(none.device_count(), 0);
}

#[test]
fn row_remapping_follows_ecc_and_the_remap_knob() {
    let healthy = SimRemappedRows::default();
    let s = sim("gpus=4,ecc=0:5:2,remap=1:pending;2:failed;3:remapped");
    assert_eq!(
        s.remapped_rows(0),
        SimRemappedRows {
            uncorrectable: 2,
            pending: true,
            ..healthy
        },
        "each uncorrectable error waits for a row remap"
    );
    assert!(s.remapped_rows(1).pending && !s.remapped_rows(1).failure);
    assert_eq!(s.remapped_rows(1).uncorrectable, 1);
    assert!(s.remapped_rows(2).failure && !s.remapped_rows(2).pending);
    let done = s.remapped_rows(3);
    assert_eq!(
        (done.uncorrectable, done.pending, done.failure),
        (1, false, false)
    );
    assert_eq!(sim("gpus=2").remapped_rows(1), healthy);
}
