//! The run store: one private directory per run under `<data dir>/runs/`, with `spec.toml`,
//! `run.json` (replaced atomically) and per-rank logs; listing and finding runs needs no process.

use std::fs::{self, DirBuilder, File};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::clock;
use super::error::RunError;
use super::record::{RunRecord, RunState};
use crate::private_files;

/// The file holding a run's record.
pub const RECORD_FILE: &str = "run.json";
/// The spec the run was started from.
pub const SPEC_FILE: &str = "spec.toml";
/// The supervisor's own stdout and stderr.
pub const SUPERVISOR_LOG: &str = "supervisor.log";
/// Present once a stop was asked for, so the supervisor records `stopped` rather than `failed`.
pub const STOP_MARKER: &str = "stop-requested";

/// Which of a rank's outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStream {
    Stdout,
    Stderr,
}

impl LogStream {
    pub fn as_str(self) -> &'static str {
        match self {
            LogStream::Stdout => "stdout",
            LogStream::Stderr => "stderr",
        }
    }
}

/// Every run's directory lives here.
#[derive(Debug, Clone)]
pub struct RunStore {
    root: PathBuf,
}

/// One run as read from disk.
#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    pub record: RunRecord,
}

impl Run {
    /// Reads the run in `dir`.
    pub fn open(dir: &Path) -> Result<Run, RunError> {
        let path = dir.join(RECORD_FILE);
        let damaged = |why: String| RunError::DamagedRun {
            path: path.clone(),
            why,
        };
        let text = fs::read_to_string(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => damaged("it is missing".into()),
            _ => damaged(format!("it cannot be read: {e}")),
        })?;
        let record = serde_json::from_str(&text).map_err(|e| {
            damaged(format!(
                "it is not a whole run record ({e}); it was cut short or edited"
            ))
        })?;
        Ok(Run {
            dir: dir.to_path_buf(),
            record,
        })
    }

    /// Reads the record again (it changes while the run lives).
    pub fn reload(&self) -> Result<Run, RunError> {
        Run::open(&self.dir)
    }

    pub fn id(&self) -> &str {
        &self.record.id
    }

    pub fn state(&self) -> RunState {
        self.record.effective_state()
    }

    /// `rank-N.stdout.log` or `rank-N.stderr.log`.
    pub fn log_path(&self, rank: usize, stream: LogStream) -> PathBuf {
        log_path(&self.dir, rank, stream)
    }

    /// Replaces `run.json`: written to a temporary file, synced, renamed over the old one and the
    /// directory synced, so a reader sees the old record or the new one, never half of one.
    pub fn write_record(&self, record: &RunRecord) -> Result<(), RunError> {
        let text = serde_json::to_vec_pretty(record)
            .map_err(|e| RunError::store(&self.dir.join(RECORD_FILE), e))?;
        write_atomic(&self.dir, RECORD_FILE, &text)
    }

    /// Whether a stop was asked for.
    pub fn stop_requested(&self) -> bool {
        self.dir.join(STOP_MARKER).exists()
    }

    /// Records that a stop was asked for (before any signal is sent).
    pub fn request_stop(&self) -> Result<(), RunError> {
        write_atomic(&self.dir, STOP_MARKER, b"")
    }
}

pub(crate) fn log_path(dir: &Path, rank: usize, stream: LogStream) -> PathBuf {
    dir.join(format!("rank-{rank}.{}.log", stream.as_str()))
}

impl RunStore {
    /// The store under a data directory (`Dirs::data`).
    pub fn new(data_dir: &Path) -> RunStore {
        // Absolute, because the supervisor is handed this path and runs in another directory.
        let root = data_dir.join("runs");
        RunStore {
            root: std::path::absolute(&root).unwrap_or(root),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The GPU claims of the same data directory (beside `runs/`, not in it).
    pub fn claims(&self) -> crate::claims::Claims {
        crate::claims::Claims::new(self.root.parent().unwrap_or(&self.root))
    }

    /// A fresh private directory for a run named `name`, holding `spec_text`; its id. Nothing is
    /// left behind when the spec cannot be written.
    pub fn create(
        &self,
        name: &str,
        spec_text: &str,
        now_ms: u64,
    ) -> Result<(String, PathBuf), RunError> {
        private_dir_all(&self.root)?;
        // A clash (same second, same name, same 16 random bits) just draws again.
        for _ in 0..16 {
            let id = format!(
                "{}-{}-{:04x}",
                clock::compact_utc(now_ms),
                slug(name),
                random_u16()
            );
            let dir = self.root.join(&id);
            match DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    if let Err(e) = write_atomic(&dir, SPEC_FILE, spec_text.as_bytes()) {
                        // A refused run leaves nothing behind (a full disk fills no store).
                        let _ = fs::remove_dir_all(&dir);
                        return Err(e);
                    }
                    return Ok((id, dir));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(RunError::store(&dir, e)),
            }
        }
        Err(RunError::store(&self.root, "no free run id after 16 tries"))
    }

    /// Every readable run, oldest first (by when it was created; ids only break ties, since two
    /// ids of the same second sort by their random part), and a warning for each directory that
    /// could not be read
    /// (a store that cannot be read at all is one warning; [`scan`](Self::scan) tells it apart).
    pub fn list(&self) -> (Vec<Run>, Vec<String>) {
        match self.scan() {
            Ok((runs, damaged)) => (runs, damaged.into_iter().map(|d| d.to_string()).collect()),
            Err(e) => (Vec::new(), vec![e.to_string()]),
        }
    }

    /// Every readable run, oldest first, and each run directory that could not be read; an
    /// error when the store itself cannot be read (a store not created yet is empty).
    pub fn scan(&self) -> Result<(Vec<Run>, Vec<RunError>), RunError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => {
                return Err(RunError::StoreUnreadable {
                    path: self.root.clone(),
                    why: e.to_string(),
                })
            }
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        let (mut runs, mut damaged) = (Vec::new(), Vec::new());
        for dir in dirs {
            if being_created(&dir) {
                continue;
            }
            match Run::open(&dir) {
                Ok(run) => runs.push(run),
                Err(e) => damaged.push(e),
            }
        }
        runs.sort_by(|a, b| (a.record.created_ms, a.id()).cmp(&(b.record.created_ms, b.id())));
        Ok((runs, damaged))
    }

