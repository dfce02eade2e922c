//! Slurm submission latency benchmark: how long from `gpudeck run --on slurm` to the job showing
//! as running. Starts its own one-node Slurm (2 fake GPUs, `tests/support/slurm-up.sh` on two
//! free ports, stopped again at the end, on error too), then N times: submits
//! `gpudeck run --on slurm --gpus count:1 -- sleep 30`, polls `gpudeck runs --json` and
//! `squeue -j JOBID` every 50 ms until each says running, and stops the run with `gpudeck stop`.
//! Prints min / median / max in ms, from the start of `gpudeck run`, of: `gpudeck run` returning
//! (the submission), squeue saying RUNNING (Slurm's own share) and `gpudeck runs` saying running.
//!
//! `cargo build --release && cargo run --release --example slurm_bench -- [N]`
//! (default N=10; needs root and the Debian packages munge, slurmctld, slurmd and slurm-client).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long any one wait may take before the benchmark gives up.
const WAIT: Duration = Duration::from_secs(30);
/// The polling interval of `gpudeck runs --json` and of `squeue`.
const POLL: Duration = Duration::from_millis(50);
/// What each iteration submits.
const RUN: &[&str] = &[
    "run", "--on", "slurm", "--gpus", "count:1", "--", "sleep", "30",
];

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    if n == 0 {
        eprintln!("slurm benchmark failed: N must be at least 1");
        std::process::exit(1);
    }
    if let Err(e) = bench(n) {
        eprintln!("slurm benchmark failed: {e}");
        std::process::exit(1);
    }
}

/// A running cluster; dropping it cancels its jobs and stops its daemons.
struct Cluster {
    state: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Result<Cluster, String> {
        let state = tempfile::Builder::new()
            .prefix("gpudeck-slurm-bench-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let (ctld, slurmd) = (free_port()?, free_port()?);
        let out = Command::new(script())
            .arg("up")
            .arg(state.path())
            .args([ctld.to_string(), slurmd.to_string()])
            .output()
            .map_err(|e| format!("{} could not be run: {e}", script().display()))?;
        // Guarded before the status is looked at: `up` may have started a daemon and then failed.
        let cluster = Cluster { state };
        if !out.status.success() {
            return Err(format!(
                "no Slurm cluster could be started (needs root and the packages munge slurmctld slurmd slurm-client): {}",
                text(&out.stderr).trim()
            ));
        }
        Ok(cluster)
    }

    fn conf(&self) -> PathBuf {
        self.state.path().join("slurm.conf")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("down")
            .arg(self.state.path())
            .status();
    }
}

fn script() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/slurm-up.sh"
    ))
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// The release gpudeck with a private run store, pointed at the cluster. Fields drop in order:
/// the cluster (and its jobs) goes before the directories the jobs write their logs into.
struct Bench {
    cluster: Cluster,
    dirs: tempfile::TempDir,
    bin: PathBuf,
}

impl Bench {
    fn slurm(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", self.cluster.conf());
        cmd
    }

    fn gpudeck(&self, args: &[&str]) -> Result<Output, String> {
        let d = self.dirs.path();
        Command::new(&self.bin)
            .env("SLURM_CONF", self.cluster.conf())
            .env("GPUDECK_CONFIG_DIR", d.join("config"))
            .env("GPUDECK_DATA_DIR", d.join("data"))
            .env("GPUDECK_STATE_DIR", d.join("state"))
            .env("GPUDECK_SIM", "gpus=4")
            .env("HOME", d)
            .env("XDG_CONFIG_HOME", d.join("xdg/config"))
            .env("XDG_DATA_HOME", d.join("xdg/data"))
            .env("XDG_STATE_HOME", d.join("xdg/state"))
            .env("XDG_CACHE_HOME", d.join("xdg/cache"))
            .current_dir(d)
            .arg("--demo")
            .args(args)
            .output()
            .map_err(|e| format!("{} could not be run: {e}", self.bin.display()))
    }

    /// `gpudeck ARGS`, which must succeed; its stdout.
    fn gpudeck_ok(&self, args: &[&str]) -> Result<String, String> {
        let out = self.gpudeck(args)?;
        if !out.status.success() {
            return Err(format!(
                "gpudeck {} failed ({}): {}",
                args.join(" "),
                out.status,
                text(&out.stderr).trim()
            ));
        }
        Ok(text(&out.stdout))
    }

    /// The run's state as `gpudeck runs --json` shows it (which asks Slurm).
    fn listed_state(&self, id: &str) -> Result<String, String> {
        let json = self.gpudeck_ok(&["runs", "--json"])?;
        let doc: serde_json::Value =
            serde_json::from_str(&json).map_err(|e| format!("runs --json is not JSON: {e}"))?;
        let run = doc["runs"]
            .as_array()
            .and_then(|runs| runs.iter().find(|r| r["id"] == id))
            .ok_or_else(|| format!("{id} is not in gpudeck runs --json"))?;
        Ok(run["state"].as_str().unwrap_or_default().to_string())
    }

