//! Container runs on the real engine: their containers found by label and removed with the
//! test, scratch work dirs, runs started in an image, and a per-gpu run recorded by hand for
//! the supervisor (the engine here has no GPUs, so `gpudeck run` would refuse one).

// libc: the test's own uid, gid and session, pipes, and signals to processes it started.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use gpudeck::docker::resolve_host;
use gpudeck::runs::{
    container_plan, plan_ranks, ContainerInput, ContainerRecord, LaunchInput, Launcher, Ports,
    ProcessRef, RankContainerRef, RankRecord, Run, RunGpu, RunRecord, RunStore,
};
use gpudeck::shell::{GpuPlumbing, ShellDefaults};

use super::docker::docker;
use super::runs::{record, start, wait_until};
use super::Dirs;

/// Prints a numbered line every 0.1 s until `/workspace/gate` exists, then `bye`, exit 4.
pub const GATED: &str = "i=0; while [ ! -e /workspace/gate ]; do i=$((i+1)); echo tick $i; \
                     sleep 0.1; done; echo bye; exit 4";

/// Removes every container of a run when the test ends, pass or fail.
pub struct RunContainers(pub String);

impl Drop for RunContainers {
    fn drop(&mut self) {
        for id in containers_of(&self.0) {
            let _ = Command::new("docker").args(["rm", "-f", &id]).output();
        }
    }
}

/// The ids of the containers labelled with the run, running or not.
pub fn containers_of(run: &str) -> Vec<String> {
    let filter = format!("label=gpudeck.run={run}");
    let listed = docker(&["ps", "-aq", "--no-trunc", "--filter", &filter]);
    listed.lines().map(str::to_string).collect()
}

/// A scratch work dir (mounted at /workspace), its real path as a string.
pub fn workdir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().canonicalize().expect("canonical");
    (dir, path.to_string_lossy().into_owned())
}

/// Starts a run in `image` with `args` before `--` and `command` after it.
pub fn start_in(dirs: &Dirs, image: &str, work: &str, args: &[&str], command: &str) -> String {
    let mut all = vec!["--image", image, "--workdir", work];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "sh", "-c", command]);
    start(dirs, &all).0
}

pub fn inspect(container: &str) -> Value {
    let text = docker(&["inspect", container]);
    let doc: Value = serde_json::from_str(&text).expect("docker inspect is JSON");
    doc[0].clone()
}

pub fn supervisor_of(dirs: &Dirs, id: &str) -> ProcessRef {
    serde_json::from_value(record(dirs, id)["supervisor"].clone()).expect("a supervisor")
}

/// SIGKILLs the run's supervisor and waits until it is gone.
pub fn kill_supervisor(dirs: &Dirs, id: &str) {
    let supervisor = supervisor_of(dirs, id);
    // SAFETY: kill(2) on the supervisor this test started.
    unsafe { libc::kill(supervisor.pid as i32, libc::SIGKILL) };
    wait_until("the supervisor to die", || !supervisor.is_alive());
}

/// `tick 1` .. `tick n` then `bye`, each once, in order: nothing lost, nothing twice.
pub fn assert_ticks_then_bye(text: &str) {
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"bye"), "{text}");
    for (n, line) in lines[..lines.len() - 1].iter().enumerate() {
        assert_eq!(*line, format!("tick {}", n + 1), "{text}");
    }
}

/// A per-gpu container run of `sh -c script` on two (made-up) GPUs asked for by `plumbing`,
/// recorded as `gpudeck run` records it, waiting for its supervisor; its directory.
pub fn per_gpu_run_dir(
    dirs: &Dirs,
    image: &str,
    work: &Path,
    plumbing: GpuPlumbing,
    script: &str,
) -> PathBuf {
    let store = RunStore::new(&dirs.root.path().join("data"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let (id, dir) = store
        .create("refused", "command = [\"true\"]\n", now)
        .unwrap();
    let gpus: Vec<RunGpu> = (0..2)
        .map(|index| RunGpu {
            index,
            uuid: format!("GPU-00000000-1111-2222-3333-44444444444{index}"),
            name: "made up".into(),
        })
        .collect();
    let ranks: Vec<RankRecord> = plan_ranks(&LaunchInput {
        run_id: &id,
        launcher: Launcher::PerGpu,
        command: &["sh", "-c", script].map(String::from),
        gpus: &gpus,
        workers: gpus.len(),
        env: &BTreeMap::new(),
        workdir: Path::new("/workspace"),
        ports: Some(&Ports {
            master: 29500,
            workers: vec![29501, 29502],
        }),
        worker_logs: None,
    })
    .into_iter()
    .map(RankRecord::from)
    .collect();
    // SAFETY: getuid and getgid cannot fail.
    let host_user = unsafe { (libc::getuid(), libc::getgid()) };
    let plan = container_plan(&ContainerInput {
        run_id: &id,
        image,
        launcher: Launcher::PerGpu,
        ranks: &ranks,
        gpus: &gpus,
        workdir: work,
        defaults: &ShellDefaults::default(),
        plumbing,
        host_user,
        network: "bridge",
        service: None,
    })
    .unwrap();
    plan.write(&dir).unwrap();
    let engine = resolve_host(None, |k| std::env::var(k).ok()).unwrap();
    let record = RunRecord {
        image: Some(image.into()),
        gpus,
        ranks,
        container: Some(ContainerRecord {
            engine: engine.uri,
            engine_tls: None,
            image_id: String::new(),
            image_digests: Vec::new(),
            network: "bridge".into(),
            gpu_request: match plumbing {
                GpuPlumbing::None => "none",
                GpuPlumbing::DeviceRequest => "device-request",
                GpuPlumbing::Cdi => "cdi",
            }
            .into(),
            keep: false,
            containers: plan
                .ranks
                .iter()
                .map(|c| RankContainerRef {
                    rank: c.rank,
                    name: c.name.clone(),
                    id: None,
                })
                .collect(),
            observed: None,
            engine_away: None,
        }),
        ..RunRecord::starting(
            id,
            "refused".into(),
            Launcher::PerGpu,
            work.to_path_buf(),
            "test".into(),
            now,
        )
    };
    let run = Run { dir, record };
    run.write_record(&run.record).unwrap();
    run.dir
}
