//! Dashboard benchmark: frame render time in-process, then the release binary on 8 simulated GPUs in tmux
//! for steady CPU per minute, peak RSS and time to first frame.
//!
//! `cargo build --release && cargo run --release --example bench -- [SECONDS] [--render-only]`
//! (default 60 s).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpudeck::app::keymap::bindings;
use gpudeck::app::state::AppState;
use gpudeck::config::Config;
use gpudeck::gpu::collector::GpuUpdate;
use gpudeck::gpu::report;
use gpudeck::gpu::sim::SimSource;
use gpudeck::gpu::GpuSource;
use gpudeck::host::ProcessTable;
use gpudeck_sim_model::SimSpec;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

#[path = "common/procfs.rs"]
mod procfs;
use procfs::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: u64 = args.iter().find_map(|s| s.parse().ok()).unwrap_or(60);
    render_times();
    if args.iter().any(|a| a == "--render-only") {
        return;
    }
    if let Err(e) = live(seconds) {
        eprintln!("live benchmark failed: {e}");
        std::process::exit(1);
    }
}

/// A state with a full 10-minute history on 8 GPUs, as after a long session.
fn full_state() -> AppState {
    let config = Config::default();
    let mut state = AppState::new(&config, "bench".into(), false);
    let spec = SimSpec::parse("gpus=8,seed=42").unwrap_or_default();
    let mut source = SimSource::new(spec);
    let table: Arc<dyn ProcessTable> = Arc::new(source.process_table());
    if let Ok(inv) = source.inventory() {
        state.apply_gpu(GpuUpdate::Ready(Box::new(inv)));
    }
    let samples: Vec<_> =
        report::collect(&mut source as &mut dyn GpuSource, &table, "bench".into())
            .gpus
            .into_iter()
            .map(|g| g.sample)
            .collect();
    for _ in 0..600 {
        state.apply_gpu(GpuUpdate::Sampled(samples.clone()));
    }
    state
}

fn render_times() {
    let state = full_state();
    let theme = gpudeck::config::Theme::builtin(gpudeck::config::DEFAULT_THEME)
        .unwrap_or_else(|_| gpudeck::config::Theme::monochrome());
    let keymap = bindings();
    for (w, h) in [(80u16, 24u16), (200, 50)] {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        let n = 500;
        let start = Instant::now();
        for _ in 0..n {
            buf.reset();
            gpudeck::ui::render(area, &mut buf, &state, &theme, &keymap);
        }
        let per = start.elapsed().as_secs_f64() / f64::from(n) * 1e6;
        println!(
            "render one frame {w}x{h}: {per:.0} µs (mean of {n}, full 10-minute history, 8 GPUs)"
        );
    }
}

/// CPU time of all the process's threads in nanoseconds (schedstat: finer than the 10 ms of /proc/PID/stat).
fn live(seconds: u64) -> Result<(), String> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/gpudeck");
    if !bin.exists() {
        return Err("build the release binary first: cargo build --release".into());
    }
    let dir = std::env::temp_dir().join(format!("gpudeck-bench-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let session = format!("gpudeck-bench-{}", std::process::id());
    let cmd = format!(
        "exec env GPUDECK_STATE_DIR={d} GPUDECK_CONFIG_DIR={d} GPUDECK_SIM=gpus=8,seed=42 TERM=xterm-256color {} --demo",
        bin.display(),
        d = dir.display()
    );
    let ok = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "120",
            "-y",
            "40",
            &cmd,
        ])
        .status()
        .map_err(|e| format!("tmux: {e}"))?
        .success();
    if !ok {
        return Err("tmux could not start".into());
    }
    let pid = String::from_utf8_lossy(
        &Command::new("tmux")
            .args(["display-message", "-p", "-t", &session, "#{pane_pid}"])
            .output()
            .map_err(|e| e.to_string())?
            .stdout,
    )
    .trim()
    .to_string();
    // Let start-up settle, then measure a steady window.
    std::thread::sleep(Duration::from_secs(5));
    let t0 = cpu_ns(&pid).ok_or("gpudeck is not running")?;
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let t1 = cpu_ns(&pid).ok_or("gpudeck died during the benchmark")?;
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    let cpu_per_min = (t1 - t0) as f64 / 1e9 / minutes;
    let hwm = status_kib(&pid, "VmHWM:").unwrap_or(0);
    let _ = Command::new("tmux")
        .args(["send-keys", "-t", &session, "q"])
        .status();
    std::thread::sleep(Duration::from_millis(500));
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .status();
    let log = fs::read_to_string(dir.join("gpudeck.log")).unwrap_or_default();
    let first = log
        .lines()
        .find(|l| l.contains("first frame drawn"))
        .and_then(|l| l.split("elapsed_ms=").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or("?");
    println!("steady CPU: {cpu_per_min:.3} CPU-s per minute over {seconds} s (8 simulated GPUs, 1 s refresh, 120x40)");
    println!("peak RSS: {:.1} MiB", hwm as f64 / 1024.0);
    println!("time to first frame: {first} ms (process start to first frame written)");
    let _ = fs::remove_dir_all(&dir);
    Ok(())
}