    /// The run's Slurm job id, from its record (read directly, so no extra squeue is run).
    fn job_id(&self, id: &str) -> Result<String, String> {
        let path = self.dirs.path().join("data/runs").join(id).join("run.json");
        let record: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        record["slurm"]["job_id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{id} has no Slurm job id: {record}"))
    }

    /// What `squeue -h -j JOB -o %T` says of a job ("PENDING", "RUNNING").
    fn squeue_state(&self, job: &str) -> String {
        self.slurm("squeue")
            .args(["-h", "-j", job, "-o", "%T"])
            .output()
            .map(|o| text(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }
}

/// One iteration's figures, from the start of `gpudeck run`.
struct Times {
    submitted: Duration,
    slurm_running: Duration,
    gpudeck_running: Duration,
}

fn bench(n: usize) -> Result<(), String> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/gpudeck");
    if !bin.exists() {
        return Err("build the release binary first: cargo build --release".into());
    }
    let dirs = tempfile::Builder::new()
        .prefix("gpudeck-slurm-bench-dirs-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let cluster = Cluster::start()?;
    let bench = Bench { cluster, dirs, bin };
    print_settings(&bench);
    let mut all = Vec::with_capacity(n);
    let mut polls = Vec::new();
    for i in 0..n {
        let times =
            iteration(&bench, &mut polls).map_err(|e| format!("iteration {}: {e}", i + 1))?;
        println!(
            "  {:>2}: submitted {:>5.0} ms, squeue RUNNING {:>5.0} ms, gpudeck running {:>5.0} ms",
            i + 1,
            ms(times.submitted),
            ms(times.slurm_running),
            ms(times.gpudeck_running)
        );
        all.push(times);
    }
    println!();
    println!(
        "{n} iterations of `gpudeck {}`, ms from the start of `gpudeck run`:",
        RUN.join(" ")
    );
    println!("{:<36} {:>7} {:>7} {:>7}", "", "min", "median", "max");
    row(
        "gpudeck run returned (submitted)",
        all.iter().map(|t| t.submitted),
    );
    row("squeue says RUNNING", all.iter().map(|t| t.slurm_running));
    row(
        "gpudeck runs says running",
        all.iter().map(|t| t.gpudeck_running),
    );
    row("one `gpudeck runs --json` (a poll)", polls.into_iter());
    Ok(())
}

/// Submit, wait for running (gpudeck's view and squeue's), stop and wait for the GPUs to be free.
fn iteration(bench: &Bench, polls: &mut Vec<Duration>) -> Result<Times, String> {
    let start = Instant::now();
    let id = bench.gpudeck_ok(RUN)?.trim().to_string();
    let submitted = start.elapsed();
    if id.is_empty() {
        return Err("gpudeck run printed no run id".into());
    }
    let job = bench.job_id(&id)?;
    let (slurm_running, gpudeck_running) = std::thread::scope(|s| {
        let squeue = s.spawn(|| {
            let mut last = String::new();
            while start.elapsed() < WAIT {
                last = bench.squeue_state(&job);
                if last == "RUNNING" {
                    return Ok(start.elapsed());
                }
                std::thread::sleep(POLL);
            }
            Err(format!(
                "squeue did not say RUNNING for job {job} within {}s (last: {last:?})",
                WAIT.as_secs()
            ))
        });
        let gpudeck = (|| {
            let mut last = String::new();
            while start.elapsed() < WAIT {
                let asked = Instant::now();
                last = bench.listed_state(&id)?;
                polls.push(asked.elapsed());
                if last == "running" {
                    return Ok(start.elapsed());
                }
                if last != "starting" {
                    return Err(format!("{id} (job {job}) became {last} instead of running"));
                }
                std::thread::sleep(POLL);
            }
            Err(format!(
                "gpudeck runs did not show {id} (job {job}) running within {}s (last: {last:?})",
                WAIT.as_secs()
            ))
        })();
        let squeue = squeue
            .join()
            .unwrap_or_else(|_| Err("the squeue poller panicked".into()));
        (squeue, gpudeck)
    });
    let (slurm_running, gpudeck_running) = (slurm_running?, gpudeck_running?);
    stop(bench, &id, &job)?;
    Ok(Times {
        submitted,
        slurm_running,
        gpudeck_running,
    })
}

/// `gpudeck stop ID`, the run recorded stopped, and no job left in the queue (GPUs free).
fn stop(bench: &Bench, id: &str, job: &str) -> Result<(), String> {
    bench.gpudeck_ok(&["stop", id])?;
    let state = bench.listed_state(id)?;
    if state != "stopped" {
        return Err(format!("{id} is {state} after gpudeck stop, not stopped"));
    }
    let start = Instant::now();
    loop {
        let queue = bench
            .slurm("squeue")
            .args(["-h", "-o", "%i %T"])
            .output()
            .map_err(|e| format!("squeue could not be run: {e}"))?;
        let queue = text(&queue.stdout);
        if queue.trim().is_empty() {
            return Ok(());
        }
        if start.elapsed() > WAIT {
            return Err(format!(
                "job {job} was stopped but the queue is not empty after {}s: {}",
                WAIT.as_secs(),
                queue.trim()
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// The Slurm version and the settings that decide how soon a submitted job starts.
fn print_settings(bench: &Bench) {
    let config = bench
        .slurm("scontrol")
        .args(["show", "config"])
        .output()
        .map(|o| text(&o.stdout))
        .unwrap_or_default();
    let wanted = [
        "SLURM_VERSION",
        "SchedulerType",
        "SchedulerParameters",
        "SelectType",
        "SelectTypeParameters",
        "PriorityType",
    ];
    let settings: Vec<String> = config
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, _)| wanted.contains(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    println!(
        "one-node Slurm, 2 fake GPUs: {}",
        match settings.is_empty() {
            true => "(scontrol show config said nothing)".to_string(),
            false => settings.join(" "),
        }
    );
}

fn row(what: &str, times: impl Iterator<Item = Duration>) {
    let mut times: Vec<Duration> = times.collect();
    if times.is_empty() {
        return;
    }
    times.sort();
    let mid = times.len() / 2;
    let median = match times.len() % 2 {
        1 => ms(times[mid]),
        _ => (ms(times[mid - 1]) + ms(times[mid])) / 2.0,
    };
    println!(
        "{what:<36} {:>7.0} {median:>7.0} {:>7.0}",
        ms(times[0]),
        ms(times[times.len() - 1])
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
