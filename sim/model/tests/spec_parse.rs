//! Parsing of the `GPUDECK_SIM` knob string: defaults, every knob, and the error messages.

use gpudeck_sim_model::{InitFailure, Metric, Profile, Remap, SimSpec, Throttle};

#[test]
fn empty_string_gives_defaults() {
    let spec = SimSpec::parse("").expect("empty spec parses");
    assert_eq!(spec, SimSpec::default());
    assert_eq!(spec.gpus, 8);
    assert_eq!(spec.seed, 42);
    assert_eq!(spec.profile, Profile::H100Sxm);
    assert_eq!(spec.driver, "580.65.06");
    assert_eq!(spec.cuda, 13000);
    assert_eq!(spec.nvml_version, "13.580.65.06");
    assert_eq!(spec.init_failure, None);
    assert_eq!(spec.frozen, None);
}

#[test]
fn every_knob_from_the_docs_parses() {
    let spec = SimSpec::parse(
        "gpus=4,seed=7,profile=h100-pcie,driver=535.54.03,cuda=12020,init=rm-mismatch,\
         unsupported=fan;power,lost=3,downgrade=1;2,throttle=0:thermal;1:power,ecc=2:5:1,\
         remap=1:pending;3:failed,frozen=12.5,pids=0:1234;1:5678",
    )
    .expect("full spec parses");
    assert_eq!(spec.gpus, 4);
    assert_eq!(spec.seed, 7);
    assert_eq!(spec.profile, Profile::H100Pcie);
    assert_eq!(spec.driver, "535.54.03");
    assert_eq!(spec.cuda, 12020);
    assert_eq!(spec.nvml_version, "12.535.54.03");
    assert_eq!(spec.init_failure, Some(InitFailure::LibRmVersionMismatch));
    assert_eq!(spec.unsupported, vec![Metric::Fan, Metric::Power]);
    assert_eq!(spec.lost, vec![3]);
    assert_eq!(spec.pcie_downgrade, vec![1, 2]);
    assert_eq!(
        spec.throttle,
        vec![(0, Throttle::Thermal), (1, Throttle::Power)]
    );
    assert_eq!(spec.ecc_errors, vec![(2, 5, 1)]);
    assert_eq!(spec.remap, vec![(1, Remap::Pending), (3, Remap::Failed)]);
    assert_eq!(spec.frozen, Some(12.5));
    assert_eq!(spec.pids, vec![(0, 1234), (1, 5678)]);
}

#[test]
fn whitespace_and_trailing_commas_are_tolerated() {
    let spec = SimSpec::parse(" gpus = 2 , lost = 1 ; ,").expect("parses");
    assert_eq!(spec.gpus, 2);
    assert_eq!(spec.lost, vec![1]);
}

#[test]
fn all_spellings_round_trip() {
    for p in Profile::ALL {
        let spec = SimSpec::parse(&format!("profile={}", p.key())).expect("profile parses");
        assert_eq!(spec.profile, p);
    }
    for f in InitFailure::ALL {
        let spec = SimSpec::parse(&format!("init={}", f.key())).expect("init parses");
        assert_eq!(spec.init_failure, Some(f));
    }
    for m in Metric::ALL {
        let spec = SimSpec::parse(&format!("unsupported={}", m.key())).expect("metric parses");
        assert_eq!(spec.unsupported, vec![m]);
    }
    for t in Throttle::ALL {
        let spec = SimSpec::parse(&format!("throttle=0:{}", t.key())).expect("throttle parses");
        assert_eq!(spec.throttle, vec![(0, t)]);
    }
}

#[test]
fn explicit_nvml_version_wins() {
    let spec = SimSpec::parse("driver=550.54.14,cuda=12040,nvml=12.550.54.14").expect("parses");
    assert_eq!(spec.nvml_version, "12.550.54.14");
}

fn error_of(s: &str) -> String {
    SimSpec::parse(s).expect_err("should be rejected")
}

#[test]
fn unknown_key_names_it_and_lists_the_allowed_ones() {
    let e = error_of("gpu=4");
    assert!(e.contains("\"gpu\""), "{e}");
    assert!(
        e.contains("gpus") && e.contains("pids") && e.contains("frozen"),
        "{e}"
    );
}

#[test]
fn unknown_values_list_the_allowed_ones() {
    let e = error_of("profile=b200");
    assert!(
        e.contains("profile=b200") && e.contains("h100-sxm, h100-pcie, a100-pcie, h200, rtx4090"),
        "{e}"
    );
    let e = error_of("init=broken");
    assert!(
        e.contains("driver-not-loaded, rm-mismatch, no-permission"),
        "{e}"
    );
    let e = error_of("unsupported=fan;wattage");
    assert!(e.contains("wattage") && e.contains("temperature"), "{e}");
    let e = error_of("throttle=0:hot");
    assert!(e.contains("thermal, power, sw-slowdown"), "{e}");
    let e = error_of("remap=0:broken");
    assert!(e.contains("remapped, pending, failed"), "{e}");
}

#[test]
fn malformed_values_are_rejected_with_the_key() {
    for (s, key) in [
        ("gpus=many", "gpus"),
        ("gpus=65", "gpus"),
        ("seed=-1", "seed"),
        ("cuda=0", "cuda"),
        ("driver=abc", "driver"),
        ("frozen=-3", "frozen"),
        ("frozen=NaN", "frozen"),
        ("ecc=1:2", "ecc"),
        ("remap=pending", "remap"),
        ("throttle=thermal", "throttle"),
        ("pids=1234", "pids"),
        ("pids=0:0", "pids"),
        ("lost", "lost"),
    ] {
        let e = error_of(s);
        assert!(e.contains(key), "{s}: {e}");
    }
}

#[test]
fn gpu_indices_must_exist() {
    let e = error_of("gpus=4,lost=4");
    assert!(e.contains("lost") && e.contains("out of range"), "{e}");
    let e = error_of("gpus=2,remap=2:pending");
    assert!(e.contains("remap") && e.contains("out of range"), "{e}");
    let e = error_of("gpus=2,pids=2:100");
    assert!(e.contains("pids"), "{e}");
    // Order does not matter: the check runs after every knob is read.
    assert!(SimSpec::parse("lost=6,gpus=8").is_ok());
}

#[test]
fn gpus_zero_is_allowed() {
    assert_eq!(SimSpec::parse("gpus=0").expect("parses").gpus, 0);
}

#[test]
fn call_costs_are_off_unless_asked_for() {
    assert!(!SimSpec::parse("").expect("parses").call_costs);
    assert!(SimSpec::parse("cost=h100").expect("parses").call_costs);
    assert!(!SimSpec::parse("cost=none").expect("parses").call_costs);
    let e = error_of("cost=slow");
    assert!(e.contains("cost=slow") && e.contains("h100"), "{e}");
}
