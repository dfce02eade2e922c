//! Xid injection and the health counters: knob parsing, and the hardware shapes each Xid
//! leaves behind (lost GPU, ECC and remapped rows, NVLink errors), PCIe replays, violations.

use gpudeck_sim_model::{SimSpec, SimXid, Simulation, Violation};

fn sim(spec: &str) -> Simulation {
    Simulation::new(SimSpec::parse(spec).expect(spec))
}

#[test]
fn xid_knob_parses_and_the_simulation_orders_by_time() {
    let spec = SimSpec::parse("xid=1:79@30;4:13@12.5;1:48@3").expect("spec");
    assert_eq!(
        spec.xids,
        vec![
            SimXid {
                gpu: 1,
                xid: 79,
                at: 30.0
            },
            SimXid {
                gpu: 4,
                xid: 13,
                at: 12.5
            },
            SimXid {
                gpu: 1,
                xid: 48,
                at: 3.0
            },
        ]
    );
    let s = Simulation::new(spec);
    let times: Vec<f64> = s.xids().iter().map(|x| x.at).collect();
    assert_eq!(times, vec![3.0, 12.5, 30.0]);
    let on_1_by_20: Vec<u64> = s.raised(1, 20.0).map(|x| x.xid).collect();
    assert_eq!(on_1_by_20, vec![48]);
}

#[test]
fn bad_xid_and_replay_knobs_say_what_to_write() {
    for (s, words) in [
        ("xid=1:79", "GPU:XID@SECONDS"),
        ("xid=79@3", "GPU:XID@SECONDS"),
        ("xid=1:0@3", "start at 1"),
        ("xid=1:79@-2", "seconds >= 0"),
        ("xid=1:x@2", "non-negative integer"),
        ("gpus=2,xid=2:79@1", "out of range"),
        ("replay=2", "GPU:COUNT"),
        ("gpus=2,replay=5:3", "out of range"),
    ] {
        let e = SimSpec::parse(s).expect_err(s);
        assert!(e.contains(words), "{s}: {e}");
    }
}

#[test]
fn xid_79_loses_the_gpu_from_its_time_on() {
    assert!(!sim("xid=1:79@30,frozen=29.5").is_lost(1));
    let after = sim("xid=1:79@30,frozen=30");
    assert!(after.is_lost(1));
    assert!(!after.is_lost(0));
}

#[test]
fn memory_xids_raise_uncorrected_ecc_and_leave_a_row_pending() {
    let s = sim("xid=2:48@10;3:94@10;4:95@10;5:13@10,frozen=20");
    for gpu in [2, 3, 4] {
        assert_eq!(s.ecc_at(gpu, 9.0), (0, 0), "GPU {gpu} before");
        assert_eq!(s.ecc_at(gpu, 10.0), (0, 1), "GPU {gpu} after");
        assert_eq!(s.sample(gpu, 20.0).ecc_uncorrected, 1);
        let rows = s.remapped_rows(gpu);
        assert!(
            rows.pending && !rows.failure && rows.uncorrectable == 1,
            "{rows:?}"
        );
    }
    // An application Xid touches no counter.
    assert_eq!(s.ecc_at(5, 20.0), (0, 0));
    assert!(!s.remapped_rows(5).pending);
    // Before its time the Xid has done nothing.
    let early = sim("xid=2:48@10,frozen=5");
    assert!(!early.remapped_rows(2).pending);
}

#[test]
fn xid_64_is_a_failed_remapping_that_stays_failed() {
    let s = sim("xid=0:63@5;1:64@5;2:48@5,remap=2:failed,frozen=6");
    assert!(s.remapped_rows(0).pending);
    assert!(s.remapped_rows(1).failure);
    let two = s.remapped_rows(2);
    assert!(two.failure && !two.pending, "{two:?}");
}

#[test]
fn xid_74_adds_nvlink_errors_to_one_active_link_per_event() {
    let s = sim("xid=3:74@10;3:74@20");
    let total = |t: f64| {
        (0..s.nvlink_count())
            .filter_map(|l| s.nvlink_errors(3, l, t))
            .fold((0, 0, 0, 0), |acc, e| {
                (
                    acc.0 + e.replay,
                    acc.1 + e.recovery,
                    acc.2 + e.crc_flit,
                    acc.3 + e.crc_data,
                )
            })
    };
    assert_eq!(total(5.0), (0, 0, 0, 0));
    let one = total(15.0);
    assert!(one.1 == 1 && one.0 > 0 && one.2 > 0 && one.3 > 0, "{one:?}");
    let two = total(25.0);
    assert_eq!(two, (one.0 * 2, 2, one.2 * 2, one.3 * 2));
    let hit: Vec<u32> = (0..s.nvlink_count())
        .filter(|l| s.nvlink_errors(3, *l, 25.0).is_some_and(|e| e.recovery > 0))
        .collect();
    assert_eq!(hit.len(), 2, "two bursts on two links: {hit:?}");
    // Other GPUs stay clean.
    assert_eq!(s.nvlink_errors(2, 0, 25.0).map(|e| e.recovery), Some(0));
}

#[test]
fn nvlink_errors_exist_only_on_active_links() {
    let s = sim("profile=h100-pcie,gpus=2,bridge=0-1:4,xid=0:74@1");
    let active: Vec<u32> = (0..s.nvlink_count())
        .filter(|l| s.nvlink_errors(0, *l, 5.0).is_some())
        .collect();
    assert_eq!(active, vec![0, 1, 2, 3]);
    let hits: u64 = active
        .iter()
        .filter_map(|l| s.nvlink_errors(0, *l, 5.0))
        .map(|e| e.recovery)
        .sum();
    assert_eq!(hits, 1);
}

#[test]
fn replay_knob_sets_the_pcie_replay_counter() {
    let s = sim("replay=2:40;5:3");
    assert_eq!(s.pcie_replays(2), 40);
    assert_eq!(s.pcie_replays(5), 3);
    assert_eq!(s.pcie_replays(0), 0);
}

#[test]
fn violation_time_follows_the_throttle() {
    let s = sim("throttle=0:power;1:thermal;2:sw-slowdown,gpus=8");
    let sec = 1_000_000_000;
    // Power-capped every second.
    assert_eq!(s.violation_ns(0, Violation::Power, 100.5), 100 * sec);
    assert_eq!(s.violation_ns(0, Violation::Thermal, 100.5), 0);
    // Held down by heat every second, never at the power cap.
    assert_eq!(s.violation_ns(1, Violation::Thermal, 100.5), 100 * sec);
    assert_eq!(s.violation_ns(1, Violation::Power, 100.5), 0);
    assert_eq!(s.violation_ns(2, Violation::Thermal, 50.0), 50 * sec);
    // An idle GPU never violates.
    assert_eq!(s.violation_ns(7, Violation::Power, 600.0), 0);
    // A training rank hits the cap on some steady steps: some, not all, seconds count, and
    // exactly the seconds whose sample shows the power cap bit.
    let rank = s.violation_ns(4, Violation::Power, 600.0) / sec;
    let capped = (0..600)
        .filter(|t| {
            s.sample(4, f64::from(*t)).throttle_reasons & gpudeck_sim_model::reason::SW_POWER_CAP
                != 0
        })
        .count() as u64;
    assert!(rank > 0 && rank < 600, "{rank}");
    assert_eq!(rank, capped);
}
