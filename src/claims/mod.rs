//! GPU claims: which GPUs a live run or shell holds, kept in `<data dir>/claims/claims.json`, so
//! that two starts in the same instant never get the same free GPU. Choosing GPUs and claiming
//! them is one step under an advisory lock (flock on `claims/lock`); each claim names its owner
//! and expires by itself once that owner is gone (see [`Liveness`]; the real facts are
//! `runs::SystemLiveness`).

mod error;
mod liveness;
mod lock;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use error::ClaimError;
pub use liveness::Liveness;

use crate::host::ProcessRef;

/// The directory under the data dir.
pub const CLAIMS_DIR: &str = "claims";
/// The claims themselves, replaced atomically.
const CLAIMS_FILE: &str = "claims.json";
/// The schema id of `claims.json`.
pub const CLAIMS_SCHEMA: &str = "gpudeck.claims/v1";

/// Who holds claimed GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Owner {
    /// A run of the run store: live while its record says starting or running.
    Run { id: String, dir: PathBuf },
    /// A shell: live while the gpudeck that opened it attends it, or while its container runs.
    Shell {
        name: String,
        /// The container's full id, once it was created.
        #[serde(default)]
        container: Option<String>,
    },
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Run { id, .. } => write!(f, "run {id}"),
            Owner::Shell { name, .. } => write!(f, "shell {name}"),
        }
    }
}

/// GPUs held by one owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub owner: Owner,
    /// The GPUs' UUIDs, which mean the same GPU to every process.
    pub gpus: Vec<String>,
    /// The process that made the claim while it starts the owner (`gpudeck run`, the
    /// dashboard, an attached `gpudeck shell`); `None` once it no longer attends it.
    #[serde(default)]
    pub holder: Option<ProcessRef>,
    pub created_ms: u64,
}

impl Claim {
    /// A claim of `gpus` for `owner`, held by this process.
    pub fn by_me(owner: Owner, gpus: Vec<String>) -> Claim {
        Claim {
            owner,
            gpus,
            holder: ProcessRef::current(),
            created_ms: now_ms(),
        }
    }

    /// Whether the owner is still there. A run: its record says starting or running (a run
    /// whose record is not written yet, while the process starting it lives). A shell: the
    /// process attending it lives, or its container still has processes.
    pub fn is_live(&self, live: &dyn Liveness) -> bool {
        let holder_alive = || self.holder.is_some_and(|h| live.process_alive(&h));
        match &self.owner {
            Owner::Run { dir, .. } => match live.run_holds_gpus(dir) {
                Some(holds) => holds,
                None => holder_alive(),
            },
            Owner::Shell { container, .. } => {
                holder_alive()
                    || container
                        .as_deref()
                        .is_some_and(|c| live.container_running(c))
            }
        }
    }

    /// Whether this claim holds the GPU with `uuid`.
    pub fn holds(&self, uuid: &str) -> bool {
        self.gpus.iter().any(|g| g.eq_ignore_ascii_case(uuid))
    }
}

/// The owner of the first claim among `claims` holding the GPU `uuid`.
pub fn owner_of<'c>(claims: &'c [Claim], uuid: &str) -> Option<&'c Owner> {
    claims.iter().find(|c| c.holds(uuid)).map(|c| &c.owner)
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ClaimsDoc {
    schema: String,
    #[serde(default)]
    claims: Vec<Claim>,
}

/// The claims of one data directory.
#[derive(Debug, Clone)]
pub struct Claims {
    dir: PathBuf,
}

impl Claims {
    /// The claims under a data directory (`Dirs::data`).
    pub fn new(data_dir: &Path) -> Claims {
        let dir = data_dir.join(CLAIMS_DIR);
        Claims {
            dir: std::path::absolute(&dir).unwrap_or(dir),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The live claims as they are now, without the lock (the file is replaced whole, so a
    /// reader sees one version); for showing which GPUs are taken. A missing file: none.
    pub fn live(&self, live: &dyn Liveness) -> Result<Vec<Claim>, ClaimError> {
        let mut claims = self.read()?;
        claims.retain(|c| c.is_live(live));
        Ok(claims)
    }

    /// The atomic step: under the lock, drops the claims whose owners are gone and hands the
    /// live ones to `choose`; the claim it returns (if any) is recorded before the lock is let
    /// go, so the next chooser sees it. `choose`'s own error comes back as the inner one.
    pub fn claim<T, E>(
        &self,
        live: &dyn Liveness,
        choose: impl FnOnce(&[Claim]) -> Result<(T, Option<Claim>), E>,
    ) -> Result<Result<T, E>, ClaimError> {
        let _lock = lock::lock(&self.dir)?;
        let mut claims = self.read()?;
        let before = claims.len();
        claims.retain(|c| c.is_live(live));
        let (value, new) = match choose(&claims) {
            Ok(chosen) => chosen,
            Err(e) => {
                if claims.len() != before {
                    self.write(&claims)?;
                }
                return Ok(Err(e));
            }
        };
        if let Some(new) = new {
            claims.retain(|c| c.owner != new.owner);
            claims.push(new);
            self.write(&claims)?;
        } else if claims.len() != before {
            self.write(&claims)?;
        }
        Ok(Ok(value))
    }

    /// Changes the claim of `owner` (a shell's container once created; no holder once its
    /// session ends), or removes it when `change` returns `None`.
    pub fn update(
        &self,
        owner: &Owner,
        change: impl FnOnce(Claim) -> Option<Claim>,
    ) -> Result<(), ClaimError> {
        let _lock = lock::lock(&self.dir)?;
        let mut claims = self.read()?;
        let Some(at) = claims.iter().position(|c| &c.owner == owner) else {
            return Ok(());
        };
        let old = claims.remove(at);
        if let Some(new) = change(old) {
            claims.insert(at, new);
        }
        self.write(&claims)
    }

    /// Removes the claim of `owner`.
    pub fn release(&self, owner: &Owner) -> Result<(), ClaimError> {
        self.update(owner, |_| None)
    }

    /// `claims.json`, replaced whole at each change.
    pub fn file(&self) -> PathBuf {
        self.dir.join(CLAIMS_FILE)
    }

    fn read(&self) -> Result<Vec<Claim>, ClaimError> {
        let path = self.file();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(error(&path, "read", e)),
        };
        let doc: ClaimsDoc = serde_json::from_str(&text).map_err(|e| error(&path, "read", e))?;
        Ok(doc.claims)
    }

    fn write(&self, claims: &[Claim]) -> Result<(), ClaimError> {
        let doc = ClaimsDoc {
            schema: CLAIMS_SCHEMA.into(),
            claims: claims.to_vec(),
        };
        let text =
            serde_json::to_vec_pretty(&doc).map_err(|e| error(&self.file(), "written", e))?;
        crate::private_files::replace(&self.file(), &text)
            .map_err(|e| error(&self.file(), "written", e))
    }
}

fn error(path: &Path, doing: &'static str, why: impl fmt::Display) -> ClaimError {
    ClaimError {
        path: path.to_path_buf(),
        doing,
        why: why.to_string(),
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
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
    fn claim_first_free(
        claims: &Claims,
        live: &dyn Liveness,
        owner: Owner,
        gpus: &[&str],
    ) -> String {
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
}
