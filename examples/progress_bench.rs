//! Progress parsing benchmark: 1,000,000 synthetic mixed log lines (Keras bars with redraws,
//! tqdm bars, Trainer dicts, key=value, JSON and plain text) through one `ProgressTracker`.
//! Prints lines per second and peak RSS.
//!
//! `cargo run --release --example progress_bench -- [LINES]`

use std::time::Instant;

use gpudeck::runs::progress::ProgressTracker;

fn main() {
    let lines: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    // Lines are generated into one reused buffer, so peak RSS is the tracker's, not a corpus's.
    let mut line = String::new();
    let start = Instant::now();
    let mut bytes = 0;
    for i in 0..lines {
        synthetic_line(i, &mut line);
        bytes += line.len();
    }
    let generating = start.elapsed().as_secs_f64();

    let mut tracker = ProgressTracker::new();
    let start = Instant::now();
    let mut recognised = 0;
    for i in 0..lines {
        synthetic_line(i, &mut line);
        recognised += usize::from(tracker.feed(&line));
    }
    let parsing = start.elapsed().as_secs_f64() - generating;

    let points: usize = tracker
        .scalar_names()
        .map(|name| tracker.series(name).len())
        .sum();
    println!(
        "lines: {lines} ({:.1} MiB), recognised as progress: {recognised}",
        bytes as f64 / 1_048_576.0
    );
    println!(
        "parse + track: {parsing:.3} s, {:.0} lines/s (generation, {generating:.3} s, subtracted)",
        lines as f64 / parsing
    );
    println!(
        "scalars: {}, points kept: {points}",
        tracker.scalar_names().count()
    );
    println!("peak RSS (VmHWM): {} KiB", peak_rss_kib().unwrap_or(0));
}

/// A mix in which, as in real logs, most lines are not progress.
fn synthetic_line(i: usize, out: &mut String) {
    use std::fmt::Write;
    out.clear();
    let step = i / 10;
    let loss = 2.0 / (1.0 + i as f64 / 1e4);
    // Formatting into a String cannot fail.
    let _ = match i % 10 {
        0 => write!(out, "Epoch {}/100", step / 1000 + 1),
        1 => write!(
            out,
            "{:>4}/1000 [==========>...................] - ETA: 2s - loss: {loss:.4} - accuracy: 0.9123\r{:>4}/1000 ━━━━━━━━━━━━━━━━━━━━ 2s 30ms/step - accuracy: 0.9124 - loss: {loss:.4}",
            step % 1000,
            step % 1000 + 1
        ),
        2 => write!(
            out,
            "Epoch {}:  45%|████▌     | {}/1000 [00:02<00:03, 15.2it/s, v_num=0, train_loss={loss:.3}]",
            step / 1000,
            step % 1000
        ),
        3 => write!(out, "{{'loss': {loss}, 'grad_norm': 1.23, 'learning_rate': 4.5e-05, 'epoch': {:.2}}}", step as f64 / 1000.0),
        4 => write!(out, "step={step} loss={loss} lr=1e-4"),
        5 => write!(out, "{{\"step\": {step}, \"loss\": {loss}, \"train/acc\": 0.91}}"),
        6 => out.write_str("2024-05-01 12:00:03.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 78912 MB memory"),
        7 => write!(out, "INFO:root:worker {i} fetched shard {} of 512 in 0.23s", i % 512),
        8 => out.write_str("NCCL INFO Channel 00/02 :    0   1"),
        _ => write!(out, "  File \"train.py\", line {}, in <module>", i % 400),
    };
}

/// Peak resident set size of this process, from /proc/self/status.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
