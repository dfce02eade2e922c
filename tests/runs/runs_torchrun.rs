//! The torchrun launcher: the command torchrun is handed, one log per worker, and no worker
//! outliving its run. The `real_torchrun_*` tests (at the end) run PyTorch's torchrun from the
//! test venv with CPU workers over gloo, and say SKIPPED without it. The others check what needs
//! exact control (every command form, refusals, shell workers that ignore signals) against a
//! shell stand-in that does what gpudeck depends on, as PyTorch's torch/distributed/run.py and
//! torch/distributed/elastic do it: it parses the options gpudeck passes, starts
//! `--nproc-per-node` workers each in a session of its own (`start_new_session=True`) with
//! RANK/LOCAL_RANK/WORLD_SIZE and the agent's environment, runs the script with `python -u`
//! unless `--no-python`, writes each worker's output to
//! `<log-dir>/<rdzv id>_<random>/attempt_0/<local rank>/{stdout,stderr}.log` with
//! `--redirects=3`, and on SIGTERM/SIGINT signals the workers and exits without waiting for them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::runs::{
    gpudeck, output, record, run_dir, start_with, wait_state, wait_until, GroupGuard,
};
use crate::support::{stderr, stdout, Dirs};

const FAKE_TORCHRUN: &str = r#"#!/bin/sh
echo "torchrun $*"
n=1; logdir=; redirects=0; python=python3; module=
while [ $# -gt 0 ]; do
  case "$1" in
    --standalone) ;;
    --nproc-per-node=*) n=${1#*=} ;;
    --log-dir=*) logdir=${1#*=} ;;
    --redirects=*) redirects=${1#*=} ;;
    --no-python) python= ;;
    -m) module=-m ;;
    -*) echo "torchrun: error: unrecognized arguments: $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[ "$redirects" = 3 ] && [ -n "$logdir" ] || { echo "expected --log-dir and --redirects=3" >&2; exit 2; }
pids=
r=0
while [ "$r" -lt "$n" ]; do
  d="$logdir/0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5_x7k2m9/attempt_0/$r"
  mkdir -p "$d"
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n TORCHELASTIC_RUN_ID=fake \
    setsid $python ${python:+-u} $module "$@" >"$d/stdout.log" 2>"$d/stderr.log" &
  pids="$pids $!"
  r=$((r + 1))
done
trap 'kill -TERM $pids 2>/dev/null; exit 143' TERM INT
code=0
for p in $pids; do wait "$p" || code=$?; done
exit $code
"#;

/// A work dir with the stand-in torchrun on PATH and the given executable files in it.
struct Setup {
    dirs: Dirs,
    work: PathBuf,
    path: String,
}

fn setup(files: &[(&str, &str, u32)]) -> Setup {
    let dirs = Dirs::new();
    let bin = dirs.root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    write(&bin.join("torchrun"), FAKE_TORCHRUN, 0o755);
    setup_with(dirs, &bin, files)
}

/// A work dir with the given files, and `bin` (where a torchrun is) first on PATH.
fn setup_with(dirs: Dirs, bin: &Path, files: &[(&str, &str, u32)]) -> Setup {
    let work = dirs.root.path().join("work");
    std::fs::create_dir(&work).unwrap();
    for (name, text, mode) in files {
        if let Some(parent) = Path::new(name).parent() {
            std::fs::create_dir_all(work.join(parent)).unwrap();
        }
        write(&work.join(name), text, *mode);
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Setup { dirs, work, path }
}

fn write(file: &Path, text: &str, mode: u32) {
    std::fs::write(file, text).unwrap();
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(mode)).unwrap();
}

impl Setup {
    fn command(&self, args: &[&str]) -> std::process::Command {
        self.command_with(&["--gpus", "0,1", "--launcher", "torchrun"], args)
    }

    /// `gpudeck run FLAGS -- ARGS` in the work dir.
    fn command_with(&self, flags: &[&str], args: &[&str]) -> std::process::Command {
        let mut all = vec!["run"];
        all.extend_from_slice(flags);
        all.push("--");
        all.extend_from_slice(args);
        let mut cmd = gpudeck(&self.dirs, &all);
        cmd.env("PATH", &self.path).current_dir(&self.work);
        cmd
    }

