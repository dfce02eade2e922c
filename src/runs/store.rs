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
/// Where torchrun writes its workers' output in a local torchrun run's directory
/// (`torchrun/<rendezvous id>_<random>/attempt_<restart>/<local rank>/{stdout,stderr}.log`).
pub const TORCHRUN_LOG_DIR: &str = "torchrun";
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

/// The torchrun agent's own output in a local torchrun run (its workers' is in the rank logs).
pub(crate) fn torchrun_log_path(dir: &Path, stream: LogStream) -> PathBuf {
    dir.join(format!("torchrun.{}.log", stream.as_str()))
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
    /// The ranks are gone, but the end could not be written (`why`: a full disk): the run's
    /// supervisor, when `supervisor_alive`, keeps trying and records it once it can; otherwise
    /// another `gpudeck stop` records it.
    EndNotRecorded {
        signal: &'static str,
        why: String,
        supervisor_alive: bool,
    },
}

impl StopOutcome {
    /// What a stop whose end was not recorded says after "stopped RUN": why, and when the end
    /// will be recorded.
    pub fn end_not_recorded(id: &str, why: &str, supervisor_alive: bool) -> String {
        let when = if supervisor_alive {
            "its supervisor records it as soon as there is space again (free some)".to_string()
        } else {
            format!("free some space, then `gpudeck stop {id}` records it")
        };
        format!("its end could not be recorded yet ({why}); {when}")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::runs::launch::procs::ProcessRef;
    use crate::runs::record::{RankRecord, RunGpu, RUN_SCHEMA};
    use crate::runs::spec::Launcher;

    fn record(id: &str, name: &str) -> RunRecord {
        RunRecord {
            schema: RUN_SCHEMA.into(),
            id: id.into(),
            name: name.into(),
            launcher: Launcher::PerGpu,
            image: None,
            workdir: "/work".into(),
            host: "box".into(),
            driver_version: Some("580.65.06".into()),
            gpus: vec![RunGpu {
                index: 1,
                uuid: "GPU-aaa".into(),
                name: "H100".into(),
            }],
            ranks: vec![RankRecord {
                rank: 0,
                argv: vec!["true".into()],
                env: BTreeMap::from([("RANK".to_string(), "0".to_string())]),
                gpus: vec![1],
                pid: Some(1234),
                exit_code: Some(0),
                ended_ms: None,
            }],
            state: RunState::Succeeded,
            created_ms: 1_000,
            started_ms: Some(2_000),
            ended_ms: Some(5_000),
            supervisor: None,
            process_group: None,
            exit_code: Some(0),
            first_failed_rank: None,
            error: None,
            gpu_source: None,
            metrics_error: None,
            service: None,
            torchrun_workers: None,
            lost_gpus: Vec::new(),
            backend: Default::default(),
            slurm: None,
            container: None,
        }
    }

    fn create(store: &RunStore, name: &str, at_ms: u64) -> Run {
        let (id, dir) = store.create(name, "command = [\"true\"]\n", at_ms).unwrap();
        let run = Run {
            dir,
            record: record(&id, name),
        };
        run.write_record(&run.record).unwrap();
        run
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_run_round_trips_through_its_private_directory() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let run = create(&store, "my run/1", 1_795_368_900_000);
        assert!(
            run.id().starts_with("20261122-173500-my-run-1-"),
            "{}",
            run.id()
        );
        assert_eq!(run.id().len(), "20261122-173500-my-run-1-".len() + 4);
        let back = Run::open(&run.dir).unwrap();
        assert_eq!(back.record, run.record);
        assert_eq!(mode(store.root()), 0o700);
        assert_eq!(mode(&run.dir), 0o700);
        assert_eq!(mode(&run.dir.join(RECORD_FILE)), 0o600);
        assert_eq!(mode(&run.dir.join(SPEC_FILE)), 0o600);
        let log = open_log(&run.log_path(0, LogStream::Stderr)).unwrap();
        drop(log);
        assert_eq!(mode(&run.dir.join("rank-0.stderr.log")), 0o600);
    }

    #[test]
    fn a_record_is_replaced_whole_and_leaves_no_temporary_file() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let run = create(&store, "a", 0);
        let mut changed = run.record.clone();
        changed.state = RunState::Failed;
        changed.exit_code = Some(3);
        run.write_record(&changed).unwrap();
        assert_eq!(run.reload().unwrap().record, changed);
        let names: Vec<String> = fs::read_dir(&run.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        // A failed write leaves the old record in place.
        let gone = Run {
            dir: run.dir.join("missing"),
            record: changed.clone(),
        };
        assert!(gone.write_record(&changed).is_err());
        assert_eq!(run.reload().unwrap().record, changed);
    }

    #[test]
    fn runs_are_listed_oldest_first_and_found_by_id_prefix_or_name() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let first = create(&store, "bert", 1_000_000);
        let second = create(&store, "gpt", 2_000_000);
        let third = create(&store, "bert", 3_000_000);
        fs::create_dir(store.root().join("junk")).unwrap();
        let (runs, warnings) = store.list();
        let ids: Vec<&str> = runs.iter().map(Run::id).collect();
        assert_eq!(ids, [first.id(), second.id(), third.id()]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");

        assert_eq!(store.find(second.id()).unwrap().id(), second.id());
        assert_eq!(store.find(&third.id()[..17]).unwrap().id(), third.id());
        assert_eq!(store.find("bert").unwrap().id(), third.id());
        let Err(RunError::AmbiguousRun { .. }) = store.find("1970") else {
            panic!("a shared prefix is ambiguous");
        };
        let Err(RunError::UnknownRun { recent, .. }) = store.find("nope") else {
            panic!("unknown");
        };
        assert_eq!(recent[0], third.id());
        assert_eq!(recent.len(), 3);
    }

    /// Three runs of one name in the same second: their ids sort by the random part, which says
    /// nothing about which came last. The newest by creation time is the one meant.
    #[test]
    fn a_name_means_its_newest_run_even_within_one_second() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        private_dir_all(store.root()).unwrap();
        let at = |id: &str, created_ms: u64| {
            let dir = store.root().join(id);
            fs::create_dir(&dir).unwrap();
            let mut rec = record(id, "train");
            rec.created_ms = created_ms;
            let run = Run { dir, record: rec };
            run.write_record(&run.record).unwrap();
            run
        };
        let oldest = at("20261125-093000-train-ffff", 1_795_368_900_100);
        let middle = at("20261125-093000-train-8000", 1_795_368_900_400);
        let newest = at("20261125-093000-train-0001", 1_795_368_900_700);
        assert_eq!(store.find("train").unwrap().id(), newest.id());
        let (runs, _) = store.list();
        let ids: Vec<&str> = runs.iter().map(Run::id).collect();
        assert_eq!(ids, [oldest.id(), middle.id(), newest.id()], "oldest first");
    }

