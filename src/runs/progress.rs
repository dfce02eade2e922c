//! Training progress read from log lines: Keras, PyTorch Lightning, Hugging Face Trainer, tqdm,
//! Megatron-LM, NeMo, DeepSpeed, plain `step 5 loss 0.55`, generic `key=value` and JSON lines,
//! folded into bounded series by [`ProgressTracker`] (formats: docs/runs.md, Training progress).

mod dict;
mod event;
mod keras;
mod line;
mod megatron;
mod pairs;
mod tqdm;
mod tracker;

/// The scalar worth a curve: the training loss when there is one.
pub fn curve_name<'a>(names: &[&'a str]) -> Option<&'a str> {
    let exact = ["loss", "train_loss", "training_loss", "train/loss"];
    exact
        .iter()
        .find_map(|want| names.iter().find(|n| n.eq_ignore_ascii_case(want)))
        .or_else(|| {
            names
                .iter()
                .find(|n| n.to_lowercase().contains("loss") && !n.starts_with("val"))
        })
        .or_else(|| names.first())
        .copied()
}

#[cfg(test)]
mod tests {
    //! Tests of `parse_line` against fixtures written in each tool's real output format.

    use super::line::MAX_SEGMENT_BYTES;
    use super::*;

    const KERAS3: &str = include_str!("testdata/keras3.log");
    const TF_KERAS2: &str = include_str!("testdata/tf_keras2.log");
    const LIGHTNING: &str = include_str!("testdata/lightning.log");
    const HF_TRAINER: &str = include_str!("testdata/hf_trainer.log");
    const HF_TRAINER_4_57: &str = include_str!("testdata/hf_trainer4_57.log");
    const HF_TRAINER_5: &str = include_str!("testdata/hf_trainer5.log");
    const HF_TRAINER_5_BAR: &str = include_str!("testdata/hf_trainer5.stderr.log");
    const GENERIC: &str = include_str!("testdata/generic.log");
    const JSONL: &str = include_str!("testdata/metrics.jsonl");
    const MEGATRON: &str = include_str!("testdata/megatron.log");
    const NEMO: &str = include_str!("testdata/nemo.log");
    const DEEPSPEED: &str = include_str!("testdata/deepspeed.log");
    const PLAIN: &str = include_str!("testdata/plain.log");

    /// Each non-comment line of a fixture, parsed.
    fn parsed(fixture: &str) -> Vec<Option<ProgressEvent>> {
        fixture
            .split('\n')
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(parse_line)
            .collect()
    }

    fn value(event: &ProgressEvent, name: &str) -> Option<f64> {
        event
            .scalars
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
    }

