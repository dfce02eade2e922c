//! Run-history benchmark: a run store filled with N ended runs (records, metrics and logs as the
//! supervisor leaves them), then the steady CPU of following it: the runs collector in this
//! process, and the whole dashboard (the gpudeck binary `--demo` in tmux, on the GPUs tab and on
//! the Runs tab), for each N. A dashboard whose cost does not grow with history spends about the
//! same with 3,000 ended runs as with none.
//!
//! `cargo build --release && cargo run --release --example history_bench -- [--counts 0,100,3000,30000]
//! [--secs 20] [--bin target/release/gpudeck] [--warmup SECS] [--dir /dev/shm] [--no-dashboard]
//! [--no-collector]
//! [--no-summary-files]` (`--no-summary-files`: runs as an older gpudeck left them, without
//! `summary.json`; the dashboard part needs tmux).

#[path = "common/procfs.rs"]
mod procfs;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use gpudeck::runs::recorded::samples::{MetricsRow, MetricsWriter};
use gpudeck::runs::watch::{self, RunsUpdate};
use gpudeck::runs::{
    Launcher, RankRecord, Run, RunGpu, RunRecord, RunState, RunStore, SUMMARY_FILE, SUMMARY_SCHEMA,
};
use procfs::cpu_ns;

/// Seconds of metrics per run (two GPUs, one row each a second).
const RUN_SECS: i64 = 30;
/// Waited after the first complete listing (and after the dashboard's warm-up) before measuring.
const SETTLE: Duration = Duration::from_secs(5);

struct Options {
    counts: Vec<usize>,
    secs: u64,
    bin: PathBuf,
    dashboard: bool,
    collector: bool,
    summary_files: bool,
    /// Where the stores are made (`--dir`, else the temporary directory; a tmpfs such as
    /// /dev/shm spares a disk that discards on delete minutes of cleaning up).
    dir: PathBuf,
    /// Seconds the dashboard is given before each measurement (at least twice the collector's
    /// first listing), then 5 s more.
    warmup: f64,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Options {
        counts: value("--counts")
            .unwrap_or_else(|| "0,100,3000,30000".into())
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        secs: value("--secs").and_then(|s| s.parse().ok()).unwrap_or(20),
        bin: value("--bin")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/release/gpudeck")),
        dashboard: !args.iter().any(|a| a == "--no-dashboard"),
        collector: !args.iter().any(|a| a == "--no-collector"),
        dir: value("--dir")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir),
        warmup: value("--warmup")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0),
        summary_files: !args.iter().any(|a| a == "--no-summary-files"),
    }
}

fn main() {
    let opts = options();
    if opts.dashboard && !opts.bin.exists() {
        eprintln!(
            "{} is missing: build it first (cargo build --release), or pass --bin PATH or \
             --no-dashboard",
            opts.bin.display()
        );
        std::process::exit(1);
    }
    let mut results = Vec::new();
    for &n in &opts.counts {
        match bench_one(&opts, n) {
            Ok(r) => {
                results.push(r);
                report(&opts, &results);
            }
            Err(e) => {
                eprintln!("history benchmark with {n} runs failed: {e}");
                std::process::exit(1);
            }
        }
    }
}

/// What one store size cost.
struct Figures {
    runs: usize,
    fill_s: f64,
    first_listing_s: f64,
    first_listing_cpu_ms: f64,
    collector_cpu_ms: f64,
    listings: usize,
    gpus_tab_cpu_ms: Option<f64>,
    runs_tab_cpu_ms: Option<f64>,
}

fn bench_one(opts: &Options, n: usize) -> Result<Figures, String> {
    let dir = opts
        .dir
        .join(format!("gpudeck-history-bench-{}-{n}", std::process::id()));
    let _cleanup = Cleanup(dir.clone());
    let data = dir.join("data");
    let filled = Instant::now();
    fill(&data, n, opts.summary_files)?;
    let fill_s = filled.elapsed().as_secs_f64();
    eprintln!("{n} ended runs written in {fill_s:.1} s");
    let (first_listing_s, first_listing_cpu_ms, collector_cpu_ms, listings) = if opts.collector {
        collector(&data, n, opts.secs)?
    } else {
        (0.0, 0.0, 0.0, 0)
    };
    let (gpus_tab_cpu_ms, runs_tab_cpu_ms) = if opts.dashboard {
        let warmup = Duration::from_secs_f64(opts.warmup.max(2.0 * first_listing_s)) + SETTLE;
        let (g, r) = dashboard(opts, &dir, n, warmup)?;
        (Some(g), Some(r))
    } else {
        (None, None)
    };
    Ok(Figures {
        runs: n,
        fill_s,
        first_listing_s,
        first_listing_cpu_ms,
        collector_cpu_ms,
        listings,
        gpus_tab_cpu_ms,
        runs_tab_cpu_ms,
    })
}

struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// N ended runs under `data/runs`, oldest first: a template run written with the supervisor's
/// own types, copied with each run's id and times.
fn fill(data: &Path, n: usize, summary_files: bool) -> Result<(), String> {
    let root = data.join("runs");
    fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let logs = (1..=RUN_SECS)
        .map(|s| format!("step={s}/{RUN_SECS} loss={:.4}\n", 2.0 / s as f64))
        .collect::<String>();
    for i in 0..n {
        let started = now - 3_600_000 - (n - i) as i64 * 60_000;
        let id = format!("20250101-000000-bench-{i:06}");
        let run_dir = root.join(&id);
        fs::create_dir_all(&run_dir).map_err(|e| e.to_string())?;
        let record = record(&id, started);
        let write = |name: &str, bytes: &[u8]| {
            fs::write(run_dir.join(name), bytes).map_err(|e| format!("{name}: {e}"))
        };
        write(
            "spec.toml",
            b"name = \"bench\"\ncommand = [\"python\", \"train.py\"]\n",
        )?;
        write(
            "run.json",
            &serde_json::to_vec_pretty(&record).map_err(|e| e.to_string())?,
        )?;
        write("metrics.csv", &metrics(started))?;
        write("rank-0.stdout.log", logs.as_bytes())?;
        write("rank-1.stdout.log", logs.as_bytes())?;
        write("supervisor.log", b"gpudeck supervisor: started 2 rank(s)\n")?;
        if summary_files {
            // What the supervisor saves at the end (`save_summary`), written without its fsyncs.
            let ended = record.ended_ms.unwrap_or(0);
            let run = Run {
                dir: run_dir.clone(),
                record,
            };
            let summary = run.summary(ended).map_err(|e| e.to_string())?;
            let bytes = fs::metadata(run_dir.join("metrics.csv")).map_err(|e| e.to_string())?;
            let doc = serde_json::json!({
                "schema": SUMMARY_SCHEMA,
                "ended_ms": ended,
                "metrics_bytes": bytes.len(),
                "summary": summary,
            });
            write(
                SUMMARY_FILE,
                &serde_json::to_vec_pretty(&doc).map_err(|e| e.to_string())?,
            )?;
        }
    }
    Ok(())
}

fn record(id: &str, started: i64) -> RunRecord {
    let mut r = RunRecord::starting(
        id.into(),
        "bench".into(),
        Launcher::PerGpu,
        "/tmp".into(),
        "benchhost".into(),
        started as u64 - 400,
    );
    r.gpus = (0..2)
        .map(|i| RunGpu {
            index: i,
            uuid: format!("GPU-bench-{i}"),
            name: "NVIDIA H100 80GB HBM3".into(),
        })
        .collect();
    r.ranks = (0..2)
        .map(|rank| RankRecord {
            rank,
            argv: vec!["python".into(), "train.py".into()],
            env: [("RANK".to_string(), rank.to_string())].into(),
            gpus: vec![rank as u32],
            pid: Some(100_000 + rank as u32),
            exit_code: Some(0),
            ended_ms: None,
        })
        .collect();
    r.state = RunState::Succeeded;
    r.started_ms = Some(started as u64);
    r.ended_ms = Some((started + RUN_SECS * 1000) as u64);
    r.exit_code = Some(0);
    r
}

fn metrics(started: i64) -> Vec<u8> {
    let mut out = Vec::new();
    if let Ok(mut writer) = MetricsWriter::new(&mut out) {
        for s in 1..=RUN_SECS {
            let rows: Vec<MetricsRow> = (0..2)
                .map(|gpu| MetricsRow {
                    t_unix_ms: started + s * 1000,
                    gpu_index: gpu,
                    gpu_uuid: format!("GPU-bench-{gpu}"),
                    util_pct: Some(90),
                    mem_used_bytes: Some(40 << 30),
                    mem_total_bytes: Some(80 << 30),
                    power_w: Some(600.0),
                    temp_c: Some(60),
                    sm_clock_mhz: Some(1980),
                })
                .collect();
            let _ = writer.write_batch(&rows);
        }
    }
    out
}

/// The runs collector alone, in this process: how long until every run is listed with its
/// summary, the CPU that took, then (5 s later) this process's CPU over `secs` seconds and the
/// updates sent meanwhile.
fn collector(data: &Path, n: usize, secs: u64) -> Result<(f64, f64, f64, usize), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let cpu0 = cpu_ns("self").ok_or("no /proc/self")?;
    let started = Instant::now();
    let handle = watch::spawn(
        RunStore::new(data),
        tx,
        gpudeck::health::XidCatalog::builtin(),
    );
    let complete = |u: &RunsUpdate| match u {
        RunsUpdate::Listed { runs, .. } => {
            runs.len() == n && runs.iter().all(|r| r.summary.is_some())
        }
        _ => false,
    };
    let deadline = started + Duration::from_secs(600);
    runtime.block_on(async {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, rx.recv()).await {
                Ok(Some(u)) if complete(&u) => return Ok(()),
                Ok(Some(_)) => {}
                Ok(None) => return Err("the collector stopped".to_string()),
                Err(_) => return Err(format!("no complete listing of {n} runs in 600 s")),
            }
        }
    })?;
    let first_s = started.elapsed().as_secs_f64();
    let cpu_first = cpu_ns("self").ok_or("no /proc/self")?;
    // The store was just written: its directory is listed again until it has been quiet 2 s.
    let settled = Instant::now() + SETTLE;
    runtime.block_on(async {
        while let Ok(Some(_)) = tokio::time::timeout_at(settled.into(), rx.recv()).await {}
    });
    let cpu1 = cpu_ns("self").ok_or("no /proc/self")?;
    let window_end = Instant::now() + Duration::from_secs(secs);
    let mut listings = 0;
    runtime.block_on(async {
        while let Ok(Some(u)) = tokio::time::timeout_at(window_end.into(), rx.recv()).await {
            listings += usize::from(matches!(
                u,
                RunsUpdate::Listed { .. } | RunsUpdate::Changed { .. }
            ));
        }
    });
    let cpu2 = cpu_ns("self").ok_or("no /proc/self")?;
    drop(handle);
    Ok((
        first_s,
        (cpu_first - cpu0) as f64 / 1e6,
        (cpu2 - cpu1) as f64 / 1e6,
        listings,
    ))
}

