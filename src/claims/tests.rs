use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};

use super::*;
use crate::runs::{run_holds_gpus, RunState};

/// What is alive, as a test says.
#[derive(Default)]
struct Fake {
    processes: BTreeSet<u32>,
    runs: BTreeMap<PathBuf, RunState>,
    containers: BTreeSet<String>,
}

impl Liveness for Fake {
    fn process_alive(&self, p: &ProcessRef) -> bool {
        self.processes.contains(&p.pid)
    }
    fn run_holds_gpus(&self, dir: &Path) -> Option<bool> {
        self.runs.get(dir).copied().map(run_holds_gpus)
    }
    fn container_running(&self, id: &str) -> bool {
        self.containers.contains(id)
    }
}

fn holder(pid: u32) -> Option<ProcessRef> {
    Some(ProcessRef {
        pid,
        start_ticks: 1,
    })
}

fn run(id: &str) -> Owner {
    Owner::Run {
        id: id.into(),
        dir: PathBuf::from("/runs").join(id),
    }
}

fn claim(owner: Owner, gpu: &str, pid: Option<u32>) -> Claim {
    Claim {
        owner,
        gpus: vec![gpu.into()],
        holder: pid.and_then(holder),
        created_ms: 0,
    }
}

/// Claims the first of `gpus` nobody holds, as `count:1` does.
fn claim_first_free(claims: &Claims, live: &dyn Liveness, owner: Owner, gpus: &[&str]) -> String {
    claims
        .claim(live, |held| {
            let free = gpus
                .iter()
                .find(|g| owner_of(held, g).is_none())
                .ok_or("no free GPU")?;
            let new = claim(owner, free, Some(std::process::id()));
            Ok::<_, &str>((free.to_string(), Some(new)))
        })
        .unwrap()
        .unwrap()
}

#[test]
fn a_claim_is_seen_by_the_next_chooser_and_its_owner_is_named() {
    let data = tempfile::tempdir().unwrap();
    let claims = Claims::new(data.path());
    let mut live = Fake::default();
    live.processes.insert(std::process::id());
    let first = claim_first_free(&claims, &live, run("a"), &["GPU-0", "GPU-1"]);
    let second = claim_first_free(&claims, &live, run("b"), &["GPU-0", "GPU-1"]);
    assert_eq!((first.as_str(), second.as_str()), ("GPU-0", "GPU-1"));
    let held = claims.live(&live).unwrap();
    assert_eq!(owner_of(&held, "gpu-0").unwrap().to_string(), "run a");
    assert_eq!(owner_of(&held, "GPU-1"), Some(&run("b")));
}

#[test]
fn many_threads_choosing_at_once_never_share_a_gpu() {
    let data = tempfile::tempdir().unwrap();
    let claims = Claims::new(data.path());
    let gpus = ["GPU-0", "GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5"];
    let start = Arc::new(Barrier::new(gpus.len()));
    let handles: Vec<_> = (0..gpus.len())
        .map(|i| {
            let (claims, start) = (claims.clone(), start.clone());
            std::thread::spawn(move || {
                let mut live = Fake::default();
                live.processes.insert(std::process::id());
                start.wait();
                claim_first_free(&claims, &live, run(&format!("r{i}")), &gpus)
            })
        })
        .collect();
    let got: BTreeSet<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got.len(), gpus.len(), "{got:?}");
}

#[test]
fn a_run_claim_lives_while_its_record_says_starting_or_running() {
    let mut live = Fake::default();
    let c = claim(run("a"), "GPU-0", Some(7));
    // No record yet: the process starting it decides.
    assert!(!c.is_live(&live));
    live.processes.insert(7);
    assert!(c.is_live(&live));
    // Once written, the record decides, whoever holds it.
    for (state, alive) in [
        (RunState::Starting, true),
        (RunState::Running, true),
        (RunState::Succeeded, false),
        (RunState::Failed, false),
        (RunState::Stopped, false),
        (RunState::Lost, false),
    ] {
        live.runs.insert("/runs/a".into(), state);
        assert_eq!(c.is_live(&live), alive, "{state}");
    }
}

#[test]
fn a_shell_claim_lives_while_attended_or_while_its_container_runs() {
    let mut live = Fake::default();
    let shell = |container: Option<&str>| Owner::Shell {
        name: "dev".into(),
        container: container.map(String::from),
    };
    let attended = claim(shell(None), "GPU-0", Some(9));
    assert!(!attended.is_live(&live));
    live.processes.insert(9);
    assert!(attended.is_live(&live));
    let detached = claim(shell(Some("abc")), "GPU-0", None);
    assert!(!detached.is_live(&live), "no holder, container gone");
    live.containers.insert("abc".into());
    assert!(detached.is_live(&live), "its container still runs");
}

#[test]
fn claims_of_owners_gone_expire_and_are_dropped_from_the_file() {
    let data = tempfile::tempdir().unwrap();
    let claims = Claims::new(data.path());
    let mut live = Fake::default();
    live.processes.insert(std::process::id());
    claim_first_free(&claims, &live, run("old"), &["GPU-0"]);
    live.runs.insert("/runs/old".into(), RunState::Succeeded);
    assert!(claims.live(&live).unwrap().is_empty(), "expired");
    // The next chooser gets the GPU back and the file forgets the old claim.
    assert_eq!(
        claim_first_free(&claims, &live, run("new"), &["GPU-0"]),
        "GPU-0"
    );
    let text = std::fs::read_to_string(claims.dir().join("claims.json")).unwrap();
    assert!(!text.contains("\"old\""), "{text}");
    assert!(text.contains("\"new\""), "{text}");
    assert!(text.contains(CLAIMS_SCHEMA), "{text}");
}

#[test]
fn a_refusal_records_no_claim_and_release_and_update_change_one() {
    let data = tempfile::tempdir().unwrap();
    let claims = Claims::new(data.path());
    let mut live = Fake::default();
    live.processes.insert(std::process::id());
    let refused = claims
        .claim(&live, |_| Err::<((), Option<Claim>), _>("no"))
        .unwrap();
    assert_eq!(refused, Err("no"));
    assert!(claims.live(&live).unwrap().is_empty());

    let shell = Owner::Shell {
        name: "dev".into(),
        container: None,
    };
    claim_first_free(&claims, &live, shell.clone(), &["GPU-0"]);
    claims
        .update(&shell, |c| Some(Claim { holder: None, ..c }))
        .unwrap();
    assert!(
        claims.live(&live).unwrap().is_empty(),
        "unattended, no container"
    );
    claim_first_free(&claims, &live, run("a"), &["GPU-0"]);
    claims.release(&run("a")).unwrap();
    assert!(claims.live(&live).unwrap().is_empty());
}

#[test]
fn the_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir().unwrap();
    let claims = Claims::new(data.path());
    let mut live = Fake::default();
    live.processes.insert(std::process::id());
    claim_first_free(&claims, &live, run("a"), &["GPU-0"]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(claims.dir()), 0o700);
    assert_eq!(mode(&claims.dir().join("claims.json")), 0o600);
    assert_eq!(mode(&claims.dir().join("lock")), 0o600);
}
