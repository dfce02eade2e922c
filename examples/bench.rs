//! Dashboard benchmark: frame render time in-process, then the release binary on 8 simulated GPUs
//! at 1 s refresh in a 160x50 tmux pane for steady CPU per minute, peak RSS, frames drawn and time
//! to first frame, and (`--nvtop`) nvtop on the same simulated GPUs right after it.
//!
//! ```text
//! cargo build --release --workspace
//! cargo run --release --example bench -- [SECONDS] [--render-only] [--nvtop] [--pairs N] [--demo]
//!     [--baseline PATH] [--costs]
//! ```
//!
//! SECONDS (default 60) is the measured window of each live run, after 5 s of start-up. The
//! dashboard reads the simulator library (`target/release/libgpudeck_nvml_sim.so`) through NVML,
//! as it would a real driver, with `GPUDECK_SIM=gpus=8,seed=42` (an HGX H100 shape); `--demo`
//! gives it the in-process simulation instead. `--nvtop` runs nvtop (`nvtop -d 10`: 1 s refresh)
//! in the same pane size, on the same simulated machine (the simulator library as
//! `libnvidia-ml.so.1` on `LD_LIBRARY_PATH`), for the same window, right after each dashboard run,
//! and prints the two side by side; `--pairs N` repeats the pair N times (the machine may be
//! shared: compare within a pair). `--baseline PATH` runs another gpudeck binary (an older
//! build) the same way first in each pair, for before-and-after figures from the same minutes.
//! `--costs` adds `cost=h100` to the simulated machine: every NVML call, gpudeck's and nvtop's,
//! spends the CPU time a real H100's driver takes for it (sim/README.md), which on a real GPU is
//! most of what a monitor costs.
//!
//! The figures: "CPU-s/min" is the CPU time of all the process's threads over the window (from
//! schedstat), per minute of wall time; "peak RSS" is VmHWM; "frames/min" counts the dashboard's
//! frames from its trace log; the per-thread line says where the dashboard's CPU went (`gpudeck`
//! is the loop that applies updates and draws, `gpu-collector` the NVML calls, including what the
//! simulator library computes for them, `runs-collector` the run store, `tokio-*` the Docker and
//! input tasks). The dashboard gets private state, config and data directories and no Docker
//! Engine: containers that others start on this machine would wake it and blur the figures.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpudeck::app::keymap::{bindings, Binding};
use gpudeck::app::state::AppState;
use gpudeck::config::Config;
use gpudeck::gpu::collector::GpuUpdate;
use gpudeck::gpu::report;
use gpudeck::gpu::sim::SimSource;
use gpudeck::gpu::GpuSource;
use gpudeck::host::ProcessTable;
use gpudeck_sim_model::SimSpec;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

#[path = "common/procfs.rs"]
mod procfs;
use procfs::*;

/// The simulated machine both monitors watch.
const SIM: &str = "gpus=8,seed=42";
/// The same, each NVML call costing what it does on a real H100's driver.
const SIM_COSTS: &str = "gpus=8,seed=42,cost=h100";
/// The tmux pane both monitors draw in.
const PANE: (&str, &str) = ("160", "50");
/// Start-up time left out of the measured window.
const SETTLE: Duration = Duration::from_secs(5);

struct Options {
    seconds: u64,
    render_only: bool,
    nvtop: bool,
    pairs: usize,
    demo: bool,
    baseline: Option<PathBuf>,
    costs: bool,
}

impl Options {
    /// The `GPUDECK_SIM` spec of the simulated machine.
    fn sim(&self) -> &'static str {
        if self.costs {
            SIM_COSTS
        } else {
            SIM
        }
    }

    fn parse() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let after = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
        };
        let pairs = after("--pairs")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1usize)
            .max(1);
        let baseline = after("--baseline").map(PathBuf::from);
        let seconds = args
            .iter()
            .enumerate()
            .filter(|(i, _)| *i == 0 || (args[i - 1] != "--pairs" && args[i - 1] != "--baseline"))
            .find_map(|(_, s)| s.parse().ok())
            .unwrap_or(60);
        Self {
            seconds,
            render_only: args.iter().any(|a| a == "--render-only"),
            nvtop: args.iter().any(|a| a == "--nvtop"),
            pairs,
            demo: args.iter().any(|a| a == "--demo"),
            baseline,
            costs: args.iter().any(|a| a == "--costs"),
        }
    }
}

