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
mod tests;
