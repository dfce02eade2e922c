//! Soak: the dashboard (the gpudeck binary `--demo --refresh 100` in tmux, 8 simulated GPUs,
//! a private data dir) for a long time while training runs start and end, busybox containers
//! come and go and the tabs change. Prints its memory now and then, and at the end its peak RSS
//! at 5 minutes and at the end (which must not grow by more than 10%), the longest gap between
//! two frames (from its per-frame trace line), and its CPU.
//!
//! `cargo build --release && cargo run --release --example soak -- [DURATION] [--bin PATH]`
//! DURATION is `30m` (default), `90s` or a number of seconds. Needs tmux; the containers need a
//! reachable Docker Engine and /bin/busybox (Debian's busybox-static), else they are skipped with
//! the reason.

#[path = "common/procfs.rs"]
mod procfs;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use procfs::{cpu_ns, status_kib};

/// When the first peak is taken: the dashboard has warmed up by then.
const EARLY: Duration = Duration::from_secs(300);
const RUN_EVERY: Duration = Duration::from_secs(20);
const CONTAINER_EVERY: Duration = Duration::from_secs(15);
const TAB_EVERY: Duration = Duration::from_secs(10);
/// Tabs visited in turn: GPUs, Processes, Containers, Runs.
const TABS: [&str; 4] = ["1", "2", "4", "8"];

fn duration_arg(text: &str) -> Option<Duration> {
    let (number, unit) = match text.strip_suffix('m') {
        Some(n) => (n, 60),
        None => (text.strip_suffix('s').unwrap_or(text), 1),
    };
    number
        .parse::<u64>()
        .ok()
        .map(|n| Duration::from_secs(n * unit))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let duration = args
        .iter()
        .find_map(|a| duration_arg(a))
        .unwrap_or(Duration::from_secs(1800));
    let bin = args
        .iter()
        .position(|a| a == "--bin")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/gpudeck"));
    if !bin.exists() {
        eprintln!(
            "{} is missing: build it first (cargo build --release) or pass --bin PATH",
            bin.display()
        );
        std::process::exit(1);
    }
    if let Err(e) = soak(&bin, duration) {
        eprintln!("soak failed: {e}");
        std::process::exit(1);
    }
}

/// The temporary dirs, the tmux server and the containers, removed at the end.
struct Setup {
    bin: PathBuf,
    dir: PathBuf,
    session: String,
    label: String,
    image: Option<String>,
}

