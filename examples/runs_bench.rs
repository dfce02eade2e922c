//! Log flood benchmark: a training run prints 100,000 lines a second for 10 s while the dashboard
//! shows it in the Runs tab. Checks that every line reached the run's log file, and measures the
//! frames the dashboard drew meanwhile, its CPU, its memory, and how soon the last line was on
//! screen.
//!
//! `cargo build --release && cargo run --release --example runs_bench -- [LINES_PER_SEC] [SECONDS]`
//! (defaults 100000 and 10; needs tmux and python3).

#[path = "common/procfs.rs"]
mod procfs;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use procfs::{cpu_ns, status_kib};

/// Prints `rate` numbered lines a second for `secs` seconds in 10 ms batches, then `done N`.
const FLOOD: &str = r#"
import sys, time
rate, secs = int(sys.argv[1]), int(sys.argv[2])
batch = rate // 100
pad = "x" * 40
i = 0
start = time.time()
for tick in range(secs * 100):
    lines = []
    for _ in range(batch):
        i += 1
        lines.append(f"step={i} loss={1.0 / i:.6f} lr=0.001 {pad}\n")
    sys.stdout.write("".join(lines))
    sys.stdout.flush()
    delay = start + (tick + 1) / 100 - time.time()
    if delay > 0:
        time.sleep(delay)
print(f"done {i}", flush=True)
"#;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rate = args.first().copied().unwrap_or(100_000);
    let secs = args.get(1).copied().unwrap_or(10);
    if let Err(e) = bench(rate, secs) {
        eprintln!("runs benchmark failed: {e}");
        std::process::exit(1);
    }
}

struct Setup {
    bin: PathBuf,
    dir: PathBuf,
    session: String,
}

