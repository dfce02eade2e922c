use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::runs::local::procs::ProcessRef;
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