    fn names(event: &ProgressEvent) -> Vec<&str> {
        event.scalars.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn keras3_headers_bars_with_ansi_and_redraws() {
        let events = parsed(KERAS3);
        let header = events[0].as_ref().expect("epoch header");
        assert_eq!((header.epoch, header.total_epochs), (Some(1), Some(3)));
        assert!(header.scalars.is_empty());

        // Three redraws on one line: the last one counts.
        let redrawn = events[1].as_ref().expect("redrawn bar");
        assert_eq!((redrawn.step, redrawn.total_steps), (Some(312), Some(469)));
        assert_eq!(names(redrawn), ["accuracy", "loss"]);
        assert_eq!(value(redrawn, "loss"), Some(0.6543));

        let end = events[2].as_ref().expect("end of epoch");
        assert_eq!(end.step, Some(469));
        assert_eq!(names(end), ["accuracy", "loss", "val_accuracy", "val_loss"]);
        assert_eq!(value(end, "val_loss"), Some(0.1806));

        let small = events[6].as_ref().expect("scientific notation");
        assert_eq!(value(small, "loss"), Some(7.6543e-4));

        let evaluate = events[7].as_ref().expect("evaluate bar without metrics");
        assert_eq!(
            (evaluate.step, evaluate.total_steps),
            (Some(313), Some(313))
        );
        assert!(evaluate.scalars.is_empty());

        let unknown = events[8].as_ref().expect("unknown total");
        assert_eq!((unknown.step, unknown.total_steps), (Some(120), None));
        assert_eq!(value(unknown, "loss"), Some(0.312));
    }

    #[test]
    fn tf_keras2_bars_with_backspaces_nan_and_unknown_total() {
        let events = parsed(TF_KERAS2);
        assert_eq!(events[0].as_ref().and_then(|e| e.epoch), Some(1));
        let redrawn = events[1].as_ref().expect("redrawn bar");
        assert_eq!((redrawn.step, redrawn.total_steps), (Some(236), Some(469)));
        // `ETA: 0s` is a time, not a metric.
        assert_eq!(names(redrawn), ["loss", "accuracy"]);
        assert_eq!(value(redrawn, "accuracy"), Some(0.8412));

        let end = events[2].as_ref().expect("end of epoch");
        assert_eq!(value(end, "val_accuracy"), Some(0.9487));

        let diverged = events[4].as_ref().expect("nan epoch");
        assert!(value(diverged, "loss").is_some_and(f64::is_nan));
        assert!(value(diverged, "val_loss").is_some_and(f64::is_nan));

        let unknown = events[5].as_ref().expect("unknown total");
        assert_eq!((unknown.step, unknown.total_steps), (Some(57), None));
        assert_eq!(value(unknown, "loss"), Some(1.2345e-4));
    }

    #[test]
    fn lightning_bars_skip_side_bars_and_read_postfix() {
        let events = parsed(LIGHTNING);
        // GPU banner, LOCAL_RANK line, model summary, sanity check: not progress.
        assert!(
            events[..5].iter().all(Option::is_none),
            "{:?}",
            &events[..5]
        );

        let redrawn = events[5].as_ref().expect("epoch 0 bar");
        assert_eq!(redrawn.epoch, Some(0));
        assert_eq!((redrawn.step, redrawn.total_steps), (Some(99), Some(100)));
        assert_eq!(names(redrawn), ["train_loss"], "v_num is not a metric");

        assert!(events[6].is_none(), "validation bar");
        let end = events[7].as_ref().expect("end of epoch 0");
        assert_eq!(value(end, "val_loss"), Some(0.21));

        let slow = events[9].as_ref().expect("s/it rate, slash and dash keys");
        assert_eq!((slow.epoch, slow.step), (Some(1), Some(50)));
        assert_eq!(value(slow, "train/loss"), Some(-0.052));
        assert_eq!(value(slow, "lr-Adam"), Some(1e-4));

        assert!(events[10].is_none(), "`max_epochs=2` in prose");

        let rich = events[11].as_ref().expect("rich bar");
        assert_eq!((rich.epoch, rich.total_epochs), (Some(1), Some(10)));
        assert_eq!((rich.step, rich.total_steps), (Some(45), Some(100)));
        assert_eq!(names(rich), ["train_loss"]);
    }

    #[test]
    fn hf_trainer_dicts_and_bar() {
        let events = parsed(HF_TRAINER);
        assert!(events[..6].iter().all(Option::is_none), "banner lines");
        assert!(events[6].is_none(), "datasets Map bar counts examples");
        assert!(events[7].is_none(), "checkpoint loading bar");

        let bar = events[8].as_ref().expect("training bar");
        assert_eq!(
            (bar.step, bar.total_steps, bar.epoch),
            (Some(50), Some(1500), None)
        );

        let log = events[9].as_ref().expect("log dict");
        assert_eq!(log.epoch, Some(0));
        assert_eq!(
            names(log),
            ["loss", "grad_norm", "learning_rate", "epoch"],
            "a fractional epoch is kept as a scalar"
        );
        assert_eq!(
            value(log, "learning_rate"),
            Some(4.833_333_333_333_333_4e-5)
        );
        assert_eq!(value(log, "epoch"), Some(0.1));

        let nan = events[11].as_ref().expect("nan grad norm");
        assert!(value(nan, "grad_norm").is_some_and(f64::is_nan));

        let eval_bar = events[13].as_ref().expect("eval bar");
        assert_eq!((eval_bar.step, eval_bar.total_steps), (Some(20), Some(50)));
        let eval = events[14].as_ref().expect("eval dict");
        assert_eq!((eval.epoch, value(eval, "epoch")), (Some(1), Some(1.0)));
        assert_eq!(value(eval, "eval_accuracy"), Some(0.8125));

        let wrapped = events[15].as_ref().expect("numpy and tensor values");
        assert_eq!(value(wrapped, "grad_norm"), Some(1.25));
        assert_eq!(value(wrapped, "learning_rate"), Some(3.1e-5));

        let done = events[17].as_ref().expect("final dict");
        assert_eq!(done.epoch, Some(3));
        assert_eq!(value(done, "train_loss"), Some(0.3456));
    }

    /// The same training logged by transformers 4.57 (numbers) and 5.24 (each float formatted
    /// as a string): both give the same values.
    #[test]
    fn hf_trainer_4_and_5_dicts_give_the_same_numbers() {
        let four = parsed(HF_TRAINER_4_57);
        let five = parsed(HF_TRAINER_5);
        assert_eq!((four.len(), five.len()), (5, 5));
        for (old, new) in four.iter().zip(&five) {
            let (old, new) = (
                old.as_ref().expect("4.x dict"),
                new.as_ref().expect("5.x dict"),
            );
            assert_eq!(names(old), names(new));
            assert_eq!(old.epoch, new.epoch);
            // Runtimes differ between the two runs; the training values do not.
            for name in names(old)
                .into_iter()
                .filter(|n| !n.contains("runtime") && !n.contains("per_second"))
            {
                let (a, b) = (value(old, name).unwrap(), value(new, name).unwrap());
                // 5.x rounds to 4 significant digits.
                assert!(
                    (a - b).abs() <= a.abs() * 5e-4 + 0.005,
                    "{name}: {a} vs {b}"
                );
            }
        }
        let first = five[0].as_ref().unwrap();
        assert_eq!(value(first, "loss"), Some(0.6935));
        assert_eq!(value(first, "learning_rate"), Some(4e-5));
        assert_eq!(value(first, "epoch"), Some(0.3125));
        assert_eq!(first.epoch, Some(0));
        let last = five[4].as_ref().unwrap();
        assert_eq!(value(last, "train_loss"), Some(0.6928));
        assert_eq!(last.epoch, Some(1));
        // A string that is not a number is not a value.
        let words = parse_line("{'loss': '0.5', 'model': 'bert', 'step': 'x7'}").unwrap();
        assert_eq!(names(&words), ["loss"]);
    }

    /// A 5.x run as the tab reads it: its bar on stderr gives the step, its dicts the loss.
    #[test]
    fn hf_trainer_5_bar_and_dicts_make_a_loss_curve() {
        let mut tracker = ProgressTracker::new();
        for line in HF_TRAINER_5.lines().filter(|l| !l.starts_with('#')) {
            tracker.feed(line);
        }
        for line in HF_TRAINER_5_BAR.split(['\r', '\n']) {
            tracker.feed(line);
        }
        let latest = tracker.latest().expect("progress");
        assert_eq!((latest.step, latest.total_steps), (Some(20), Some(20)));
        assert_eq!(tracker.last_value("loss"), Some(0.6945));
        assert_eq!(tracker.series("loss").len(), 4);
    }

    #[test]
    fn generic_key_value_lines() {
        let events = parsed(GENERIC);
        let first = events[0].as_ref().expect("key=value");
        assert_eq!(first.step, Some(120));
        assert_eq!(first.scalars, [("loss".into(), 0.345), ("lr".into(), 1e-4)]);

        let colon = events[1].as_ref().expect("key: value");
        assert_eq!(colon.step, Some(130));
        assert_eq!(value(colon, "lr"), Some(9.5e-5));

        let logged = events[2].as_ref().expect("python logging prefix");
        assert_eq!(logged.step, Some(140));
        assert_eq!(names(logged), ["train/loss", "train/acc"]);

        let ranked = events[3].as_ref().expect("torchrun rank prefix");
        assert_eq!(value(ranked, "loss"), Some(-0.5));
        assert_eq!(value(ranked, "grad_norm"), Some(f64::INFINITY));

        let fractions = events[4].as_ref().expect("fractions");
        assert_eq!(
            (fractions.epoch, fractions.total_epochs),
            (Some(2), Some(10))
        );
        assert_eq!(
            (fractions.step, fractions.total_steps),
            (Some(170), Some(1000))
        );
        assert!(value(fractions, "loss").is_some_and(f64::is_nan));

        assert!(
            events[5].is_none(),
            "numbers under names that are not metrics"
        );
        // nanoGPT's line (see plain.log): a step word before its number, then a metric.
        let nanogpt = events[6].as_ref().expect("`iter 160: loss 3.45`");
        assert_eq!(nanogpt.step, Some(160));
        assert_eq!(
            names(nanogpt),
            ["loss", "mfu"],
            "`time 23.45ms` is not a value"
        );
        assert_eq!(value(nanogpt, "loss"), Some(3.45));
    }

    #[test]
    fn megatron_iteration_and_validation_lines() {
        let events = parsed(MEGATRON);
        let first = events[0].as_ref().expect("timestamped iteration line");
        assert_eq!((first.step, first.total_steps), (Some(10), Some(1000)));
        assert_eq!(first.step_source, StepSource::Named);
        assert_eq!(
            names(first),
            [
                "consumed samples",
                "elapsed time per iteration (ms)",
                "throughput per GPU (TFLOP/s/GPU)",
                "learning rate",
                "global batch size",
                "lm loss",
                "loss scale",
                "grad norm",
                "number of skipped iterations",
                "number of nan iterations",
            ]
        );
        assert_eq!(value(first, "lm loss"), Some(5.4321));
        assert_eq!(value(first, "learning rate"), Some(1.5e-4));
        assert_eq!(value(first, "consumed samples"), Some(5120.0));

        let second = events[1].as_ref().expect("nan grad norm");
        assert_eq!((second.step, second.total_steps), (Some(20), Some(1000)));
        assert!(value(second, "grad norm").is_some_and(f64::is_nan));

        assert!(events[2].is_none(), "dashes around the evaluation");
        let validation = events[3].as_ref().expect("validation line");
        assert_eq!((validation.step, validation.total_steps), (Some(20), None));
        assert_eq!(
            validation.scalars,
            [
                ("validation lm loss value".into(), 4.812345),
                ("validation lm loss PPL".into(), 123.0456),
            ]
        );
        assert!(events[4].is_none());

        let old = events[5].as_ref().expect("no timestamp, rank prefix");
        assert_eq!((old.step, old.total_steps), (Some(30), Some(1000)));
        assert_eq!(value(old, "lm loss"), Some(4.5012));
    }

    #[test]
    fn nemo_progress_printer_and_megatron_bar() {
        let events = parsed(NEMO);
        let first = events[0].as_ref().expect("first iteration");
        // `iteration 0/99`: the index of the step done, of the last step.
        assert_eq!(
            (first.epoch, first.step, first.total_steps),
            (Some(0), Some(1), Some(100))
        );
        assert_eq!(
            names(first),
            [
                "lr",
                "global_batch_size",
                "global_step",
                "reduced_train_loss",
                "train_step_timing in s",
                "consumed_samples",
            ]
        );
        assert_eq!(value(first, "reduced_train_loss"), Some(11.03));
        assert_eq!(value(first, "lr"), Some(1.5e-5));

        let tenth = events[1].as_ref().expect("tenth step");
        assert_eq!((tenth.step, tenth.total_steps), (Some(10), Some(100)));
        assert!(events[2].is_none(), "validation counter without values");

        let last = events[3].as_ref().expect("last step");
        assert_eq!((last.step, last.total_steps), (Some(100), Some(100)));
        assert_eq!(value(last, "val_loss"), Some(5.412));

        let bar = events[4].as_ref().expect("MegatronProgressBar, no rate");
        assert_eq!(
            (bar.epoch, bar.step, bar.total_steps),
            (Some(0), Some(45), Some(100))
        );
        assert_eq!(bar.step_source, StepSource::Bar);
        assert_eq!(
            names(bar),
            [
                "reduced_train_loss",
                "global_step",
                "consumed_samples",
                "train_step_timing in s"
            ]
        );
        assert_eq!(value(bar, "train_step_timing in s"), Some(0.412));
    }

    #[test]
    fn deepspeed_engine_timer_and_pipeline_lines() {
        let events = parsed(DEEPSPEED);
        let start = events[0].as_ref().expect("step 0 at start-up");
        assert_eq!(start.step, Some(0));
        assert_eq!(start.step_source, StepSource::Engine);
        // The logger's `[logging.py:128:log_dist]` is not a value; `mom` is a list of pairs.
        assert_eq!(start.scalars, [("skipped".into(), 0.0), ("lr".into(), 0.0)]);

        let tenth = events[1].as_ref().expect("step 10");
        assert_eq!(tenth.step, Some(10));
        assert_eq!(value(tenth, "lr"), Some(9.5e-5), "the first group's rate");
        assert_eq!(value(tenth, "skipped"), Some(1.0));

        let timer = events[2].as_ref().expect("ThroughputTimer");
        assert_eq!((timer.epoch, timer.step), (Some(0), Some(10)));
        assert_eq!(timer.step_source, StepSource::Engine);
        assert_eq!(
            names(timer),
            ["micro_step", "RunningAvgSamplesPerSec", "CurrSamplesPerSec"],
            "`4.51GB` is not a number"
        );

        let pipeline = events[3].as_ref().expect("pipeline engine");
        assert_eq!(pipeline.step, Some(20));
        assert_eq!(pipeline.step_source, StepSource::Named);
        assert_eq!(
            pipeline.scalars,
            [
                ("loss".into(), 0.6925),
                ("iter time (s)".into(), 0.123),
                ("samples/sec".into(), 260.163),
            ]
        );
    }

    #[test]
    fn plain_step_and_epoch_lines() {
        let events = parsed(PLAIN);
        let spaced = events[0].as_ref().expect("step 5 loss 0.55");
        assert_eq!(spaced.step, Some(5));
        assert_eq!(spaced.scalars, [("loss".into(), 0.55)]);

        let comma = events[1].as_ref().expect("Step 1, Loss: 0.15");
        assert_eq!(comma.step, Some(1));
        assert_eq!(comma.scalars, [("Loss".into(), 0.15)]);
        let lower = parse_line("Step 1, loss: 0.15").expect("lower case");
        assert_eq!(
            (lower.step, lower.scalars),
            (Some(1), vec![("loss".into(), 0.15)])
        );

        let epoch_step = events[2].as_ref().expect("epoch, step of total, loss, lr");
        assert_eq!(
            (epoch_step.epoch, epoch_step.step, epoch_step.total_steps),
            (Some(2), Some(30), Some(500))
        );
        assert_eq!(
            epoch_step.scalars,
            [("loss".into(), 0.1234), ("lr".into(), 3e-4)]
        );

        let bare = events[3].as_ref().expect("epoch 3 step 120");
        assert_eq!((bare.epoch, bare.step), (Some(3), Some(120)));
        assert!(bare.scalars.is_empty());

        let nanogpt = events[4].as_ref().expect("nanoGPT");
        assert_eq!(nanogpt.step, Some(160));
        assert_eq!(
            nanogpt.scalars,
            [("loss".into(), 3.45), ("mfu".into(), 12.34)]
        );

        let evaluation = events[5].as_ref().expect("nanoGPT evaluation");
        assert_eq!(evaluation.step, Some(2000));
        assert_eq!(
            evaluation.scalars,
            [("train loss".into(), 1.2345), ("val loss".into(), 1.4567)]
        );

        for (i, event) in events[6..].iter().enumerate() {
            assert!(event.is_none(), "prose line {i}: {event:?}");
        }
    }

    /// Bracketed fields are dropped as log prefixes only when they hold no progress:
    /// eriklindernoren/PyTorch-GAN's `print("[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f]")`.
    #[test]
    fn bracketed_progress_is_kept() {
        let gan = parse_line("[Epoch 3/200] [Batch 40/938] [D loss: 0.512345] [G loss: 0.734567]")
            .expect("PyTorch-GAN");
        assert_eq!((gan.epoch, gan.total_epochs), (Some(3), Some(200)));
        assert_eq!(value(&gan, "loss"), Some(0.512345));
        let logged =
            parse_line("[2024-05-01 12:00:00,123] [INFO] [train.py:88:main] step=7 loss=0.25")
                .expect("logger prefix");
        assert_eq!(logged.scalars, [("loss".into(), 0.25)]);
        assert_eq!(logged.step, Some(7));
    }

    #[test]
    fn redraws_and_colours_around_plain_lines() {
        let redrawn = parse_line("step 4 loss 0.6000\rstep 5 loss 0.5500\r\n").expect("redraw");
        assert_eq!(
            (redrawn.step, redrawn.scalars),
            (Some(5), vec![("loss".into(), 0.55)])
        );
        let coloured =
            parse_line("\u{1b}[31mstep: 10\u{1b}[39m  \u{1b}[32mloss:  2.3456\u{1b}[39m")
                .expect("coloured");
        assert_eq!(
            (coloured.step, coloured.scalars),
            (Some(10), vec![("loss".into(), 2.3456)])
        );
        let megatron = parse_line(
            "\u{1b}[0m [2024-05-01 12:00:00.123456] iteration       40/    1000 | lm loss: 4.2E+00 |\r",
        )
        .expect("Megatron with a reset and a carriage return");
        assert_eq!(
            (megatron.step, megatron.total_steps),
            (Some(40), Some(1000))
        );
    }

    #[test]
    fn json_lines() {
        let events = parsed(JSONL);
        let first = events[0].as_ref().expect("flat");
        assert_eq!(
            (first.step, first.scalars.clone()),
            (Some(120), vec![("loss".into(), 0.345)])
        );

        let nested = events[1].as_ref().expect("nested");
        assert_eq!(
            names(nested),
            ["loss", "lr", "train/acc", "train/tokens_per_sec"]
        );

        let slashed = events[2].as_ref().expect("slashed keys");
        assert_eq!(slashed.step, Some(140));
        assert_eq!(names(slashed), ["train/loss", "epoch"]);

        let python_json = events[3]
            .as_ref()
            .expect("NaN and Infinity from json.dumps");
        assert!(value(python_json, "loss").is_some_and(f64::is_nan));
        assert_eq!(value(python_json, "grad_norm"), Some(f64::INFINITY));

        assert!(events[4].is_none(), "no numbers");
        let mixed = events[5]
            .as_ref()
            .expect("lists, strings with braces, booleans, null");
        assert_eq!(mixed.scalars, [("loss".into(), -1.5e-3)]);
    }

    #[test]
    fn ordinary_lines_are_not_progress() {
        for line in [
        "",
        "   ",
        "\r\r\n",
        "Downloading data from https://storage.googleapis.com/mnist.npz",
        "2024-05-01 12:00:00.123456: I tensorflow/core/platform/cpu_feature_guard.cc:210] AVX2 FMA",
        "NCCL INFO Channel 00/02 :    0   1",
        "Traceback (most recent call last):",
        "  File \"train.py\", line 42, in <module>",
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "12/05/2024 done",
        "1/2 [info] starting",
        "{not a dict}",
        "{'a': }",
        "Epoch",
        "Epoch x/y",
        "config: {'batch_size': 32}",
    ] {
        assert_eq!(parse_line(line), None, "{line:?}");
    }
    }

    #[test]
    fn odd_input_never_panics() {
        let pieces = [
            "{",
            "}",
            "[",
            "]",
            "'",
            "\"",
            "\\",
            ":",
            "=",
            "/",
            "%|",
            "|",
            "\r",
            "\u{1b}[",
            "\u{8}",
            "━",
            "█",
            "é",
            "\u{0}",
            "1",
            "-",
            "e",
            "nan",
            "step",
            "loss",
            "Epoch ",
            " ",
            ",",
            "(",
            "tensor(",
            "99999999999999999999999",
            "1e999",
            "\u{fffd}",
            "[rank0]:",
            "🚀",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut line = String::new();
            for _ in 0..(seed % 24) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                line.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            let _ = parse_line(&line);
        }
        let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        let _ = parse_line(&String::from_utf8_lossy(&bytes));
        assert_eq!(parse_line(&"x".repeat(MAX_SEGMENT_BYTES + 1)), None);
    }

    #[test]
    fn rank_prefixes_are_dropped() {
        for line in [
            "[rank1]: step=3 loss=0.5",
            "[1,0]<stdout>: step=3 loss=0.5",
            "[default0]:step=3 loss=0.5",
        ] {
            assert_eq!(parse_line(line).and_then(|e| e.step), Some(3), "{line}");
        }
    }

    /// Property tests: real lines of each tool's output, cut, garbled or with numbers out of any
    /// range, never panic the parser or the tracker, and the tracker's memory stays bounded.
    mod fuzz {
        use std::sync::OnceLock;

        use proptest::prelude::*;

        use super::*;
        use crate::fuzz::{self, any_text, near_miss_line};

        /// Every line of every fixture.
        fn fixture_lines() -> &'static [&'static str] {
            static LINES: OnceLock<Vec<&'static str>> = OnceLock::new();
            LINES.get_or_init(|| {
                [
                    KERAS3, TF_KERAS2, LIGHTNING, HF_TRAINER, GENERIC, JSONL, MEGATRON, NEMO,
                    DEEPSPEED, PLAIN,
                ]
                .iter()
                .flat_map(|fixture| fixture.split('\n'))
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .collect()
            })
        }

        fn line() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => near_miss_line(fixture_lines()),
                1 => any_text(),
                1 => prop::sample::select(fixture_lines()).prop_map(str::to_owned),
            ]
        }

        proptest! {
            #![proptest_config(fuzz::config())]

            #[test]
            fn a_garbled_line(text in line()) {
                if let Some(event) = parse_line(&text) {
                    prop_assert!(!event.is_empty());
                }
            }

            #[test]
            fn a_run_of_garbled_lines(lines in prop::collection::vec(line(), 1..16)) {
                let mut tracker = ProgressTracker::with_points(8);
                for line in &lines {
                    tracker.feed_bytes(line.as_bytes());
                }
                let names: Vec<String> = tracker.scalar_names().map(str::to_owned).collect();
                prop_assert!(names.len() <= 64);
                for name in &names {
                    let series = tracker.series(name);
                    prop_assert!(series.len() <= 8, "{name}: {}", series.len());
                    prop_assert!(series.iter().all(|(x, y)| x.is_finite() && y.is_finite()));
                }
            }
        }
    }

    /// Lightning's rich bar with a last epoch index of `u64::MAX` overflowed its epoch total (a
    /// panic in a debug build); found by `fuzz::a_run_of_garbled_lines`.
    #[test]
    fn a_rich_bar_at_the_end_of_the_range_has_no_epoch_total() {
        let line = "Epoch 2/18446744073709551615 ━━━━━━━━━━ 45/100 0:00:02 • 0:00:03 15.20it/s \
                train_loss: 0.234";
        let event = parse_line(line).expect("a bar");
        assert_eq!((event.epoch, event.total_epochs), (Some(2), None));
        assert_eq!(event.step, Some(45));
    }
}
#[cfg(test)]
mod tracker_tests {
    //! Tests of `ProgressTracker`: the global step across epochs, evaluation bars, bounded series.