    #[test]
    fn an_empty_store_lists_nothing() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        assert!(store.list().0.is_empty());
        let err = store.find("x").unwrap_err();
        assert!(err.fix().contains("no runs yet"), "{}", err.fix());
    }

    #[test]
    fn a_running_run_with_a_dead_supervisor_is_lost() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = ProcessRef::of(child.id()).unwrap();
        child.wait().unwrap();
        let mut rec = record("x", "x");
        rec.state = RunState::Running;
        rec.supervisor = Some(dead);
        assert_eq!(rec.effective_state(), RunState::Lost);
    }

    #[test]
    fn a_live_pid_that_is_not_our_supervisor_is_lost_and_ours_is_running() {
        let me = ProcessRef::current().unwrap();
        let mut rec = record("x", "x");
        rec.state = RunState::Running;
        rec.supervisor = Some(ProcessRef {
            start_ticks: me.start_ticks + 7,
            ..me
        });
        assert_eq!(rec.effective_state(), RunState::Lost);
        rec.supervisor = Some(me);
        assert_eq!(rec.effective_state(), RunState::Running);
        rec.state = RunState::Failed;
        rec.supervisor = None;
        assert_eq!(rec.effective_state(), RunState::Failed);
    }

    #[test]
    fn a_start_nobody_picked_up_is_lost_only_once_it_is_stale() {
        let mut rec = record("x", "x");
        rec.state = RunState::Starting;
        rec.created_ms = crate::runs::clock::now_ms();
        assert_eq!(rec.effective_state(), RunState::Starting);
        rec.created_ms -= 10 * 60 * 1000;
        assert_eq!(rec.effective_state(), RunState::Lost);
    }

    #[test]
    fn a_rank_log_left_open_is_made_private_and_a_planted_link_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let store = RunStore::new(root.path());
        let run = create(&store, "logs", 1_000);
        let old = run.log_path(0, LogStream::Stdout);
        fs::write(&old, "earlier\n").unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o644)).unwrap();
        open_log(&old).unwrap();
        assert_eq!(mode(&old), 0o600);

        let victim = root.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let link = run.log_path(0, LogStream::Stderr);
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = open_log(&link).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_store_root_left_open_is_made_private() {
        let root = tempfile::tempdir().unwrap();
        let store = RunStore::new(root.path());
        fs::create_dir_all(store.root()).unwrap();
        fs::set_permissions(store.root(), fs::Permissions::from_mode(0o755)).unwrap();
        create(&store, "open", 1_000);
        assert_eq!(mode(store.root()), 0o700);
    }

    #[test]
    fn a_run_being_created_is_not_called_damaged_but_an_old_one_without_a_record_is() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let (id, dir) = store
            .create("bert", "command = [\"true\"]\n", 1_000)
            .unwrap();
        let (runs, damaged) = store.scan().unwrap();
        assert!(runs.is_empty() && damaged.is_empty(), "{damaged:?}");
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        fs::File::open(&dir)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        let (_, damaged) = store.scan().unwrap();
        assert_eq!(damaged.len(), 1);
        let text = damaged[0].to_string();
        assert!(
            text.contains(&format!("{id}/run.json is damaged: it is missing")),
            "{text}"
        );
        let Err(RunError::DamagedRun { .. }) = store.find(&id) else {
            panic!("the damaged run is named");
        };
    }
}
