//! The run store as a reader that looks again and again follows it: each run's record read once
//! and again only when its file changes, a run that ended a while ago never looked at again, and
//! the store's directory listed again only when its own modification time says it changed.
//! Looking at a store of thousands of ended runs costs about what looking at an empty one does.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::runs::clock;
use crate::runs::store::{Run, RunStore, RECORD_FILE};

/// A run that ended this long ago is done changing: its record is not looked at again. The
/// supervisor (and a Slurm look) writes the end within moments; a minute leaves room for more.
pub const SETTLE_MS: u64 = 60_000;
/// A directory changed this recently may change again within its timestamp's granularity
/// without its timestamp moving: it is listed again until it has been quiet this long.
const RACY: Duration = Duration::from_secs(2);

/// What identifies one version of a file: a replaced (renamed over) or rewritten file differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileKey {
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl FileKey {
    fn of(meta: &fs::Metadata) -> FileKey {
        FileKey {
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// One run directory as last read.
#[derive(Debug)]
struct Entry {
    dir: PathBuf,
    /// The directory's inode: a directory replaced under the same name is read anew.
    dir_ino: u64,
    /// `run.json` as it was when read (None: it could not be looked at).
    key: Option<FileKey>,
    read: Result<Run, String>,
    /// Ended a while ago: never looked at again while the directory stays.
    settled: bool,
    /// Which directory of this name it is: a later one under the same name has a larger number.
    born: u64,
}

/// The root directory as it was when listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RootStamp {
    ino: u64,
    mtime: SystemTime,
}

/// A run of the index, and whether it is settled (ended a while ago, read for the last time).
#[derive(Debug, Clone, Copy)]
pub struct Indexed<'a> {
    pub name: &'a std::ffi::OsStr,
    pub run: &'a Run,
    pub settled: bool,
    /// Tells this directory apart from an earlier or later one of the same name.
    pub born: u64,
}

/// The runs of a store, kept between looks; see the module's description.
#[derive(Debug)]
pub struct RunIndex {
    root: PathBuf,
    /// The root when last listed, and when that was.
    listed: Option<(RootStamp, SystemTime)>,
    entries: BTreeMap<OsString, Entry>,
    /// The entries looked at on every look: not settled, or not readable.
    unsettled: BTreeSet<OsString>,
    /// Why the root could not be listed (absent: listed, or no store yet).
    root_error: Option<String>,
    /// Why the root could not be read, as an error for the user (absent as `root_error` is).
    unreadable: Option<String>,
    /// Records read since this index was made (a measure for tests and benchmarks).
    reads: u64,
    /// Run directories seen since this index was made.
    born: u64,
}

impl RunStore {
    /// An index of the runs, for a reader that looks again and again (nothing read yet).
    pub fn index(&self) -> RunIndex {
        RunIndex::new(self.root())
    }
}

impl RunIndex {
    /// An index of the runs under `root` (the store's `runs/` directory); nothing read yet.
    pub fn new(root: &Path) -> RunIndex {
        RunIndex {
            root: root.to_path_buf(),
            listed: None,
            entries: BTreeMap::new(),
            unsettled: BTreeSet::new(),
            root_error: None,
            unreadable: None,
            reads: 0,
            born: 0,
        }
    }

    /// Looks at the store again; true when a run came, went or was read again.
    pub fn refresh(&mut self) -> bool {
        self.refresh_at(clock::now_ms())
    }

    fn refresh_at(&mut self, now_ms: u64) -> bool {
        let mut changed = false;
        if let Some(names) = self.listing_if_changed() {
            changed |= self.merge(names, now_ms);
        }
        let looked: Vec<OsString> = self.unsettled.iter().cloned().collect();
        for name in looked {
            changed |= self.look_at(&name, now_ms);
        }
        changed
    }

    /// The run directories' names and inodes, when the root may have changed since last listed.
    fn listing_if_changed(&mut self) -> Option<Vec<(OsString, u64)>> {
        let stamp = match fs::metadata(&self.root) {
            Ok(meta) => RootStamp {
                ino: meta.ino(),
                mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            },
            Err(e) => return self.unlisted(e),
        };
        if let Some((last, at)) = self.listed {
            let quiet = at.duration_since(stamp.mtime).is_ok_and(|d| d >= RACY);
            if last == stamp && quiet {
                return None;
            }
        }
        let listed_at = SystemTime::now();
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) => return self.unlisted(e),
        };
        let mut names = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let is_dir = match entry.file_type() {
                Ok(t) if t.is_symlink() => entry.path().is_dir(),
                Ok(t) => t.is_dir(),
                Err(_) => false,
            };
            if is_dir {
                names.push((
                    entry.file_name(),
                    std::os::unix::fs::DirEntryExt::ino(&entry),
                ));
            }
        }
        self.listed = Some((stamp, listed_at));
        self.root_error = None;
        self.unreadable = None;
        Some(names)
    }

    /// The root could not be listed: no runs, and why unless there is no store yet.
    fn unlisted(&mut self, e: std::io::Error) -> Option<Vec<(OsString, u64)>> {
        self.listed = None;
        self.root_error = (e.kind() != std::io::ErrorKind::NotFound)
            .then(|| format!("{}: {e}", self.root.display()));
        self.unreadable = (e.kind() != std::io::ErrorKind::NotFound).then(|| e.to_string());
        Some(Vec::new())
    }

    /// Takes in a fresh listing: forgets the runs gone, reads the new ones.
    fn merge(&mut self, names: Vec<(OsString, u64)>, now_ms: u64) -> bool {
        let mut changed = false;
        let fresh: BTreeMap<OsString, u64> = names.into_iter().collect();
        let before = self.entries.len();
        self.entries
            .retain(|name, entry| fresh.get(name) == Some(&entry.dir_ino));
        self.unsettled
            .retain(|name| self.entries.contains_key(name));
        changed |= self.entries.len() != before;
        for (name, dir_ino) in fresh {
            if self.entries.contains_key(&name) {
                continue;
            }
            let dir = self.root.join(&name);
            self.born += 1;
            let entry = Entry {
                dir,
                dir_ino,
                key: None,
                read: Err(String::new()),
                settled: false,
                born: self.born,
            };
            self.entries.insert(name.clone(), entry);
            self.unsettled.insert(name.clone());
            self.read(&name, now_ms);
            changed = true;
        }
        changed
    }

    /// Looks at one unsettled run's record; true when it was read again.
    fn look_at(&mut self, name: &OsString, now_ms: u64) -> bool {
        let Some(entry) = self.entries.get(name) else {
            self.unsettled.remove(name);
            return false;
        };
        let path = entry.dir.join(RECORD_FILE);
        let key = fs::metadata(&path).ok().map(|m| FileKey::of(&m));
        if key.is_some() && key == entry.key {
            self.settle(name, now_ms);
            return false;
        }
        self.read(name, now_ms);
        true
    }

    /// Reads a run's record into its entry.
    fn read(&mut self, name: &OsString, now_ms: u64) {
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let path = entry.dir.join(RECORD_FILE);
        self.reads += 1;
        // The key before the read: a change during the read is seen at the next look.
        entry.key = fs::metadata(&path).ok().map(|m| FileKey::of(&m));
        entry.read = Run::open(&entry.dir).map_err(|e| e.to_string());
        self.settle(name, now_ms);
    }

    /// Marks the run settled once it ended a while ago.
    fn settle(&mut self, name: &OsString, now_ms: u64) {
        let Some(entry) = self.entries.get_mut(name) else {
            return;
        };
        let ended_long_ago = entry.read.as_ref().is_ok_and(|run| {
            run.record.state.is_finished()
                && run
                    .record
                    .ended_ms
                    .is_some_and(|ended| now_ms.saturating_sub(ended) >= SETTLE_MS)
        });
        if ended_long_ago {
            entry.settled = true;
            self.unsettled.remove(name);
        }
    }

    /// Every readable run, oldest first.
    pub fn runs(&self) -> impl Iterator<Item = &Run> {
        self.entries.values().filter_map(|e| e.read.as_ref().ok())
    }

    /// Every readable run with its name and whether it is settled, oldest first.
    pub fn indexed(&self) -> impl Iterator<Item = Indexed<'_>> {
        self.entries.iter().filter_map(|(name, e)| {
            e.read.as_ref().ok().map(|run| Indexed {
                name,
                run,
                settled: e.settled,
                born: e.born,
            })
        })
    }

    /// The runs looked at on every look (those not settled), oldest first.
    pub fn unsettled(&self) -> impl Iterator<Item = Indexed<'_>> {
        self.unsettled.iter().filter_map(|name| {
            let e = self.entries.get(name)?;
            e.read.as_ref().ok().map(|run| Indexed {
                name,
                run,
                settled: e.settled,
                born: e.born,
            })
        })
    }

    /// Every run directory is settled: none is live, ended lately, unreadable or half made.
    pub fn all_settled(&self) -> bool {
        self.unsettled.is_empty()
    }

    /// The run of this directory name, if it is readable.
    pub fn get(&self, name: &std::ffi::OsStr) -> Option<Indexed<'_>> {
        let (name, e) = self.entries.get_key_value(name)?;
        e.read.as_ref().ok().map(|run| Indexed {
            name,
            run,
            settled: e.settled,
            born: e.born,
        })
    }

    /// A warning for each run directory whose record could not be read (but for one `gpudeck
    /// run` is still creating).
    pub fn warnings(&self) -> Vec<String> {
        // Only a run read successfully settles, so the unreadable ones are all unsettled.
        let unreadable = (self.unsettled.iter()).filter_map(|name| {
            let entry = self.entries.get(name)?;
            let why = entry.read.as_ref().err()?;
            (!crate::runs::store::being_created(&entry.dir)).then_some(why)
        });
        self.root_error.iter().chain(unreadable).cloned().collect()
    }

    /// The store itself could not be read (it exists, but listing it failed).
    pub fn unreadable(&self) -> Option<crate::runs::error::RunError> {
        let why = self.unreadable.clone()?;
        Some(crate::runs::error::RunError::StoreUnreadable {
            path: self.root.clone(),
            why,
        })
    }

    /// How many records have been read since the index was made.
    pub fn reads(&self) -> u64 {
        self.reads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::record::{RunRecord, RunState};
    use crate::runs::spec::Launcher;
    use crate::runs::store::RunStore;

    const NOW: u64 = 1_900_000_000_000;

    fn record(id: &str, state: RunState, ended_ms: Option<u64>) -> RunRecord {
        let mut r = RunRecord::starting(
            id.into(),
            "train".into(),
            Launcher::Single,
            "/tmp".into(),
            "box".into(),
            NOW - 3_600_000,
        );
        r.state = state;
        r.started_ms = Some(NOW - 3_500_000);
        r.ended_ms = ended_ms;
        r
    }

    /// A run directory holding `record`, written as the supervisor does (replaced atomically).
    fn write(store: &RunStore, record: &RunRecord) -> Run {
        let dir = store.root().join(&record.id);
        fs::create_dir_all(&dir).unwrap();
        let run = Run {
            dir,
            record: record.clone(),
        };
        run.write_record(record).unwrap();
        run
    }

    fn ids(index: &RunIndex) -> Vec<String> {
        index.runs().map(|r| r.id().to_string()).collect()
    }

    #[test]
    fn a_run_that_ended_a_while_ago_is_read_once() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let old = write(
            &store,
            &record("a", RunState::Succeeded, Some(NOW - SETTLE_MS)),
        );
        let mut index = store.index();
        assert!(index.refresh_at(NOW));
        assert_eq!((ids(&index), index.reads()), (vec!["a".to_string()], 1));
        // Whatever happens to its record now is not looked at.
        fs::write(old.dir.join(RECORD_FILE), "not json").unwrap();
        for _ in 0..3 {
            assert!(!index.refresh_at(NOW));
        }
        assert_eq!(index.reads(), 1);
        assert_eq!(index.get("a".as_ref()).map(|i| i.settled), Some(true));
        assert!(index.warnings().is_empty(), "{:?}", index.warnings());
    }

    #[test]
    fn a_live_run_is_read_again_only_when_its_record_changes() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let live = write(&store, &record("b", RunState::Running, None));
        let mut index = store.index();
        assert!(index.refresh_at(NOW));
        assert!(!index.refresh_at(NOW));
        assert_eq!(index.reads(), 1);
        let mut ended = live.record.clone();
        ended.state = RunState::Failed;
        ended.ended_ms = Some(NOW);
        live.write_record(&ended).unwrap();
        assert!(index.refresh_at(NOW));
        assert_eq!(
            index.runs().next().map(|r| r.record.state),
            Some(RunState::Failed)
        );
        // Just ended: still looked at, so a last write after the end is seen.
        let mut later = ended.clone();
        later.error = Some("written after the end".into());
        live.write_record(&later).unwrap();
        assert!(index.refresh_at(NOW + 1_000));
        assert_eq!(
            index.runs().next().and_then(|r| r.record.error.clone()),
            later.error
        );
        assert_eq!(index.reads(), 3);
        // A minute after its end it is settled and no longer looked at.
        assert!(!index.refresh_at(NOW + SETTLE_MS));
        assert!(index.unsettled().next().is_none());
    }

    #[test]
    fn runs_that_come_and_go_are_seen_and_a_replaced_directory_is_read_anew() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let ended = Some(NOW - 2 * SETTLE_MS);
        let a = write(&store, &record("a", RunState::Succeeded, ended));
        let mut index = store.index();
        index.refresh_at(NOW);
        let born = index.get("a".as_ref()).map(|i| i.born);
        write(&store, &record("b", RunState::Stopped, ended));
        assert!(index.refresh_at(NOW));
        assert_eq!(ids(&index), ["a", "b"]);
        fs::remove_dir_all(&a.dir).unwrap();
        assert!(index.refresh_at(NOW));
        assert_eq!(ids(&index), ["b"]);
        write(&store, &record("a", RunState::Failed, ended));
        assert!(index.refresh_at(NOW));
        assert_eq!(ids(&index), ["a", "b"]);
        let again = index.get("a".as_ref()).expect("a again");
        assert_eq!(again.run.record.state, RunState::Failed);
        assert_ne!(Some(again.born), born);
    }

    #[test]
    fn a_directory_without_a_readable_record_warns_until_it_has_one() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        fs::create_dir_all(store.root().join("c")).unwrap();
        let mut index = store.index();
        index.refresh_at(NOW);
        let warnings = index.warnings();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("run.json"), "{warnings:?}");
        assert!(ids(&index).is_empty());
        write(&store, &record("c", RunState::Running, None));
        assert!(index.refresh_at(NOW));
        assert_eq!(ids(&index), ["c"]);
        assert!(index.warnings().is_empty());
    }

    #[test]
    fn no_store_yet_is_no_runs_and_no_warning() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let mut index = store.index();
        assert!(!index.refresh_at(NOW));
        assert!(index.runs().next().is_none() && index.warnings().is_empty());
        write(&store, &record("d", RunState::Running, None));
        assert!(index.refresh_at(NOW));
        assert_eq!(ids(&index), ["d"]);
    }
}