    use super::*;

    const KERAS3: &str = include_str!("testdata/keras3.log");
    const LIGHTNING: &str = include_str!("testdata/lightning.log");
    const HF_TRAINER: &str = include_str!("testdata/hf_trainer.log");

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
    fn megatron_steps_have_a_total_and_a_loss_curve() {
        let tracker = tracked(include_str!("testdata/megatron.log"));
        let latest = tracker.latest().expect("latest");
        assert_eq!((latest.step, latest.total_steps), (Some(30), Some(1000)));
        assert_eq!(
            tracker.series("lm loss"),
            [(10.0, 5.4321), (20.0, 4.9876), (30.0, 4.5012)]
        );
        assert_eq!(
            tracker.series("validation lm loss value"),
            [(20.0, 4.812345)]
        );
        assert_eq!(tracker.non_finite_count(), 1, "the nan grad norm");
    }

    #[test]
    fn nemo_steps_count_from_one_and_a_bar_does_not_move_them() {
        let tracker = tracked(include_str!("testdata/nemo.log"));
        assert_eq!(
            tracker.series("reduced_train_loss"),
            [(1.0, 11.03), (10.0, 9.873), (100.0, 5.231)],
            "the bar's 5.23 at its 45/100 is not plotted"
        );
        let latest = tracker.latest().expect("latest");
        assert_eq!(
            (latest.epoch, latest.step, latest.total_steps),
            (Some(0), Some(100), Some(100))
        );
    }