    /// The run a user means: its id, a unique prefix of one, or the newest run of that name. A
    /// damaged run directory that matches says what is wrong with it.
    pub fn find(&self, query: &str) -> Result<Run, RunError> {
        let (runs, damaged) = self.scan()?;
        if let Some(run) = runs.iter().find(|r| r.id() == query) {
            return Ok(run.clone());
        }
        let prefixed: Vec<&Run> = runs.iter().filter(|r| r.id().starts_with(query)).collect();
        match prefixed.as_slice() {
            [one] => return Ok((*one).clone()),
            [] => {}
            many => {
                let ids: Vec<&str> = many.iter().map(|r| r.id()).collect();
                return Err(RunError::AmbiguousRun {
                    query: query.to_string(),
                    matches: ids.join(", "),
                });
            }
        }
        // The list is oldest first, so the last of a name is its newest run.
        if let Some(run) = runs.iter().rev().find(|r| r.record.name == query) {
            return Ok(run.clone());
        }
        let damaged_match = damaged.into_iter().find(|e| {
            e.run_dir()
                .and_then(|d| d.file_name())
                .is_some_and(|name| name.to_string_lossy().starts_with(query))
        });
        if let Some(damage) = damaged_match {
            return Err(damage);
        }
        Err(RunError::UnknownRun {
            query: query.to_string(),
            recent: runs
                .iter()
                .rev()
                .take(5)
                .map(|r| r.id().to_string())
                .collect(),
        })
    }
}

/// A run directory `gpudeck run` made moments ago, with its spec but not yet its record (it
/// prepares a container run's containers in between): not damaged, just not there yet.
pub(crate) fn being_created(dir: &Path) -> bool {
    const CREATING_MS: u128 = 120_000;
    dir.join(SPEC_FILE).exists()
        && !dir.join(RECORD_FILE).exists()
        && fs::metadata(dir)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_millis() < CREATING_MS)
}

/// A name as it may appear in an id and a path: letters, digits, `.`, `_` and `-`, at most 32.
fn slug(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    let trimmed = cleaned.trim_matches(|c| c == '-' || c == '.');
    if trimmed.is_empty() {
        "run".into()
    } else {
        trimmed.to_string()
    }
}

fn random_u16() -> u16 {
    let mut bytes = [0u8; 2];
    let read =
        File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    if read.is_ok() {
        return u16::from_le_bytes(bytes);
    }
    // Without /dev/urandom the clock's nanoseconds and the pid still differ between two runs.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (nanos ^ std::process::id().rotate_left(16)) as u16
}

/// Creates the store's root (0700); one an older gpudeck left open to others is made private.
fn private_dir_all(dir: &Path) -> Result<(), RunError> {
    private_files::create_own_dir(dir).map_err(|e| RunError::store(dir, e))
}

/// Writes `dir/name` so that it is complete or absent, private (0600), replacing a symbolic
/// link there rather than following it (`private_files::replace`).
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), RunError> {
    let target = dir.join(name);
    private_files::replace(&target, bytes).map_err(|e| RunError::store(&target, e))
}

/// Opens a log file for appending, private (0600), created if missing; a symbolic link in its
/// place is refused, an older log readable by others is made private.
pub(crate) fn open_log(path: &Path) -> Result<File, RunError> {
    private_files::open_append(path).map_err(|e| RunError::store(path, e))
}

/// How a stop went.
#[derive(Debug, Clone)]
pub enum StopOutcome {
    /// Nothing to do: the run had already ended in this state.
    AlreadyFinished(RunState),
    /// The ranks are gone; `signal` is the last one that was needed; `run` as recorded after.
    Stopped { signal: &'static str, run: Box<Run> },
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