fn main() {
    let opts = Options::parse();
    render_times();
    if opts.render_only {
        return;
    }
    if let Err(e) = live(&opts) {
        eprintln!("live benchmark failed: {e}");
        std::process::exit(1);
    }
}

/// A state with a full 10-minute history on 8 GPUs, as after a long session.
fn full_state() -> AppState {
    let config = Config::default();
    let mut state = AppState::new(&config, "bench".into(), false);
    let spec = SimSpec::parse(SIM).unwrap_or_default();
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
    let mut state = full_state();
    let theme = gpudeck::config::Theme::builtin(gpudeck::config::DEFAULT_THEME)
        .unwrap_or_else(|_| gpudeck::config::Theme::monochrome());
    let keymap = bindings();
    for (w, h) in [(80u16, 24u16), (160, 50), (200, 50)] {
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
    diff_times(&mut state, &theme, &keymap);
}

/// What ratatui's `Terminal::draw` adds to a frame at 160x50, from one frame to the next a second
/// later (new samples: numbers, bars and charts move): finding the cells that changed
/// (`Buffer::diff`) and writing them through `CrosstermBackend::draw` (to `io::sink()`).
fn diff_times(state: &mut AppState, theme: &gpudeck::config::Theme, keymap: &[Binding]) {
    let area = Rect::new(0, 0, 160, 50);
    let mut before = Buffer::empty(area);
    gpudeck::ui::render(area, &mut before, state, theme, keymap);
    if let gpudeck::app::gpus::GpuStatus::Ready(data) = &state.gpu {
        let mut next = data.samples.clone();
        for (i, s) in next.iter_mut().enumerate() {
            s.util_gpu_pct = s.util_gpu_pct.map(|u| (u + 13 + i as u32) % 101);
            s.util_mem_pct = s.util_mem_pct.map(|u| (u + 7) % 101);
            s.memory_used_bytes = s.memory_used_bytes.map(|m| m / 10 * 9);
            s.power_w = s.power_w.map(|p| p * 0.8);
            s.temp_c = s.temp_c.map(|t| t + 2);
        }
        state.apply_gpu(GpuUpdate::Sampled(next));
    }
    let mut after = Buffer::empty(area);
    gpudeck::ui::render(area, &mut after, state, theme, keymap);
    let n = 2000;
    let start = Instant::now();
    let mut cells = 0;
    for _ in 0..n {
        cells = std::hint::black_box(before.diff(&after)).len();
    }
    let diff = start.elapsed().as_secs_f64() / f64::from(n) * 1e6;
    let updates = before.diff(&after);
    let mut bytes = Vec::new();
    CrosstermBackend::new(&mut bytes)
        .draw(updates.iter().copied())
        .expect("written to memory");
    let mut sink = CrosstermBackend::new(std::io::sink());
    let start = Instant::now();
    for _ in 0..n {
        sink.draw(std::hint::black_box(&updates).iter().copied())
            .expect("written");
    }
    let write = start.elapsed().as_secs_f64() / f64::from(n) * 1e6;
    println!(
        "one frame's changes 160x50 ({cells} cells, {} bytes): Buffer::diff {diff:.1} µs, CrosstermBackend::draw {write:.1} µs (mean of {n})",
        bytes.len()
    );
}

/// What one live run measured.
struct Figures {
    cpu_per_min: f64,
    rss_mib: f64,
    /// CPU-s per minute by thread name, most first.
    threads: Vec<(String, f64)>,
    frames_per_min: Option<f64>,
    first_frame_ms: Option<String>,
}

fn live(opts: &Options) -> Result<(), String> {
    let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release");
    let bin = release.join("gpudeck");
    if !bin.exists() {
        return Err("build the release binary first: cargo build --release --workspace".into());
    }
    let lib = release.join("libgpudeck_nvml_sim.so");
    if (opts.nvtop || !opts.demo) && !lib.exists() {
        return Err("build the simulator library first: cargo build --release --workspace".into());
    }
    let source = if opts.demo {
        "in-process simulation (--demo)"
    } else {
        "the simulator library through NVML"
    };
    println!(
        "live: 8 simulated GPUs ({}), 1 s refresh, {}x{} tmux pane, {} s window after {} s; gpudeck on {source}",
        opts.sim(),
        PANE.0,
        PANE.1,
        opts.seconds,
        SETTLE.as_secs()
    );
    let mut pairs = Vec::new();
    for pair in 1..=opts.pairs {
        if let Some(before) = &opts.baseline {
            let b = gpudeck_run(opts, before, &lib)?;
            print!("  baseline ({}) ", before.display());
            print_gpudeck(pair, &b);
        }
        let g = gpudeck_run(opts, &bin, &lib)?;
        print_gpudeck(pair, &g);
        let n = if opts.nvtop {
            let n = nvtop_run(opts.seconds, opts.sim(), &lib)?;
            println!(
                "  nvtop   #{pair}: {:.3} CPU-s/min, peak RSS {:.1} MiB",
                n.cpu_per_min, n.rss_mib
            );
            Some(n)
        } else {
            None
        };
        pairs.push((g, n));
    }
    if opts.nvtop {
        println!(
            "{:>5} {:>18} {:>18} {:>16} {:>16} {:>13}",
            "pair",
            "gpudeck CPU-s/min",
            "nvtop CPU-s/min",
            "gpudeck RSS MiB",
            "nvtop RSS MiB",
            "CPU ratio"
        );
        for (i, (g, n)) in pairs.iter().enumerate() {
            if let Some(n) = n {
                println!(
                    "{:>5} {:>18.3} {:>18.3} {:>16.1} {:>16.1} {:>12.2}x",
                    i + 1,
                    g.cpu_per_min,
                    n.cpu_per_min,
                    g.rss_mib,
                    n.rss_mib,
                    g.cpu_per_min / n.cpu_per_min.max(1e-9)
                );
            }
        }
    }
    Ok(())
}

fn print_gpudeck(pair: usize, g: &Figures) {
    let frames = g
        .frames_per_min
        .map_or_else(|| "?".into(), |f| format!("{f:.0}"));
    println!(
        "  gpudeck #{pair}: {:.3} CPU-s/min, peak RSS {:.1} MiB, {frames} frames/min, first frame {} ms",
        g.cpu_per_min,
        g.rss_mib,
        g.first_frame_ms.as_deref().unwrap_or("?")
    );
    let threads: Vec<String> = g
        .threads
        .iter()
        .map(|(name, cpu)| format!("{name} {cpu:.3}"))
        .collect();
    println!("    by thread (CPU-s/min): {}", threads.join(", "));
}

fn scratch_dir(what: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("gpudeck-bench-{}-{what}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

fn gpudeck_run(opts: &Options, bin: &Path, lib: &Path) -> Result<Figures, String> {
    let dir = scratch_dir("gpudeck")?;
    let source = if opts.demo {
        "--demo".to_string()
    } else {
        format!("--nvml-lib {}", lib.display())
    };
    let cmd = format!(
        "exec env GPUDECK_STATE_DIR={d}/state GPUDECK_CONFIG_DIR={d}/config GPUDECK_DATA_DIR={d}/data \
         GPUDECK_SIM={sim} GPUDECK_LOG=gpudeck::app=trace TERM=xterm-256color \
         DOCKER_HOST=unix://{d}/no-docker.sock {bin} {source}",
        d = dir.display(),
        bin = bin.display(),
        sim = opts.sim(),
    );
    let window = measure_in_tmux("gpudeck", &cmd, opts.seconds)?;
    let log = fs::read_to_string(dir.join("state/gpudeck.log"))
        .or_else(|_| fs::read_to_string(dir.join("gpudeck.log")))
        .unwrap_or_default();
    let _ = fs::remove_dir_all(&dir);
    let first_frame_ms = log
        .lines()
        .find(|l| l.contains("first frame drawn"))
        .and_then(|l| l.split("elapsed_ms=").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .map(str::to_string);
    let frames_per_min =
        frames_in(&log, &window.from, &window.to).map(|n| n as f64 / (opts.seconds as f64 / 60.0));
    Ok(Figures {
        first_frame_ms,
        frames_per_min,
        ..window.figures
    })
}

fn nvtop_run(seconds: u64, sim: &str, lib: &Path) -> Result<Figures, String> {
    let dir = scratch_dir("nvtop")?;
    let libdir = dir.join("nvml");
    fs::create_dir_all(&libdir).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(lib, libdir.join("libnvidia-ml.so.1"))
        .map_err(|e| format!("cannot link the simulator library: {e}"))?;
    let cmd = format!(
        "exec env LD_LIBRARY_PATH={l} GPUDECK_SIM={sim} XDG_CONFIG_HOME={d} HOME={d} \
         TERM=xterm-256color nvtop -d 10",
        l = libdir.display(),
        d = dir.display(),
    );
    let window = measure_in_tmux("nvtop", &cmd, seconds);
    let _ = fs::remove_dir_all(&dir);
    Ok(window?.figures)
}

/// A measured window: the figures, and its start and end as wall-clock RFC 3339 prefixes for
/// picking the log lines inside it.
struct Window {
    figures: Figures,
    from: String,
    to: String,
}

/// Starts `cmd` in a tmux pane of its own, lets it settle, and measures it over `seconds`.
fn measure_in_tmux(what: &str, cmd: &str, seconds: u64) -> Result<Window, String> {
    let session = Tmux(format!("gpudeck-bench-{}-{what}", std::process::id()));
    let ok = Command::new("tmux")
        .args(["-L", &session.0, "-f", "/dev/null", "new-session", "-d"])
        .args(["-s", &session.0, "-x", PANE.0, "-y", PANE.1, cmd])
        .status()
        .map_err(|e| format!("tmux: {e}"))?
        .success();
    if !ok {
        return Err(format!("tmux could not start {what}"));
    }
    let pid = session.run(&["display-message", "-p", "-t", &session.0, "#{pane_pid}"]);
    let pid = pid.trim().to_string();
    std::thread::sleep(SETTLE);
    let t0 = thread_cpu_ns(&pid);
    let c0 = cpu_ns(&pid).ok_or(format!("{what} is not running"))?;
    let from = utc_now();
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let c1 = cpu_ns(&pid).ok_or(format!("{what} died during the benchmark"))?;
    let t1 = thread_cpu_ns(&pid);
    let to = utc_now();
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    let hwm = status_kib(&pid, "VmHWM:").unwrap_or(0);
    session.run(&["send-keys", "-t", &session.0, "q"]);
    std::thread::sleep(Duration::from_millis(500));
    let mut threads: Vec<(String, f64)> = t1
        .into_iter()
        .map(|(name, ns)| {
            let before = t0.get(&name).copied().unwrap_or(0);
            (name, ns.saturating_sub(before) as f64 / 1e9 / minutes)
        })
        .collect();
    threads.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(Window {
        figures: Figures {
            cpu_per_min: (c1 - c0) as f64 / 1e9 / minutes,
            rss_mib: hwm as f64 / 1024.0,
            threads,
            frames_per_min: None,
            first_frame_ms: None,
        },
        from,
        to,
    })
}

/// CPU time by thread name (threads of one name summed: tokio's workers), in nanoseconds.
fn thread_cpu_ns(pid: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let name = fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let ns = fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        *out.entry(name.trim().to_string()).or_insert(0) += ns;
    }
    out
}

/// The time now as the log writes it (`2026-11-25T15:20:01`), from `date`.
fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Frames drawn between two times (log lines start with their RFC 3339 time).
fn frames_in(log: &str, from: &str, to: &str) -> Option<usize> {
    if from.is_empty() || to.is_empty() || !log.contains("frame drawn") {
        return None;
    }
    Some(
        log.lines()
            .filter(|l| l.contains("frame drawn") && !l.contains("first frame"))
            .filter(|l| {
                let t = l.get(..from.len()).unwrap_or("");
                t >= from && t < to
            })
            .count(),
    )
}

/// A tmux server of its own, killed when dropped.
struct Tmux(String);

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        Command::new("tmux")
            .args(["-L", &self.0])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}
