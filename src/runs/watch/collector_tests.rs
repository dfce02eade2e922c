use super::*;
use crate::runs::record::RunRecord;
use crate::runs::spec::Launcher;

fn ended_run(store: &RunStore, id: &str, minutes_ago: u64) -> Run {
    let now = clock::now_ms();
    let mut record = RunRecord::starting(
        id.into(),
        "train".into(),
        Launcher::Single,
        "/tmp".into(),
        "box".into(),
        now - (minutes_ago + 10) * 60_000,
    );
    record.state = RunState::Succeeded;
    record.started_ms = Some(record.created_ms + 1_000);
    record.ended_ms = Some(now - minutes_ago * 60_000);
    record.exit_code = Some(0);
    let dir = store.root().join(id);
    std::fs::create_dir_all(&dir).unwrap();
    let run = Run { dir, record };
    run.write_record(&run.record).unwrap();
    run
}

fn listings(rx: &mut tokio::sync::mpsc::Receiver<RunsUpdate>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    while let Ok(update) = rx.try_recv() {
        if let RunsUpdate::Listed { runs, .. } = update {
            out.push(runs.into_iter().map(|r| r.id).collect());
        }
    }
    out
}

#[test]
fn an_unchanged_store_of_ended_runs_is_not_read_or_sent_again() {
    let data = tempfile::tempdir().unwrap();
    let store = RunStore::new(data.path());
    for i in 0..20 {
        ended_run(&store, &format!("run-{i:02}"), 5);
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let mut watcher = Watcher::new(store.clone(), tx);
    assert!(watcher.look(false));
    assert_eq!(listings(&mut rx).len(), 1, "the first look lists the runs");
    for _ in 0..5 {
        assert!(watcher.look(false));
    }
    assert!(
        listings(&mut rx).is_empty(),
        "nothing changed, nothing sent"
    );
    assert_eq!(watcher.records_read(), 20, "each record read once");
    // A run that comes and one that goes are sent at the next look.
    ended_run(&store, "run-20", 5);
    std::fs::remove_dir_all(store.root().join("run-00")).unwrap();
    assert!(watcher.look(false));
    let sent = listings(&mut rx);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].len(), 20);
    assert_eq!(sent[0].first().map(String::as_str), Some("run-01"));
    assert_eq!(sent[0].last().map(String::as_str), Some("run-20"));
    assert_eq!(watcher.records_read(), 21);
    // A refresh asked for sends the list even when nothing changed.
    assert!(watcher.apply(RunsCommand::Refresh));
    assert_eq!(listings(&mut rx).len(), 1);
}

#[test]
fn a_live_run_is_looked_at_every_time_and_settles_after_its_end() {
    let data = tempfile::tempdir().unwrap();
    let store = RunStore::new(data.path());
    let run = ended_run(&store, "live", 0);
    let mut record = run.record.clone();
    record.state = RunState::Running;
    record.ended_ms = None;
    record.exit_code = None;
    record.supervisor = crate::runs::ProcessRef::current();
    run.write_record(&record).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let mut watcher = Watcher::new(store.clone(), tx);
    assert!(watcher.look(false));
    let _ = listings(&mut rx);
    record.state = RunState::Stopped;
    record.ended_ms = Some(clock::now_ms());
    run.write_record(&record).unwrap();
    assert!(watcher.look(false));
    let Some(RunsUpdate::Listed { runs, .. }) = rx.try_recv().ok() else {
        panic!("the run's end is sent");
    };
    assert_eq!(runs[0].state, RunState::Stopped);
    assert!(watcher.pending.contains(std::ffi::OsStr::new("live")));
}

#[test]
fn a_live_run_among_ended_ones_sends_only_its_own_row() {
    let data = tempfile::tempdir().unwrap();
    let store = RunStore::new(data.path());
    for i in 0..5 {
        ended_run(&store, &format!("old-{i}"), 5);
    }
    let run = ended_run(&store, "zz-live", 0);
    let mut record = run.record.clone();
    record.state = RunState::Running;
    record.ended_ms = None;
    record.exit_code = None;
    record.supervisor = crate::runs::ProcessRef::current();
    run.write_record(&record).unwrap();
    let started = record.started_ms.unwrap() as i64;
    let rows: String = (1..=3)
        .map(|s| format!("{},0,GPU-0,50,1,2,100,50,1400\n", started + s * 1000))
        .collect();
    let header = crate::runs::watch::samples::CSV_HEADER;
    std::fs::write(run.dir.join("metrics.csv"), format!("{header}\n{rows}")).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let mut watcher = Watcher::new(store.clone(), tx);
    assert!(watcher.look(false));
    let Ok(RunsUpdate::Listed { runs, .. }) = rx.try_recv() else {
        panic!("a first listing");
    };
    assert_eq!(runs.len(), 6);
    let first = runs[5].summary.clone().expect("the live run's summary");
    // The live run's summary runs to now: once the clock moved, it changed.
    let moved = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while clock::now_ms() as i64 <= first.ended_ms {
        assert!(std::time::Instant::now() < moved, "the clock stands still");
        std::thread::yield_now();
    }
    assert!(watcher.look(false));
    let Ok(RunsUpdate::Changed { rows, warnings }) = rx.try_recv() else {
        panic!("only the changed row");
    };
    assert!(warnings.is_empty());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].id, "zz-live");
    assert!(rows[0].summary.as_ref().unwrap().ended_ms > first.ended_ms);
}

fn details(rx: &mut tokio::sync::mpsc::Receiver<RunsUpdate>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(update) = rx.try_recv() {
        if let RunsUpdate::Detail(detail) = update {
            out.push(detail.id);
        }
    }
    out
}

#[test]
fn an_ended_runs_detail_is_sent_when_asked_for_and_when_it_changes_not_on_every_look() {
    let data = tempfile::tempdir().unwrap();
    let store = RunStore::new(data.path());
    let run = ended_run(&store, "done", 5);
    ended_run(&store, "other", 5);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let mut watcher = Watcher::new(store.clone(), tx);
    assert!(watcher.apply(RunsCommand::Focus(Some("done".into()))));
    assert_eq!(details(&mut rx), ["done"], "the detail asked for is sent");
    for _ in 0..5 {
        assert!(watcher.look(false));
    }
    assert!(
        details(&mut rx).is_empty(),
        "an unchanged detail is not sent again"
    );
    // Asked for again (the app selected another run and came back): sent even unchanged.
    assert!(watcher.apply(RunsCommand::Focus(Some("other".into()))));
    assert!(watcher.apply(RunsCommand::Focus(Some("done".into()))));
    assert!(watcher.apply(RunsCommand::Focus(Some("done".into()))));
    assert_eq!(details(&mut rx), ["other", "done", "done"]);
    // What the detail shows changes (progress in its output): sent at the next look.
    let out = run.log_path(0, crate::runs::store::LogStream::Stdout);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, "step 10 loss=0.5\n").unwrap();
    assert!(watcher.look(false));
    assert_eq!(details(&mut rx), ["done"]);
    assert!(watcher.look(false));
    assert!(details(&mut rx).is_empty());
    // A refresh sends everything.
    assert!(watcher.apply(RunsCommand::Refresh));
    assert_eq!(details(&mut rx), ["done"]);
}
