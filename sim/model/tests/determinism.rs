//! The same spec gives the same numbers; readings depend only on the whole second of `t`.

use gpudeck_sim_model::{SimSpec, Simulation};

fn sim(s: &str) -> Simulation {
    Simulation::new(SimSpec::parse(s).expect("valid spec"))
}

#[test]
fn two_simulations_of_one_spec_agree() {
    let (a, b) = (sim("seed=9"), sim("seed=9"));
    for t in [0.0, 1.0, 29.5, 31.0, 123.4, 999.0, 5000.0] {
        for i in 0..8 {
            assert_eq!(a.sample(i, t), b.sample(i, t), "gpu {i} t {t}");
            assert_eq!(a.processes(i, t), b.processes(i, t), "gpu {i} t {t}");
            assert_eq!(a.device(i), b.device(i));
        }
    }
}

#[test]
fn readings_depend_on_the_whole_second_only() {
    let s = sim("");
    for i in 0..8 {
        assert_eq!(s.sample(i, 77.0), s.sample(i, 77.99));
        assert_eq!(s.processes(i, 77.0), s.processes(i, 77.99));
    }
}

#[test]
fn different_seeds_differ() {
    let (a, b) = (sim("seed=1"), sim("seed=2"));
    assert_ne!(a.device(0).map(|d| &d.uuid), b.device(0).map(|d| &d.uuid));
    let differs = (0..200).any(|t| a.sample(0, f64::from(t)) != b.sample(0, f64::from(t)));
    assert!(differs);
}

#[test]
fn query_order_does_not_change_answers() {
    let forward = sim("");
    let backward = sim("");
    let times: Vec<f64> = (0..50).map(|k| f64::from(k) * 13.0).collect();
    let f: Vec<_> = times.iter().map(|t| forward.sample(3, *t)).collect();
    let mut b: Vec<_> = times.iter().rev().map(|t| backward.sample(3, *t)).collect();
    b.reverse();
    assert_eq!(f, b);
}

#[test]
fn energy_is_the_sum_of_reported_power() {
    let s = sim("");
    for gpu in [0, 5, 7] {
        let mut expected = 0u64;
        for t in 0..300 {
            let sample = s.sample(gpu, f64::from(t));
            assert_eq!(sample.energy_mj, expected, "gpu {gpu} t {t}");
            expected += u64::from(sample.power_mw);
        }
    }
}

#[test]
fn energy_keeps_growing_over_long_runs() {
    let s = sim("gpus=1");
    let day = s.sample(0, 86_400.0).energy_mj;
    let month = s.sample(0, 30.0 * 86_400.0).energy_mj;
    assert!(day > 0 && month > day * 25, "{day} {month}");
}

#[test]
fn frozen_time_stands_still() {
    let s = sim("frozen=12.5");
    assert_eq!(s.now(), 12.5);
    assert_eq!(s.now(), 12.5);
    let live = sim("");
    assert!(live.now() >= 0.0 && live.now() < 60.0);
}

#[test]
fn unknown_gpu_gives_empty_answers() {
    let s = sim("gpus=2");
    assert!(s.device(2).is_none());
    assert_eq!(s.sample(2, 10.0).util_gpu, 0);
    assert!(s.processes(2, 10.0).is_empty());
}

#[test]
fn a_simulation_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Simulation>();
    let s = std::sync::Arc::new(sim(""));
    let t = std::thread::spawn({
        let s = std::sync::Arc::clone(&s);
        move || s.sample(0, 50.0)
    });
    assert_eq!(t.join().expect("thread"), s.sample(0, 50.0));
}