    #[test]
    fn deepspeed_pipeline_steps_outrank_its_engine_lines() {
        let tracker = tracked(include_str!("testdata/deepspeed.log"));
        let latest = tracker.latest().expect("latest");
        assert_eq!((latest.step, latest.total_steps), (Some(20), None));
        assert_eq!(tracker.series("loss"), [(20.0, 0.6925)]);
        assert!(
            tracker.series("lr").is_empty(),
            "engine points dropped with their axis"
        );

        let engine_only = tracked(
            "[2024-05-01 12:00:00,123] [INFO] [logging.py:128:log_dist] [Rank 0] step=0, skipped=0, lr=[0.0], mom=[(0.9, 0.999)]\n\
             [2024-05-01 12:00:10,456] [INFO] [logging.py:128:log_dist] [Rank 0] step=10, skipped=0, lr=[9.5e-05], mom=[(0.9, 0.999)]",
        );
        assert_eq!(engine_only.series("lr"), [(0.0, 0.0), (10.0, 9.5e-5)]);
    }

    /// The Trainer's bar counts the steps DeepSpeed's engine lines count, and has the total: the
    /// bar is followed, the engine lines (and DeepSpeed's step 0 at start-up) do not reset it.
    #[test]
    fn hf_bar_outranks_deepspeed_engine_lines() {
        let tracker = tracked(include_str!("testdata/mixed_hf_deepspeed.log"));
        let latest = tracker.latest().expect("latest");
        assert_eq!((latest.step, latest.total_steps), (Some(20), Some(60)));
        assert_eq!(tracker.series("loss"), [(10.0, 0.6925), (20.0, 0.5012)]);
        assert_eq!(tracker.series("learning_rate").len(), 2);
        assert!(
            tracker.series("lr").is_empty(),
            "{:?}",
            tracker.series("lr")
        );
        assert!(tracker.series("skipped").is_empty());
    }

    /// A script's tqdm bar counts an epoch's batches, its JSON lines optimizer steps: the named
    /// steps win, the bar's counter, total and postfix are not taken, its epoch is.
    #[test]
    fn named_steps_outrank_a_bar_counting_batches() {
        let tracker = tracked(include_str!("testdata/mixed_tqdm_jsonl.log"));
        assert_eq!(
            tracker.series("loss"),
            [(10.0, 2.1), (25.0, 1.9), (30.0, 1.7)]
        );
        let latest = tracker.latest().expect("latest");
        assert_eq!(
            (latest.step, latest.total_steps, latest.epoch),
            (Some(30), None, Some(1))
        );
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
}

pub use event::{ProgressEvent, StepSource};
pub use line::parse_line;
pub use tracker::{ProgressTracker, DEFAULT_POINTS_PER_SCALAR};