/// The dashboard on 8 simulated GPUs over the store: its CPU over `--secs` on the GPUs tab, then
/// over `--secs` on the Runs tab, each after `warmup`. It is given no Docker Engine: containers
/// that others start and stop on this machine would wake it and blur the figures.
fn dashboard(opts: &Options, dir: &Path, n: usize, warmup: Duration) -> Result<(f64, f64), String> {
    let session = Tmux(format!("gpudeck-history-bench-{}-{n}", std::process::id()));
    let cmd = format!(
        "exec env GPUDECK_STATE_DIR={d}/state GPUDECK_CONFIG_DIR={d}/config GPUDECK_DATA_DIR={d}/data \
         GPUDECK_SIM=gpus=8,seed=42 TERM=xterm-256color DOCKER_HOST=unix://{d}/no-docker.sock \
         {bin} --demo",
        d = dir.display(),
        bin = opts.bin.display()
    );
    let ok = Command::new("tmux")
        .args(["-L", &session.0, "-f", "/dev/null", "new-session", "-d"])
        .args(["-s", &session.0, "-x", "160", "-y", "50", &cmd])
        .status()
        .map_err(|e| format!("tmux: {e}"))?
        .success();
    if !ok {
        return Err("tmux could not start the dashboard".into());
    }
    let pid = session.run(&["display-message", "-p", "-t", &session.0, "#{pane_pid}"]);
    let pid = pid.trim().to_string();
    let measure = |what: &str| -> Result<f64, String> {
        std::thread::sleep(warmup);
        let c0 = cpu_ns(&pid).ok_or(format!("the dashboard died before the {what}"))?;
        std::thread::sleep(Duration::from_secs(opts.secs));
        let c1 = cpu_ns(&pid).ok_or(format!("the dashboard died during the {what}"))?;
        Ok((c1 - c0) as f64 / 1e6)
    };
    let gpus = measure("GPUs tab")?;
    session.run(&["send-keys", "-t", &session.0, "8"]);
    let runs = measure("Runs tab")?;
    let screen = session.run(&["capture-pane", "-p", "-t", &session.0]);
    if n > 0 && !screen.contains("bench") {
        return Err(format!("the Runs tab does not show the runs:\n{screen}"));
    }
    session.run(&["send-keys", "-t", &session.0, "q"]);
    Ok((gpus, runs))
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

fn report(opts: &Options, results: &[Figures]) {
    let base = results.iter().find(|r| r.runs == 0);
    let ratio = |v: f64, b: Option<f64>| match b {
        Some(b) if b > 0.0 => format!("{:.2}x", v / b),
        _ => "-".into(),
    };
    println!(
        "steady CPU over {} s (ms of CPU time); ratio to an empty store; summary.json files: {}",
        opts.secs,
        if opts.summary_files { "yes" } else { "no" }
    );
    println!(
        "{:>7} {:>7} {:>12} {:>11} {:>16} {:>9} {:>16} {:>16}",
        "runs",
        "fill s",
        "1st list s",
        "1st list ms",
        "collector ms",
        "listings",
        "GPUs tab ms",
        "Runs tab ms"
    );
    for r in results {
        let opt = |v: Option<f64>, b: Option<f64>| match v {
            Some(v) => format!("{v:.0} ({})", ratio(v, b)),
            None => "-".into(),
        };
        println!(
            "{:>7} {:>7.1} {:>12.2} {:>11.0} {:>16} {:>9} {:>16} {:>16}",
            r.runs,
            r.fill_s,
            r.first_listing_s,
            r.first_listing_cpu_ms,
            format!(
                "{:.1} ({})",
                r.collector_cpu_ms,
                ratio(r.collector_cpu_ms, base.map(|b| b.collector_cpu_ms))
            ),
            r.listings,
            opt(r.gpus_tab_cpu_ms, base.and_then(|b| b.gpus_tab_cpu_ms)),
            opt(r.runs_tab_cpu_ms, base.and_then(|b| b.runs_tab_cpu_ms)),
        );
    }
}
