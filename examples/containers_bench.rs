//! Containers tab benchmark: the release binary in tmux against many containers (20 of them running,
//! so 20 stats streams): time to show them all, then gpudeck's CPU per minute and peak RSS while idle
//! on the tab, and what dockerd (and containerd with the containers' shims) spend over the same window.
//!
//! Needs the Docker Engine, tmux and busybox-static.
//! `cargo build --release && cargo run --release --example containers_bench -- [CONTAINERS] [SECONDS]`
//! (default 500 containers, 60 s). It creates the image `gpudeck-bench/busybox:latest` and containers
//! `gpudeck-bench-<i>` labelled `gpudeck.bench=1`, and removes them when it ends, Ctrl-C included.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

const IMAGE: &str = "gpudeck-bench/busybox:latest";
const LABEL: &str = "gpudeck.bench=1";
const RUNNING: usize = 20;
/// Docker CLI calls at a time while creating the containers.
const PARALLEL: usize = 16;
/// Containers per `docker rm -f` call when removing them.
const RM_BATCH: usize = 25;
/// After start-up (gpudeck) or setup (engine), before a CPU window opens.
const SETTLE: Duration = Duration::from_secs(5);
/// The engine's CPU with the containers there but no gpudeck, for comparison.
const BASELINE_MAX: Duration = Duration::from_secs(20);
const SHOW_TIMEOUT: Duration = Duration::from_secs(120);
const WIDTH: u16 = 200;
const HEIGHT: u16 = 50;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

#[path = "common/procfs.rs"]
mod procfs;
use procfs::*;

fn main() {
    let started = Instant::now();
    let numbers: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    let containers = numbers.first().copied().unwrap_or(500).max(1) as usize;
    let seconds = numbers.get(1).copied().unwrap_or(60).max(1);
    catch_signals();
    let result = bench(containers, seconds);
    println!("whole run: {:.1} s", started.elapsed().as_secs_f64());
    if let Err(e) = result {
        eprintln!("containers benchmark failed: {e}");
        std::process::exit(1);
    }
}

fn bench(containers: usize, seconds: u64) -> Result<(), String> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/gpudeck");
    if !bin.exists() {
        return Err("build the release binary first: cargo build --release".into());
    }
    preflight()?;
    let running = RUNNING.min(containers);
    let mut guard = Cleanup::new();

    let setup = Instant::now();
    build_image()?;
    guard.image = true;
    create_containers(containers, running, &guard.run_label)?;
    println!(
        "setup: image + {containers} containers ({running} running `sleep 3600`) in {:.1} s ({PARALLEL} docker CLI calls at a time)",
        setup.elapsed().as_secs_f64()
    );

    let engine = EngineProcs::find(running)?;
    pause(SETTLE)?;
    let window = BASELINE_MAX.min(Duration::from_secs(seconds));
    let (before, opened) = (engine.cpu(), Instant::now());
    pause(window)?;
    let (base_dockerd, base_others) = engine.cpu().since(&before).per_minute(opened.elapsed());
    println!(
        "engine baseline, no gpudeck ({} s): dockerd {}, containerd + {} shims {}",
        window.as_secs(),
        base_dockerd,
        engine.shims,
        base_others
    );

    let dirs = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let mut tmux = Tmux::new();
    let cmd = format!(
        "exec env GPUDECK_STATE_DIR='{}' GPUDECK_CONFIG_DIR='{}' GPUDECK_DATA_DIR='{}' GPUDECK_SIM=gpus=8,seed=42 TERM=xterm-256color '{}' --demo",
        dirs.path().join("state").display(),
        dirs.path().join("config").display(),
        dirs.path().join("data").display(),
        bin.display()
    );
    let launched = Instant::now();
    tmux.start(&cmd)?;
    tmux.keys("4")?;
    let (shown, first_seen) = wait_for_containers(&tmux, containers, launched)?;
    let pid = tmux.pane_pid()?;
    let gpudeck = [pid.clone()];
    let until_shown = Cpu::of(&gpudeck).total();
    let first_frame = first_frame_ms(&dirs.path().join("state/gpudeck.log"));
    println!(
        "time to show {containers} containers: {:.0} ms (tmux launch to `Containers · {}` on screen; first frame {first_frame} ms after process start; {} containers first shown at {:.0} ms; gpudeck used {until_shown:.3} CPU-s until then)",
        shown.1.as_secs_f64() * 1e3,
        shown.0,
        first_seen.0,
        first_seen.1.as_secs_f64() * 1e3,
    );

    pause(SETTLE)?;
    let (gpudeck_before, engine_before) = (Cpu::of(&gpudeck), engine.cpu());
    let start = Instant::now();
    pause(Duration::from_secs(seconds))?;
    let gpudeck_cpu = Cpu::of(&gpudeck).since(&gpudeck_before);
    let engine_cpu = engine.cpu().since(&engine_before);
    let elapsed = start.elapsed();
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return Err("gpudeck died during the benchmark".into());
    }
    let hwm = status_kib(&pid, "VmHWM:").unwrap_or(0);
    let sockets = sockets(&pid);
    let quit = tmux.quit();

    println!(
        "gpudeck idle on the Containers tab: {} over {seconds} s ({} containers listed, {running} running, {WIDTH}x{HEIGHT}, {sockets} sockets open){}",
        Rate::of(gpudeck_cpu.total(), elapsed),
        shown.0,
        gpudeck_cpu.note()
    );
    println!("peak RSS: {:.1} MiB", hwm as f64 / 1024.0);
    let (dockerd, others) = engine_cpu.per_minute(elapsed);
    println!(
        "dockerd over the same window: {dockerd}; without gpudeck {:.3}{}",
        base_dockerd.cpu_s_per_min,
        engine_cpu.note()
    );
    println!(
        "containerd + {} shims over the same window: {others}; without gpudeck {:.3}",
        engine.shims, base_others.cpu_s_per_min
    );
    if let Err(e) = quit {
        eprintln!("warning: {e}");
    }
    drop(tmux);
    let teardown = guard.teardown()?;
    println!(
        "teardown: {containers} containers and the image removed in {:.1} s",
        teardown.as_secs_f64()
    );
    Ok(())
}