    /// Starts the run with these flags; the guard ends every process of it when the test ends.
    fn start_with(&self, flags: &[&str], args: &[&str]) -> (String, RunGuard) {
        let (id, group) = start_with(&self.dirs, self.command_with(flags, args));
        (id.clone(), RunGuard(id, group))
    }

    /// Starts the run; the guard ends every process of it when the test ends.
    fn start(&self, args: &[&str]) -> (String, RunGuard) {
        let (id, group) = start_with(&self.dirs, self.command(args));
        (id.clone(), RunGuard(id, group))
    }

    fn torchrun_output(&self, id: &str) -> String {
        std::fs::read_to_string(run_dir(&self.dirs, id).join("torchrun.stdout.log"))
            .unwrap_or_default()
    }

    fn logs(&self, id: &str, rank: &str) -> std::process::Output {
        let mut cmd = gpudeck(&self.dirs, &["logs", id, "--rank", rank]);
        cmd.current_dir(&self.work);
        cmd.output().unwrap()
    }
}

/// The live processes that carry the run's id (as every process of a run does).
fn run_pids(id: &str) -> Vec<i32> {
    let tag = format!("GPUDECK_RUN_ID={id}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| Some(s[s.rfind(')')? + 2..].starts_with('Z')))
                .unwrap_or(true);
            !zombie
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|e| e == tag.as_bytes()))
        })
        .collect()
}