impl Setup {
    fn env(&self) -> Vec<(String, String)> {
        let d = self.dir.display();
        [
            ("GPUDECK_STATE_DIR", format!("{d}/state")),
            ("GPUDECK_CONFIG_DIR", format!("{d}/config")),
            ("GPUDECK_DATA_DIR", format!("{d}/data")),
            ("GPUDECK_SIM", "gpus=8,seed=42".into()),
            ("GPUDECK_LOG", "info,gpudeck::app=trace".into()),
            ("TERM", "xterm-256color".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    fn tmux(&self, args: &[&str]) -> String {
        Command::new("tmux")
            .args(["-L", &self.session])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    fn gpudeck(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(&self.bin)
            .envs(self.env())
            .current_dir(&self.dir)
            .arg("--demo")
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "gpudeck {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
        if self.image.is_some() {
            let ids = docker(&["ps", "-aq", "--filter", &format!("label={}", self.label)]);
            for id in ids.unwrap_or_default().split_whitespace() {
                let _ = docker(&["rm", "-f", id]);
            }
        }
        if let Some(image) = &self.image {
            let _ = docker(&["rmi", "-f", image]);
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn docker(args: &[&str]) -> Result<String, String> {
    let out = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("docker: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "docker {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A ~2 MB image from /bin/busybox by `docker import` (no registry needed), or why not.
fn busybox_image(dir: &Path, tag: &str) -> Result<String, String> {
    docker(&["version", "--format", "{{.Server.Version}}"])
        .map_err(|e| format!("the Docker Engine is not reachable ({e})"))?;
    let busybox = Path::new("/bin/busybox");
    if !busybox.exists() {
        return Err("/bin/busybox is missing (install busybox-static)".into());
    }
    let root = dir.join("rootfs");
    let bin = root.join("bin");
    fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    fs::copy(busybox, bin.join("busybox")).map_err(|e| e.to_string())?;
    for applet in ["sh", "sleep", "echo"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).map_err(|e| e.to_string())?;
    }
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("tar: {e}"))?;
    let status = Command::new("docker")
        .args(["import", "-c", "ENV PATH=/bin", "-", tag])
        .stdin(tar.stdout.ok_or("tar has no stdout")?)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("docker import: {e}"))?;
    if !status.success() {
        return Err("docker import failed".into());
    }
    Ok(tag.to_string())
}

/// What was sampled over the soak.
#[derive(Default)]
struct Samples {
    early_hwm_kib: Option<u64>,
    early_rss_kib: Option<u64>,
    runs_started: usize,
    run_failures: usize,
    containers_started: usize,
    container_failures: usize,
}

fn soak(bin: &Path, duration: Duration) -> Result<(), String> {
    let pid_tag = std::process::id();
    let dir = std::env::temp_dir().join(format!("gpudeck-soak-{pid_tag}"));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut setup = Setup {
        bin: bin.to_path_buf(),
        dir: dir.clone(),
        session: format!("gpudeck-soak-{pid_tag}"),
        label: format!("gpudeck-soak={pid_tag}"),
        image: None,
    };
    match busybox_image(&dir, &format!("gpudeck-soak-busybox:{pid_tag}")) {
        Ok(tag) => setup.image = Some(tag),
        Err(why) => println!("containers skipped: {why}"),
    }
    let env: Vec<String> = setup
        .env()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let cmd = format!(
        "exec env {} {} --demo --refresh 100",
        env.join(" "),
        bin.display()
    );
    let ok = Command::new("tmux")
        .args(["-L", &setup.session, "-f", "/dev/null", "new-session", "-d"])
        .args(["-s", &setup.session, "-x", "160", "-y", "50", &cmd])
        .status()
        .map_err(|e| format!("tmux: {e}"))?
        .success();
    if !ok {
        return Err("tmux could not start the dashboard".into());
    }
    let pid = setup.tmux(&["display-message", "-p", "-t", &setup.session, "#{pane_pid}"]);
    let pid = pid.trim().to_string();
    let started = Instant::now();
    let cpu0 = cpu_ns(&pid).ok_or("the dashboard is not running")?;
    println!(
        "soak of {} s: {} --demo --refresh 100 on 8 simulated GPUs (pid {pid})",
        duration.as_secs(),
        bin.display()
    );
    let mut s = Samples::default();
    let (mut next_run, mut next_container, mut next_tab, mut next_print) = (
        Duration::ZERO,
        Duration::from_secs(5),
        TAB_EVERY,
        Duration::from_secs(60),
    );
    let mut tab = 0;
    while started.elapsed() < duration {
        let t = started.elapsed();
        let rss = status_kib(&pid, "VmRSS:").ok_or("the dashboard died")?;
        let hwm = status_kib(&pid, "VmHWM:").unwrap_or(0);
        if t >= EARLY && s.early_hwm_kib.is_none() {
            s.early_hwm_kib = Some(hwm);
            s.early_rss_kib = Some(rss);
        }
        if t >= next_run {
            next_run += RUN_EVERY;
            start_run(&setup, &mut s);
        }
        if t >= next_container {
            next_container += CONTAINER_EVERY;
            start_container(&setup, &mut s);
        }
        if t >= next_tab {
            next_tab += TAB_EVERY;
            tab = (tab + 1) % TABS.len();
            setup.tmux(&["send-keys", "-t", &setup.session, TABS[tab]]);
        }
        if t >= next_print {
            next_print += Duration::from_secs(60);
            println!(
                "{:>5} s: RSS {:.1} MiB, peak {:.1} MiB; {} runs, {} containers started",
                t.as_secs(),
                rss as f64 / 1024.0,
                hwm as f64 / 1024.0,
                s.runs_started,
                s.containers_started
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let elapsed = started.elapsed();
    let cpu = cpu_ns(&pid).ok_or("the dashboard died at the end")? - cpu0;
    let hwm = status_kib(&pid, "VmHWM:").unwrap_or(0);
    let rss = status_kib(&pid, "VmRSS:").unwrap_or(0);
    setup.tmux(&["send-keys", "-t", &setup.session, "q"]);
    report(&setup, &s, elapsed, cpu, hwm, rss);
    Ok(())
}

/// A short run on one GPU: prints progress for about 5 s; every third one fails.
fn start_run(setup: &Setup, s: &mut Samples) {
    let n = s.runs_started + s.run_failures;
    let gpu = (n % 8).to_string();
    let code = if n % 3 == 2 { 1 } else { 0 };
    let script = format!(
        "for i in 1 2 3 4 5 6 7 8 9 10; do echo step=$i/10 loss=0.$((10-i)); sleep 0.5; done; \
         exit {code}"
    );
    let args = [
        "run", "--name", "soak", "--gpus", &gpu, "--", "sh", "-c", &script,
    ];
    match setup.gpudeck(&args) {
        Ok(_) => s.runs_started += 1,
        Err(e) => {
            s.run_failures += 1;
            eprintln!("{e}");
        }
    }
}

/// A container that lives 25 s and removes itself.
fn start_container(setup: &Setup, s: &mut Samples) {
    let Some(image) = &setup.image else {
        return;
    };
    let name = format!("{}-{}", setup.session, s.containers_started);
    let label = setup.label.clone();
    let args = [
        "run", "-d", "--rm", "--name", &name, "--label", &label, image, "sleep", "25",
    ];
    match docker(&args) {
        Ok(_) => s.containers_started += 1,
        Err(e) => {
            s.container_failures += 1;
            eprintln!("{e}");
        }
    }
}

fn report(setup: &Setup, s: &Samples, elapsed: Duration, cpu_ns: u64, hwm: u64, rss: u64) {
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "ran {:.0} s: {} runs started ({} refused), {} containers ({} failed)",
        elapsed.as_secs_f64(),
        s.runs_started,
        s.run_failures,
        s.containers_started,
        s.container_failures
    );
    match (s.early_hwm_kib, s.early_rss_kib) {
        (Some(early), Some(early_rss)) => {
            let growth = (hwm as f64 - early as f64) / early as f64 * 100.0;
            println!(
                "peak RSS (VmHWM): {:.1} MiB at 5 min, {:.1} MiB at the end: {growth:+.1}% ({}); \
                 RSS {:.1} MiB at 5 min, {:.1} MiB at the end",
                mib(early),
                mib(hwm),
                if growth <= 10.0 {
                    "within 10%"
                } else {
                    "MORE than 10%"
                },
                mib(early_rss),
                mib(rss)
            );
        }
        _ => println!(
            "peak RSS (VmHWM) at the end: {:.1} MiB (RSS {:.1} MiB); the soak was shorter than 5 \
             min, so there is no 5-minute figure",
            mib(hwm),
            mib(rss)
        ),
    }
    println!(
        "dashboard CPU: {:.1} CPU-s, {:.1}% of one core",
        cpu_ns as f64 / 1e9,
        cpu_ns as f64 / 1e9 / elapsed.as_secs_f64() * 100.0
    );
    let frames = frame_times(&setup.dir.join("state/gpudeck.log"));
    let gaps: Vec<(f64, f64)> = frames.windows(2).map(|w| (w[1] - w[0], w[0])).collect();
    match gaps
        .iter()
        .cloned()
        .reduce(|a, b| if b.0 > a.0 { b } else { a })
    {
        Some((gap, at)) => {
            let over = |limit: f64| gaps.iter().filter(|g| g.0 > limit).count();
            let span = frames.last().unwrap_or(&0.0) - frames.first().unwrap_or(&0.0);
            println!(
                "frames: {} in {:.0} s ({:.1}/s; data is drawn at most every 250 ms); longest gap \
                 {:.0} ms (after the frame at {} UTC); gaps over 500 ms: {}, over 1 s: {}",
                frames.len(),
                span,
                frames.len() as f64 / span.max(0.001),
                gap * 1000.0,
                clock(at),
                over(0.5),
                over(1.0)
            );
        }
        None => println!("no frames in the trace log: was GPUDECK_LOG honoured?"),
    }
}

/// `HH:MM:SS` of seconds since a day's midnight.
fn clock(secs: f64) -> String {
    let s = secs as u64 % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Seconds of the day at which frames were drawn, from the trace log (times as UTC RFC 3339);
/// a frame after midnight counts on from the day before.
fn frame_times(log: &Path) -> Vec<f64> {
    let text = fs::read_to_string(log).unwrap_or_default();
    let mut day = 0.0;
    let mut last = 0.0;
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
        .map(|t| {
            if t + day < last - 43_200.0 {
                day += 86_400.0;
            }
            last = t + day;
            last
        })
        .collect()
}