/// The engine answers, tmux and busybox are there, and no earlier run left anything behind.
fn preflight() -> Result<(), String> {
    docker(&["version", "--format", "{{.Server.APIVersion}}"])
        .map_err(|e| format!("no Docker Engine is reachable: {e}"))?;
    Command::new("tmux")
        .arg("-V")
        .output()
        .map_err(|e| format!("tmux is required: {e}"))?;
    if !Path::new("/bin/busybox").exists() {
        return Err("/bin/busybox is missing: install Debian's busybox-static".into());
    }
    let leftovers = docker(&["ps", "-aq", "--filter", &format!("label={LABEL}")])?;
    if !leftovers.is_empty() {
        return Err(format!(
            "{} containers labelled {LABEL} already exist (another run, or one that was killed); \
             remove them with: docker rm -f $(docker ps -aq --filter label={LABEL})",
            leftovers.lines().count()
        ));
    }
    if docker(&["image", "inspect", "--format", "{{.Id}}", IMAGE]).is_ok() {
        return Err(format!(
            "{IMAGE} already exists (another run, or one that was killed); remove it with: docker rmi {IMAGE}"
        ));
    }
    Ok(())
}

/// A ~2 MB image from Debian's busybox-static, by `docker import` of a rootfs (as tests/support/docker.rs).
fn build_image() -> Result<(), String> {
    let root = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let bin = root.path().join("bin");
    fs::create_dir_all(&bin).map_err(|e| format!("mkdir bin: {e}"))?;
    fs::create_dir_all(root.path().join("tmp")).map_err(|e| format!("mkdir tmp: {e}"))?;
    fs::copy("/bin/busybox", bin.join("busybox")).map_err(|e| format!("copy busybox: {e}"))?;
    for applet in [
        "sh", "sleep", "echo", "cat", "ls", "env", "id", "true", "false", "yes", "head", "dd",
        "seq", "pwd",
    ] {
        std::os::unix::fs::symlink("busybox", bin.join(applet))
            .map_err(|e| format!("symlink {applet}: {e}"))?;
    }
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(root.path())
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("tar: {e}"))?;
    let tar_out = tar.stdout.take().ok_or("tar has no stdout")?;
    let import = Command::new("docker")
        .args([
            "import",
            "-c",
            "ENV PATH=/bin",
            "-c",
            "CMD [\"/bin/sh\"]",
            "-",
            IMAGE,
        ])
        .stdin(tar_out)
        .process_group(0)
        .output()
        .map_err(|e| format!("docker import: {e}"))?;
    let tar_ok = tar.wait().map_err(|e| format!("tar: {e}"))?.success();
    if !tar_ok || !import.status.success() {
        return Err(format!(
            "tar | docker import {IMAGE} failed: {}",
            String::from_utf8_lossy(&import.stderr).trim()
        ));
    }
    Ok(())
}

