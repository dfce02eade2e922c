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
