//! Tests of `ProgressTracker`: the global step across epochs, evaluation bars, bounded series.

use super::*;

const KERAS3: &str = include_str!("../testdata/keras3.log");
const LIGHTNING: &str = include_str!("../testdata/lightning.log");
const HF_TRAINER: &str = include_str!("../testdata/hf_trainer.log");

fn tracked(fixture: &str) -> ProgressTracker {
    let mut tracker = ProgressTracker::new();
    for line in fixture.split('\n') {
        tracker.feed(line);
    }
    tracker
}

#[test]
fn keras_epochs_chain_into_a_global_step() {
    let tracker = tracked(KERAS3);
    assert_eq!(
        tracker.series("val_loss"),
        [(469.0, 0.1806), (938.0, 0.1302), (1407.0, 0.1011)]
    );
    assert_eq!(
        tracker.series("loss")[..2],
        [(312.0, 0.6543), (469.0, 0.4966)]
    );
    let names: Vec<&str> = tracker.scalar_names().collect();
    assert_eq!(names, ["accuracy", "loss", "val_accuracy", "val_loss"]);
    let latest = tracker.latest().expect("latest");
    assert_eq!((latest.epoch, latest.total_epochs), (Some(3), Some(3)));
}

#[test]
fn lightning_epochs_restart_their_counter() {
    let tracker = tracked(LIGHTNING);
    let loss = tracker.series("train_loss");
    assert_eq!(
        loss[..4].iter().map(|p| p.0).collect::<Vec<_>>(),
        [99.0, 100.0, 103.0, 245.0]
    );
    assert_eq!(tracker.series("val_loss"), [(100.0, 0.21), (103.0, 0.21)]);
    assert_eq!(tracker.series("train/loss"), [(150.0, -0.052)]);
}

#[test]
fn hf_values_land_on_the_bar_step_and_eval_bars_do_not_move_it() {
    let tracker = tracked(HF_TRAINER);
    assert_eq!(
        tracker.series("loss"),
        [(50.0, 0.6928), (100.0, 0.5124), (500.0, 0.3012)]
    );
    assert_eq!(tracker.series("eval_loss"), [(500.0, 0.4123)]);
    // The NaN gradient norm is counted, not plotted.
    assert_eq!(
        tracker.series("grad_norm"),
        [(50.0, 2.345678), (500.0, 1.25)]
    );
    assert_eq!(tracker.non_finite_count(), 1);
    assert_eq!(tracker.series("epoch").len(), 5);
    let latest = tracker.latest().expect("latest");
    assert_eq!(
        (latest.step, latest.total_steps, latest.epoch),
        (Some(1500), Some(1500), Some(3))
    );
    assert_eq!(tracker.last_value("train_loss"), Some(0.3456));
}

#[test]
fn latest_carries_the_epoch_and_step_forward() {
    let mut tracker = ProgressTracker::new();
    tracker.feed("Epoch 2/5");
    tracker.feed("10/100 [==>...........................] - ETA: 3s - loss: 0.5000");
    tracker.feed("{'eval_loss': 0.4}");
    let latest = tracker.latest().expect("latest");
    assert_eq!(
        (
            latest.epoch,
            latest.total_epochs,
            latest.step,
            latest.total_steps
        ),
        (Some(2), Some(5), Some(10), Some(100))
    );
    tracker.feed("Epoch 3/5");
    let latest = tracker.latest().expect("latest");
    assert_eq!(
        (latest.epoch, latest.step),
        (Some(3), None),
        "a new epoch has no step yet"
    );
}

#[test]
fn without_steps_values_are_numbered_by_line() {
    let mut tracker = ProgressTracker::new();
    for line in [
        "{\"loss\": 3}",
        "not progress",
        "{\"loss\": 2}",
        "{\"acc\": 0.5}",
    ] {
        tracker.feed(line);
    }
    assert_eq!(tracker.series("loss"), [(1.0, 3.0), (2.0, 2.0)]);
    assert_eq!(tracker.series("acc"), [(3.0, 0.5)]);
    assert!(tracker.series("missing").is_empty());
}

#[test]
fn a_million_lines_keep_series_bounded_and_the_last_point_latest() {
    let mut tracker = ProgressTracker::with_points(1000);
    for i in 0..1_000_000u64 {
        let line = if i % 3 == 0 {
            format!("step={i} loss={} lr=1e-4", 1.0 / (i + 1) as f64)
        } else {
            format!("INFO worker {i} fetched a batch")
        };
        tracker.feed(&line);
    }
    let loss = tracker.series("loss");
    assert!((500..=1000).contains(&loss.len()), "{}", loss.len());
    assert_eq!(loss.last(), Some(&(999_999.0, 1.0 / 1_000_000.0)));
    assert_eq!(
        loss[0].0,
        0.0 + loss[1].0 - (loss[2].0 - loss[1].0),
        "evenly spaced from the start"
    );
    let gaps: Vec<f64> = loss.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let stride = gaps[0];
    assert!(
        gaps[..gaps.len() - 1].iter().all(|&g| g == stride),
        "uniform spacing"
    );
    assert!(gaps[gaps.len() - 1] <= stride);
}

#[test]
fn invented_keys_cannot_grow_memory() {
    let mut tracker = ProgressTracker::new();
    for i in 0..1_000 {
        tracker.feed(&format!("{{\"loss_{i}\": 1.0}}"));
    }
    assert_eq!(tracker.scalar_names().count(), 64);
}

#[test]
fn raw_bytes_are_accepted() {
    let mut tracker = ProgressTracker::new();
    assert!(tracker.feed_bytes(b"\xff\xfe step=3 loss=0.5 \xc3"));
    assert_eq!(tracker.series("loss"), [(3.0, 0.5)]);
    assert!(!tracker.feed_bytes(b"\xff\xff\xff"));
}

/// A step counter at `u64::MAX`, a restart and a line without a step overflowed the global step
/// (a panic in a debug build, a wrapped x in release); found by `tests::fuzz::a_run_of_garbled_lines`.
#[test]
fn a_step_at_the_end_of_the_range_does_not_overflow_the_axis() {
    let mut tracker = ProgressTracker::new();
    for line in [
        "     18446744073709551615/Unknown - 3s 52ms/step - loss: 1.2345e-04",
        "1100%|██████████| 1500/1500 [05:01<00:00,  4.98it/s]",
        "469/469 ━━━━━━━━━━━━━━━━━━━━ 2s 4ms/step - accuracy: 0.9998 - loss: 7.6543e-04 - \
         val_accuracy: 0.9702 - val_loss: ",
    ] {
        tracker.feed(line);
    }
    let points = tracker.series("loss");
    assert_eq!(points.len(), 2, "{points:?}");
    assert!(points.iter().all(|(x, _)| x.is_finite()), "{points:?}");
}