/// `gpudeck-bench-<i>`: the first `running` started with `docker run -d`, the rest only created.
fn create_containers(containers: usize, running: usize, run_label: &str) -> Result<(), String> {
    let jobs: Vec<Vec<String>> = (0..containers)
        .map(|i| {
            let verb: &[&str] = if i < running {
                &["run", "-d"]
            } else {
                &["create"]
            };
            verb.iter()
                .copied()
                .chain([
                    "--name",
                    &format!("gpudeck-bench-{i}"),
                    "--label",
                    LABEL,
                    "--label",
                    run_label,
                    IMAGE,
                    "sleep",
                    "3600",
                ])
                .map(String::from)
                .collect()
        })
        .collect();
    parallel_docker(&jobs, PARALLEL, true)
}

/// Runs the docker CLI with each argument list, `threads` at a time. With `stop_early` the first
/// failure or a Ctrl-C stops it (setup); without, every job runs and the failures are counted (cleanup).
fn parallel_docker(jobs: &[Vec<String>], threads: usize, stop_early: bool) -> Result<(), String> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.min(jobs.len()) {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    if stop_early && interrupted() {
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    if let Err(e) = docker(job) {
                        errors
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(e);
                        if stop_early {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap_or_else(PoisonError::into_inner);
    if let Some(first) = errors.first() {
        return Err(format!(
            "{} docker calls failed, first: {first}",
            errors.len()
        ));
    }
    if stop_early && interrupted() {
        return Err("interrupted".into());
    }
    Ok(())
}

/// Runs the docker CLI in its own process group (a Ctrl-C reaches only this program, which then
/// cleans up); returns stdout, or stderr as the error.
fn docker<S: AsRef<OsStr>>(args: &[S]) -> Result<String, String> {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .process_group(0)
        .output()
        .map_err(|e| format!("the docker CLI could not run: {e}"))?;
    if !out.status.success() {
        let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        return Err(format!(
            "docker {} failed: {}",
            shown.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Removes this run's containers (in batches) and the image, however the run ends.
struct Cleanup {
    /// A second label only this run's containers carry, so a cleanup never touches another's.
    run_label: String,
    image: bool,
    done: bool,
}

impl Cleanup {
    fn new() -> Self {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Cleanup {
            run_label: format!("gpudeck.bench.run={}-{since_epoch}", std::process::id()),
            image: false,
            done: false,
        }
    }

    fn teardown(&mut self) -> Result<Duration, String> {
        self.done = true;
        let started = Instant::now();
        let ids = docker(&[
            "ps",
            "-aq",
            "--no-trunc",
            "--filter",
            &format!("label={LABEL}"),
            "--filter",
            &format!("label={}", self.run_label),
        ])?;
        let ids: Vec<&str> = ids.lines().filter(|l| !l.is_empty()).collect();
        let jobs: Vec<Vec<String>> = ids
            .chunks(RM_BATCH)
            .map(|batch| {
                ["rm", "-f"]
                    .into_iter()
                    .chain(batch.iter().copied())
                    .map(String::from)
                    .collect()
            })
            .collect();
        let removed = parallel_docker(&jobs, PARALLEL / 2, false);
        if self.image && docker(&["image", "inspect", "--format", "{{.Id}}", IMAGE]).is_ok() {
            docker(&["rmi", IMAGE])?;
        }
        removed.map(|()| started.elapsed())
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        eprintln!("removing the benchmark's containers and image");
        if let Err(e) = self.teardown() {
            eprintln!(
                "cleanup failed: {e}\nremove what is left with: docker rm -f $(docker ps -aq --filter label={LABEL}); docker rmi {IMAGE}"
            );
        }
    }
}

/// gpudeck in a detached session on a tmux server of its own; the server is killed on drop.
struct Tmux {
    socket: String,
    /// The server's socket file, removed on drop (tmux leaves it when the last session ends).
    socket_path: Option<PathBuf>,
}

impl Tmux {
    fn new() -> Self {
        Tmux {
            socket: format!("gpudeck-bench-{}", std::process::id()),
            socket_path: None,
        }
    }

    fn run(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("tmux")
            .args(["-u", "-f", "/dev/null", "-L", &self.socket])
            .args(args)
            .stdin(Stdio::null())
            .process_group(0)
            .output()
            .map_err(|e| format!("tmux: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "tmux {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn start(&mut self, cmd: &str) -> Result<(), String> {
        let (w, h) = (WIDTH.to_string(), HEIGHT.to_string());
        self.run(&["new-session", "-d", "-s", "bench", "-x", &w, "-y", &h, cmd])?;
        let path = self.run(&["display-message", "-p", "#{socket_path}"])?;
        self.socket_path = Some(PathBuf::from(path.trim()));
        Ok(())
    }

    fn keys(&self, keys: &str) -> Result<(), String> {
        self.run(&["send-keys", "-t", "bench", keys]).map(drop)
    }

    fn screen(&self) -> Result<String, String> {
        self.run(&["capture-pane", "-p", "-t", "bench"])
    }

    /// The pane's process is gpudeck itself: the command `exec`s it.
    fn pane_pid(&self) -> Result<String, String> {
        let pid = self
            .run(&["display-message", "-p", "-t", "bench", "#{pane_pid}"])?
            .trim()
            .to_string();
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "gpudeck" {
            return Err(format!(
                "the pane's process {pid} is {:?}, not gpudeck",
                comm.trim()
            ));
        }
        Ok(pid)
    }

    /// `q`, then waits for gpudeck (and so the session) to end.
    fn quit(&self) -> Result<(), String> {
        self.keys("q")?;
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if self.run(&["has-session", "-t", "bench"]).is_err() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("gpudeck did not quit within 3 s of `q`".into())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["send-keys", "-t", "bench", "q"]);
        let _ = self.run(&["kill-server"]);
        if let Some(path) = &self.socket_path {
            let _ = fs::remove_file(path);
        }
    }
}

/// A container count on screen, and when it was there (from the tmux launch).
type Seen = (usize, Duration);

/// Polls the screen every 10 ms until it lists at least `containers`; returns (count, time) at
/// that point and when the tab first showed a count.
fn wait_for_containers(
    tmux: &Tmux,
    containers: usize,
    launched: Instant,
) -> Result<(Seen, Seen), String> {
    let mut first_seen = None;
    let mut key_sent = Instant::now();
    loop {
        let screen = tmux
            .screen()
            .map_err(|e| format!("gpudeck exited before listing the containers: {e}"))?;
        match shown_count(&screen) {
            Some(n) => {
                let at = launched.elapsed();
                let first = *first_seen.get_or_insert((n, at));
                if n >= containers {
                    return Ok(((n, at), first));
                }
            }
            // A key sent before gpudeck read its terminal is not lost, but ask again to be sure.
            None if key_sent.elapsed() >= Duration::from_millis(500) => {
                tmux.keys("4")?;
                key_sent = Instant::now();
            }
            None => {}
        }
        if launched.elapsed() > SHOW_TIMEOUT {
            return Err(format!(
                "no `Containers · {containers}` within {} s; the screen:\n{screen}",
                SHOW_TIMEOUT.as_secs()
            ));
        }
        if interrupted() {
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The count in the Containers panel's title, ` Containers · 500 · unix:///var/run/docker.sock `.
fn shown_count(screen: &str) -> Option<usize> {
    screen
        .split("Containers · ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn first_frame_ms(log: &Path) -> String {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .find(|l| l.contains("first frame drawn"))
        .and_then(|l| l.split("elapsed_ms=").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse::<f64>().ok())
        .map_or_else(|| "?".into(), |ms| format!("{ms:.0}"))
}

/// CPU time of every thread of some processes, in nanoseconds per (process, thread), from
/// schedstat (finer than the 10 ms of /proc/PID/stat).
#[derive(Default)]
struct Cpu {
    threads: HashMap<(String, String), u64>,
    /// Threads of the earlier reading gone by this one: their time in the window is not counted.
    exited: usize,
}

impl Cpu {
    fn of(pids: &[String]) -> Cpu {
        let mut threads = HashMap::new();
        for pid in pids {
            let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let ns = fs::read_to_string(task.path().join("schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
                if let Some(ns) = ns {
                    let tid = task.file_name().to_string_lossy().into_owned();
                    threads.insert((pid.clone(), tid), ns);
                }
            }
        }
        Cpu { threads, exited: 0 }
    }

    /// Per thread, the time since `before` (a thread started since counts in full).
    fn since(&self, before: &Cpu) -> Cpu {
        let threads = self
            .threads
            .iter()
            .map(|(k, ns)| {
                let then = before.threads.get(k).copied().unwrap_or(0);
                (k.clone(), ns.saturating_sub(then))
            })
            .collect();
        let exited = before
            .threads
            .keys()
            .filter(|k| !self.threads.contains_key(*k))
            .count();
        Cpu { threads, exited }
    }

    fn total(&self) -> f64 {
        self.threads.values().sum::<u64>() as f64 / 1e9
    }

    fn of_pid(&self, pids: &[String]) -> f64 {
        self.threads
            .iter()
            .filter(|((pid, _), _)| pids.contains(pid))
            .map(|(_, ns)| ns)
            .sum::<u64>() as f64
            / 1e9
    }

    fn note(&self) -> String {
        if self.exited == 0 {
            String::new()
        } else {
            format!(
                " [{} threads exited during the window, their time in it not counted]",
                self.exited
            )
        }
    }
}

/// CPU seconds per minute, and that as a share of one core.
struct Rate {
    cpu_s_per_min: f64,
}

impl Rate {
    fn of(cpu_s: f64, over: Duration) -> Rate {
        Rate {
            cpu_s_per_min: cpu_s / (over.as_secs_f64() / 60.0),
        }
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.3} CPU-s per minute ({:.2}% of a core)",
            self.cpu_s_per_min,
            self.cpu_s_per_min / 60.0 * 100.0
        )
    }
}

/// dockerd, and containerd with the shims of the benchmark's running containers (in 20.10 stats
/// go dockerd -> containerd -> shim, which reads the cgroup).
struct EngineProcs {
    dockerd: Vec<String>,
    others: Vec<String>,
    shims: usize,
}

struct EngineCpu {
    cpu: Cpu,
    dockerd: Vec<String>,
    others: Vec<String>,
}

impl EngineProcs {
    fn find(running: usize) -> Result<EngineProcs, String> {
        let dockerd = pgrep("dockerd");
        if dockerd.is_empty() {
            return Err("no dockerd process on this machine (a remote engine?)".into());
        }
        let mut others = pgrep("containerd");
        let names: Vec<String> = (0..running).map(|i| format!("gpudeck-bench-{i}")).collect();
        let mut args = vec![
            "inspect".to_string(),
            "--format".into(),
            "{{.State.Pid}}".into(),
        ];
        args.extend(names);
        let mut shims: Vec<String> = docker(&args)?
            .lines()
            .filter_map(|pid| parent(pid.trim()))
            .collect();
        shims.sort();
        shims.dedup();
        let count = shims.len();
        others.extend(shims);
        Ok(EngineProcs {
            dockerd,
            others,
            shims: count,
        })
    }

    fn cpu(&self) -> EngineCpu {
        let all: Vec<String> = self.dockerd.iter().chain(&self.others).cloned().collect();
        EngineCpu {
            cpu: Cpu::of(&all),
            dockerd: self.dockerd.clone(),
            others: self.others.clone(),
        }
    }
}

impl EngineCpu {
    fn since(&self, before: &EngineCpu) -> EngineCpu {
        EngineCpu {
            cpu: self.cpu.since(&before.cpu),
            dockerd: self.dockerd.clone(),
            others: self.others.clone(),
        }
    }

    /// (dockerd, containerd + shims).
    fn per_minute(&self, over: Duration) -> (Rate, Rate) {
        (
            Rate::of(self.cpu.of_pid(&self.dockerd), over),
            Rate::of(self.cpu.of_pid(&self.others), over),
        )
    }

    fn note(&self) -> String {
        self.cpu.note()
    }
}

fn pgrep(name: &str) -> Vec<String> {
    Command::new("pgrep")
        .args(["-x", name])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The parent PID, from /proc/PID/stat (after the command in parentheses: state, then ppid).
fn parent(pid: &str) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
    (ppid != "0").then(|| ppid.to_string())
}

fn sockets(pid: &str) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter_map(|fd| fs::read_link(fd.path()).ok())
                .filter(|target: &PathBuf| target.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

/// Sleeps, returning early with an error on Ctrl-C (or SIGTERM, SIGHUP).
fn pause(d: Duration) -> Result<(), String> {
    let end = Instant::now() + d;
    loop {
        if interrupted() {
            return Err("interrupted".into());
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Ctrl-C, SIGTERM and SIGHUP stop the run at the next check instead of killing it, so the
/// containers and the image are still removed.
#[allow(unsafe_code)]
fn catch_signals() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(signal, handler);
        }
    }
}