impl Setup {
    fn env(&self) -> String {
        format!(
            "GPUDECK_STATE_DIR={d}/state GPUDECK_CONFIG_DIR={d}/config GPUDECK_DATA_DIR={d}/data GPUDECK_SIM=gpus=8,seed=42 GPUDECK_LOG=gpudeck=trace TERM=xterm-256color",
            d = self.dir.display()
        )
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.session])
            .args(args)
            .output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn bench(rate: u64, secs: u64) -> Result<(), String> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/gpudeck");
    if !bin.exists() {
        return Err("build the release binary first: cargo build --release".into());
    }
    let dir = std::env::temp_dir().join(format!("gpudeck-runs-bench-{}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    fs::write(dir.join("flood.py"), FLOOD).map_err(|e| e.to_string())?;
    let setup = Setup {
        bin,
        dir,
        session: format!("gpudeck-runs-bench-{}", std::process::id()),
    };
    let pid = start_tui(&setup)?;
    let id = start_run(&setup, rate, secs)?;
    let started = Instant::now();
    let cpu0 = cpu_ns(&pid).ok_or("gpudeck is not running")?;
    let run_dir = setup.dir.join("data/runs").join(&id);
    let expected_last = format!("done {}", rate / 100 * 100 * secs);
    let mut on_screen = None;
    let mut ended = None;
    let mut peak_rss = 0;
    while started.elapsed() < Duration::from_secs(secs + 60) {
        peak_rss = peak_rss.max(status_kib(&pid, "VmRSS:").unwrap_or(0));
        if ended.is_none() && state_of(&run_dir) == "succeeded" {
            ended = Some(started.elapsed());
        }
        if ended.is_some() && on_screen.is_none() {
            let screen = setup.tmux(&["capture-pane", "-p", "-t", &setup.session]);
            if screen.contains(&expected_last) {
                on_screen = Some(started.elapsed());
            }
        }
        if on_screen.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let ended = ended.ok_or("the run did not end")?;
    let cpu1 = cpu_ns(&pid).ok_or("gpudeck died during the benchmark")?;
    let hwm = status_kib(&pid, "VmHWM:").unwrap_or(0);
    report(&setup, &run_dir, rate, secs, ended, on_screen)?;
    println!(
        "dashboard CPU over the {:.1} s: {:.2} CPU-s ({:.0}% of one core)",
        started.elapsed().as_secs_f64(),
        (cpu1 - cpu0) as f64 / 1e9,
        (cpu1 - cpu0) as f64 / 1e9 / started.elapsed().as_secs_f64() * 100.0
    );
    println!(
        "dashboard memory: RSS at most {:.1} MiB while sampled, peak (VmHWM) {:.1} MiB",
        peak_rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    setup.tmux(&["send-keys", "-t", &setup.session, "q"]);
    Ok(())
}

/// gpudeck in tmux on the Runs tab; returns its pid.
fn start_tui(setup: &Setup) -> Result<String, String> {
    let cmd = format!("exec env {} {} --demo", setup.env(), setup.bin.display());
    let ok = Command::new("tmux")
        .args(["-L", &setup.session, "-f", "/dev/null", "new-session", "-d"])
        .args(["-s", &setup.session, "-x", "120", "-y", "40", &cmd])
        .status()
        .map_err(|e| format!("tmux: {e}"))?
        .success();
    if !ok {
        return Err("tmux could not start".into());
    }
    std::thread::sleep(Duration::from_secs(2));
    setup.tmux(&["send-keys", "-t", &setup.session, "8"]);
    let pid = setup.tmux(&["display-message", "-p", "-t", &setup.session, "#{pane_pid}"]);
    Ok(pid.trim().to_string())
}

/// `gpudeck run` of the flood on simulated GPU 0; returns the run id.
fn start_run(setup: &Setup, rate: u64, secs: u64) -> Result<String, String> {
    let mut cmd = Command::new(&setup.bin);
    for pair in setup.env().split(' ') {
        if let Some((k, v)) = pair.split_once('=') {
            cmd.env(k, v);
        }
    }
    let out = cmd
        .current_dir(&setup.dir)
        .args(["--demo", "run", "--name", "flood", "--gpus", "0", "--"])
        .args(["python3", "flood.py", &rate.to_string(), &secs.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "gpudeck run: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn state_of(run_dir: &Path) -> String {
    let text = fs::read_to_string(run_dir.join("run.json")).unwrap_or_default();
    text.split("\"state\": \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_default()
        .to_string()
}

/// Every line there, in order; frames drawn while the run printed.
fn report(
    setup: &Setup,
    run_dir: &Path,
    rate: u64,
    secs: u64,
    ended: Duration,
    on_screen: Option<Duration>,
) -> Result<(), String> {
    let log = fs::read_to_string(run_dir.join("rank-0.stdout.log")).map_err(|e| e.to_string())?;
    let expected = rate / 100 * 100 * secs;
    let mut next = 1;
    let mut out_of_order = 0;
    for line in log.lines().filter(|l| l.starts_with("step=")) {
        let n: u64 = line[5..]
            .split(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if n != next {
            out_of_order += 1;
        }
        next = n + 1;
    }
    println!(
        "{rate} lines/s for {secs} s: {} of {expected} lines in the log file ({} MB), {out_of_order} out of order or missing",
        next - 1,
        log.len() / 1_000_000
    );
    println!(
        "the run ended {:.1} s after it started",
        ended.as_secs_f64()
    );
    match on_screen {
        Some(t) => println!(
            "its last line was on the dashboard {:.0} ms after the run ended",
            (t - ended).as_secs_f64() * 1000.0
        ),
        None => println!("its last line never reached the dashboard"),
    }
    let record: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(run_dir.join("run.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let day = |key: &str| {
        record[key]
            .as_u64()
            .map(|ms| (ms % 86_400_000) as f64 / 1000.0)
    };
    let (from, to) = (
        day("started_ms").unwrap_or(0.0),
        day("ended_ms").unwrap_or(f64::MAX),
    );
    let frames: Vec<f64> = frame_times(&setup.dir.join("state/gpudeck.log"))
        .into_iter()
        .filter(|t| (from..=to).contains(t))
        .collect();
    let during: Vec<f64> = frames.windows(2).map(|w| w[1] - w[0]).collect();
    if let (Some(max), false) = (during.iter().cloned().reduce(f64::max), during.is_empty()) {
        let span = frames.last().unwrap_or(&0.0) - frames.first().unwrap_or(&0.0);
        println!(
            "dashboard frames while the run printed: {} in {:.1} s ({:.1}/s), longest gap {:.0} ms",
            frames.len(),
            span,
            frames.len() as f64 / span.max(0.001),
            max * 1000.0
        );
    }
    Ok(())
}

/// Seconds of the day at which frames were drawn, from the trace log.
fn frame_times(log: &Path) -> Vec<f64> {
    let text = fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("frame drawn"))
        .filter_map(|l| {
            let time = l.split('T').nth(1)?.split('Z').next()?;
            let mut parts = time.split(':');
            let h: f64 = parts.next()?.parse().ok()?;
            let m: f64 = parts.next()?.parse().ok()?;
            let s: f64 = parts.next()?.parse().ok()?;
            Some(h * 3600.0 + m * 60.0 + s)
        })
        .collect()
}