/// Kills whatever of the run is left when the test ends, pass or fail (its workers are in
/// sessions of their own, out of the group guard's reach).
struct RunGuard(String, #[allow(dead_code)] GroupGuard);

impl Drop for RunGuard {
    fn drop(&mut self) {
        for pid in run_pids(&self.0) {
            // SAFETY: kill(2) on a process of this test's own run; no memory is touched.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

#[test]
fn torchrun_is_handed_its_own_grammar_and_what_cannot_work_is_refused() {
    let _gate = crate::support::gate::gate(module_path!());
    let s = setup(&[
        ("train.py", "print('step=1 loss=0.5')\n", 0o644),
        ("run.sh", "#!/bin/sh\necho shell\n", 0o755),
        ("notes.sh", "echo not executable\n", 0o644),
    ]);
    let log_dir = |id: &str| run_dir(&s.dirs, id).join("torchrun");
    for (args, want) in [
        (
            &["python", "train.py", "--lr", "0.1"][..],
            "train.py --lr 0.1",
        ),
        (&["python3", "-u", "-m", "pkg.train"][..], "-m pkg.train"),
        (&["train.py"][..], "train.py"),
        (&["./run.sh", "a"][..], "--no-python ./run.sh a"),
        (&["sh", "run.sh"][..], "--no-python sh run.sh"),
    ] {
        let (id, _guard) = s.start(args);
        wait_until(&format!("{id} to end"), || {
            record(&s.dirs, &id)["ended_ms"].is_u64()
        });
        let text = s.torchrun_output(&id);
        let expected = format!(
            "torchrun --standalone --nproc-per-node=2 --log-dir={} --redirects=3 {want}\n",
            log_dir(&id).display()
        );
        assert!(text.starts_with(&expected), "{args:?}:\n{text}");
    }

    for (args, why, instead) in [
        (
            &["notes.sh"][..],
            "notes.sh is neither a Python script nor executable",
            "gpudeck run --launcher torchrun -- sh notes.sh",
        ),
        (
            &["python", "tain.py"][..],
            "the script tain.py is not in the work directory",
            "gpudeck run --launcher torchrun -- python tain.py",
        ),
        (
            &["python"][..],
            "`python` names no script or module to run",
            "gpudeck run --launcher torchrun -- python train.py",
        ),
    ] {
        let out = s.command(args).output().unwrap();
        let err = stderr(&out).replace('\n', " ");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(err.contains(instead), "{args:?}: {err}");
    }
}

#[test]
fn each_torchrun_worker_has_its_own_log() {
    let _gate = crate::support::gate::gate(module_path!());
    let worker = "#!/bin/sh\n\
                  i=1; while [ $i -le 20 ]; do echo \"step=$i loss=$RANK.5 rank=$RANK\"; i=$((i+1)); done\n\
                  echo \"warning from $RANK\" >&2\n";
    let s = setup(&[("worker.sh", worker, 0o755)]);
    let (id, _guard) = s.start(&["./worker.sh"]);
    wait_state(&s.dirs, &id, "succeeded");
    for rank in ["0", "1"] {
        let out = s.logs(&id, rank);
        assert!(out.status.success(), "rank {rank}: {}", stderr(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 20, "rank {rank}: {text}");
        assert!(
            lines.iter().all(|l| l.ends_with(&format!("rank={rank}"))),
            "rank {rank} holds another worker's lines: {text}"
        );
    }
    let err = gpudeck(&s.dirs, &["logs", &id, "--rank", "1", "--stderr"])
        .output()
        .unwrap();
    assert_eq!(stdout(&err), "warning from 1\n", "{}", stderr(&err));
    // The record counts the workers, whose logs these are; gpudeck started one process.
    let rec = record(&s.dirs, &id);
    assert_eq!(rec["torchrun_workers"], 2, "{rec}");
    let mode = std::fs::metadata(run_dir(&s.dirs, &id).join("torchrun"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "torchrun's log directory is private");
    assert_eq!(rec["ranks"].as_array().map(Vec::len), Some(1), "{rec}");
}

/// Workers that ignore SIGINT and SIGTERM, as a training loop stuck in a collective does.
const STUBBORN: &str =
    "#!/bin/sh\ntrap '' INT TERM\necho \"up $RANK\"\nwhile :; do sleep 0.1; done\n";

fn wait_workers_up(s: &Setup, id: &str) {
    wait_until("both workers to be up", || {
        (0..2).all(|rank| {
            std::fs::read_to_string(run_dir(&s.dirs, id).join(format!("rank-{rank}.stdout.log")))
                .is_ok_and(|t| t.contains("up"))
        })
    });
}

#[test]
fn a_killed_torchrun_agent_takes_its_workers_with_its_run() {
    let _gate = crate::support::gate::gate(module_path!());
    let s = setup(&[("worker.sh", STUBBORN, 0o755)]);
    let (id, _guard) = s.start(&["./worker.sh"]);
    wait_workers_up(&s, &id);
    assert!(run_pids(&id).len() >= 3, "the agent and two workers");
    let agent = record(&s.dirs, &id)["ranks"][0]["pid"].as_i64().unwrap();
    // SAFETY: kill(2) on the torchrun agent this test started.
    unsafe {
        libc::kill(agent as i32, libc::SIGKILL);
    }
    let rec = wait_state(&s.dirs, &id, "failed");
    assert_eq!(rec["exit_code"], 137, "{rec}");
    assert_eq!(
        run_pids(&id),
        Vec::<i32>::new(),
        "the workers outlived their run"
    );
    let log = std::fs::read_to_string(run_dir(&s.dirs, &id).join("supervisor.log")).unwrap();
    assert!(log.contains("outlived its ranks"), "{log}");
}

#[test]
fn stop_ends_stubborn_torchrun_workers_before_it_says_stopped() {
    let _gate = crate::support::gate::gate(module_path!());
    let s = setup(&[("worker.sh", STUBBORN, 0o755)]);
    let (id, _guard) = s.start(&["./worker.sh"]);
    wait_workers_up(&s, &id);
    let out = output(&s.dirs, &["stop", &id, "--grace", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("last signal needed: SIGKILL"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        run_pids(&id),
        Vec::<i32>::new(),
        "stopped while workers live"
    );
    let rec = record(&s.dirs, &id);
    let log = std::fs::read_to_string(run_dir(&s.dirs, &id).join("supervisor.log")).unwrap();
    assert_eq!(rec["state"], "stopped", "{rec}\n{log}");
}

// The real torchrun (PyTorch from the test venv `.ci/run` makes), with CPU workers over gloo.

/// Two workers of DDP over gloo on the CPU, each printing `[rankN] step=S loss=L` per step.
const TRAIN: &str = r#"import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(1, 41):
    x = torch.randn(16, 4)
    loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"[rank{rank}] step={step} loss={loss.item():.4f}")
dist.destroy_process_group()
"#;

/// A worker that joins the group, then ignores SIGINT and SIGTERM (as one stuck in a
/// collective does) and keeps going.
const STUBBORN_TRAIN: &str = r#"import os, signal, time
import torch.distributed as dist

dist.init_process_group("gloo")
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(f"up {dist.get_rank()}", flush=True)
while True:
    time.sleep(0.1)
"#;

/// The real torchrun's directory, or None after saying why the test is skipped.
fn real_torchrun(test: &str) -> Option<PathBuf> {
    let torchrun = crate::support::services::or_skip(test, crate::support::services::torchrun())?;
    let bin = torchrun.parent().unwrap().to_path_buf();
    // torch's libraries are gigabytes: the first import after the install reads them from disk,
    // which on a fresh CI machine took longer than a run's whole deadline. Read once here, out
    // of the runs' time.
    static WARM: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    WARM.get_or_init(|| {
        let warm = std::process::Command::new(bin.join("python"))
            .args(["-c", "import torch, torch.distributed"])
            .output()
            .expect("the venv's python runs");
        assert!(
            warm.status.success(),
            "import torch: {}",
            String::from_utf8_lossy(&warm.stderr)
        );
    });
    Some(bin)
}

/// rank N's stdout lines, as `gpudeck logs --rank N` prints them.
fn rank_lines(s: &Setup, id: &str, rank: usize) -> Vec<String> {
    let out = s.logs(id, &rank.to_string());
    assert!(out.status.success(), "rank {rank}: {}", stderr(&out));
    stdout(&out).lines().map(String::from).collect()
}

#[test]
fn real_torchrun_runs_python_train_py_with_one_log_per_worker() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(bin) = real_torchrun("real_torchrun_runs_python_train_py_with_one_log_per_worker")
    else {
        return;
    };
    let s = setup_with(
        Dirs::new(),
        &bin,
        &[
            ("train.py", TRAIN, 0o644),
            ("pkg/__init__.py", "", 0o644),
            (
                "pkg/hello.py",
                "import os\nprint('module rank', os.environ['RANK'])\n",
                0o644,
            ),
            (
                "hello.sh",
                "#!/bin/sh\necho \"shell rank $RANK of $WORLD_SIZE\"\n",
                0o755,
            ),
        ],
    );
    // The way every PyTorch tutorial writes it.
    let (id, _guard) = s.start(&["python", "train.py"]);
    let rec = wait_state(&s.dirs, &id, "succeeded");
    assert_eq!(rec["name"], "train.py", "{rec}");
    for rank in 0..2 {
        let lines = rank_lines(&s, &id, rank);
        let steps: Vec<&String> = lines.iter().filter(|l| l.contains("step=")).collect();
        assert_eq!(steps.len(), 40, "rank {rank}: {lines:?}");
        for (line, step) in steps.iter().zip(1..) {
            assert!(
                line.starts_with(&format!("[rank{rank}] step={step} loss=")),
                "rank {rank}, step {step}: {line:?} (another worker's line, or spliced)"
            );
        }
    }
    let agent = s.torchrun_output(&id)
        + &std::fs::read_to_string(run_dir(&s.dirs, &id).join("torchrun.stderr.log")).unwrap();
    assert!(
        !agent.contains("step="),
        "a worker's line on torchrun's output: {agent}"
    );
    assert_eq!(run_pids(&id), Vec::<i32>::new());

    // python -m, and a shell script torchrun must not run with Python.
    for (args, rank_1_says) in [
        (&["python", "-m", "pkg.hello"][..], "module rank 1"),
        (&["./hello.sh"][..], "shell rank 1 of 2"),
    ] {
        let (id, _guard) = s.start(args);
        let rec = wait_state(&s.dirs, &id, "succeeded");
        let lines = rank_lines(&s, &id, 1);
        assert_eq!(lines, [rank_1_says], "{args:?}: {rec}");
    }
}

#[test]
fn real_torchrun_workers_end_with_their_run_when_the_agent_is_killed() {
    let _gate = crate::support::gate::gate(module_path!());
    let test = "real_torchrun_workers_end_with_their_run_when_the_agent_is_killed";
    let Some(bin) = real_torchrun(test) else {
        return;
    };
    let s = setup_with(Dirs::new(), &bin, &[("train.py", STUBBORN_TRAIN, 0o644)]);
    let (id, _guard) = s.start(&["python", "train.py"]);
    wait_workers_up(&s, &id);
    let agent = record(&s.dirs, &id)["ranks"][0]["pid"].as_i64().unwrap();
    let workers: Vec<i32> = run_pids(&id)
        .into_iter()
        .filter(|p| i64::from(*p) != agent)
        .collect();
    assert!(workers.len() >= 2, "{workers:?}");
    // SAFETY: kill(2) on the torchrun agent this test started.
    unsafe {
        libc::kill(agent as i32, libc::SIGKILL);
    }
    let rec = wait_state(&s.dirs, &id, "failed");
    assert_eq!(rec["exit_code"], 137, "{rec}");
    assert_eq!(run_pids(&id), Vec::<i32>::new(), "workers outlived the run");
}

#[test]
fn real_torchrun_stubborn_workers_are_gone_when_stop_returns() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(bin) = real_torchrun("real_torchrun_stubborn_workers_are_gone_when_stop_returns")
    else {
        return;
    };
    let s = setup_with(Dirs::new(), &bin, &[("train.py", STUBBORN_TRAIN, 0o644)]);
    let (id, _guard) = s.start(&["python", "train.py"]);
    wait_workers_up(&s, &id);
    let out = output(&s.dirs, &["stop", &id, "--grace", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("last signal needed: SIGKILL"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        run_pids(&id),
        Vec::<i32>::new(),
        "stopped while workers live"
    );
    assert_eq!(record(&s.dirs, &id)["state"], "stopped");
}

/// CPU workers over gloo (`--gpus none`), as CI and tests run DDP: torchrun with
/// `--nproc-per-node 2`, and per-gpu with `--workers 2`, each worker training in step with the
/// other and logging on its own.
#[test]
fn real_cpu_workers_over_gloo_with_gpus_none() {
    let _gate = crate::support::gate::gate(module_path!());
    let Some(bin) = real_torchrun("real_cpu_workers_over_gloo_with_gpus_none") else {
        return;
    };
    let s = setup_with(Dirs::new(), &bin, &[("train.py", TRAIN, 0o644)]);
    for flags in [
        &[
            "--gpus",
            "none",
            "--launcher",
            "torchrun",
            "--nproc-per-node",
            "2",
        ][..],
        &["--gpus", "none", "--launcher", "per-gpu", "--workers", "2"][..],
    ] {
        let (id, _guard) = s.start_with(flags, &["python", "train.py"]);
        let rec = wait_state(&s.dirs, &id, "succeeded");
        assert_eq!(rec["gpus"], serde_json::json!([]), "{flags:?}: {rec}");
        for rank in 0..2 {
            let lines = rank_lines(&s, &id, rank);
            let steps = lines.iter().filter(|l| l.contains("step=")).count();
            assert_eq!(steps, 40, "{flags:?}, rank {rank}: {lines:?}");
            assert!(
                lines[0].starts_with(&format!("[rank{rank}] step=1 loss=")),
                "{flags:?}, rank {rank}: {lines:?}"
            );
        }
        assert_eq!(run_pids(&id), Vec::<i32>::new(), "{flags:?}");
    }
}

/// A run without GPUs must say how many workers; a count beside GPUs, or for one process, is a
/// mistake (exit 2); neither starts anything.
#[test]
fn cpu_worker_counts_that_cannot_work_are_refused() {
    let _gate = crate::support::gate::gate(module_path!());
    let s = setup(&[("train.py", "print('step=1 loss=0.5')\n", 0o644)]);
    for (flags, code, says) in [
        (
            &["--gpus", "none", "--launcher", "torchrun"][..],
            1,
            "needs to be told how many workers to start",
        ),
        (
            &["--gpus", "none", "--launcher", "per-gpu"][..],
            1,
            "--workers 2",
        ),
        (
            &["--gpus", "0,1", "--launcher", "per-gpu", "--workers", "3"][..],
            2,
            "3 workers cannot be started: 2 GPUs are given, and there is one worker per GPU",
        ),
        (
            &["--gpus", "none", "--workers", "2"][..],
            2,
            "the single launcher starts one process",
        ),
    ] {
        let out = s
            .command_with(flags, &["python", "train.py"])
            .output()
            .unwrap();
        let err = stderr(&out)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(out.status.code(), Some(code), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
    }
    let runs = std::fs::read_dir(s.dirs.root.path().join("data").join("runs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(runs, 0, "a refused run leaves nothing behind");
}
