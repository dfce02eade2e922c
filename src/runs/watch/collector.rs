//! The runs collector: a thread that follows the run store for the dashboard. It lists the runs
//! with their GPU use, and for the run in focus follows its metrics, its training progress and
//! one rank's logs, reading only what was appended since it last looked.

#[path = "feeds.rs"]
pub(super) mod feeds;
#[path = "wake.rs"]
mod wake;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

use super::index::RunIndex;
use super::update::{RunDetail, RunRow, RunsCommand, RunsUpdate};
use crate::claims::Claim;
use crate::health::XidCatalog;
use crate::runs::clock;
use crate::runs::local::liveness::SystemLiveness;
use crate::runs::record::RunOwner;
use crate::runs::record::RunState;
use crate::runs::recorded::summary::RunSummary;
use crate::runs::store::{Run, RunStore};
use feeds::{FocusFeed, LogFeed, SummaryFeed};
use wake::StoreWake;

/// How often the store is looked at while something in it may change by itself.
const TICK: Duration = Duration::from_millis(500);
/// How often an idle store is looked at all the same: its watch wakes the collector for every
/// change, and this is only in case the kernel dropped a notice.
const IDLE_TICK: Duration = Duration::from_secs(30);
/// Lost container runs are looked at in the engine, and Slurm jobs in the queue, every this
/// many ticks.
const LOST_LOOK_TICKS: u64 = 10;

/// Looks between two looks at the claims when `claims.json` did not change (5 s at two a second).
const CLAIMS_EVERY: u64 = 10;

/// The running collector; dropping it stops the thread.
pub struct RunsHandle {
    commands: mpsc::Sender<RunsCommand>,
    thread: Option<JoinHandle<()>>,
}

impl RunsHandle {
    pub fn send(&self, command: RunsCommand) {
        // The thread lives as long as the handle, so a failed send has no one to tell.
        let _ = self.commands.send(command);
    }
}

impl Drop for RunsHandle {
    fn drop(&mut self) {
        let _ = self.commands.send(RunsCommand::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts following `store`, telling what Xids that hit a run mean from `xid_catalog`.
pub fn spawn(store: RunStore, updates: Sender<RunsUpdate>, xid_catalog: XidCatalog) -> RunsHandle {
    let (tx, rx) = mpsc::channel();
    let dirs = StoreWake::dirs_of(store.root(), store.claims().dir());
    let wake = StoreWake::new(dirs, tx.clone());
    let thread = std::thread::Builder::new()
        .name("runs-collector".into())
        .spawn(move || {
            Watcher::new(store, updates)
                .with_xid_catalog(xid_catalog)
                .run(&rx, wake)
        })
        .ok();
    if thread.is_none() {
        tracing::error!("could not start the runs collector thread");
    }
    RunsHandle {
        commands: tx,
        thread,
    }
}

/// One run of the list: its summary as followed, and its row as last sent.
struct Listed {
    /// The run directory it follows (see [`super::Indexed::born`]).
    born: u64,
    /// None once the run is settled and summarised: its row will not change again, and what
    /// followed its metrics is let go.
    feed: Option<SummaryFeed>,
    row: Option<RunRow>,
}

/// The collector's own state: what it follows and how far it has read.
pub struct Watcher {
    store: RunStore,
    updates: Sender<RunsUpdate>,
    index: RunIndex,
    /// The rows by run directory, kept between looks.
    listed: BTreeMap<OsString, Listed>,
    /// Why a run's metrics could not be read whole (bad lines skipped), by run directory.
    problems: BTreeMap<OsString, String>,
    /// The runs whose rows may still change (live, or not summarised yet).
    pending: BTreeSet<OsString>,
    /// What the last listing sent said, so an unchanged store sends nothing.
    sent_warnings: Option<Vec<String>>,
    /// The app has every run of the store as it is now: changed rows are enough.
    listing_current: bool,
    focus: Option<FocusFeed>,
    /// The focused run's detail as last sent: an ended run's is not sent again on every look.
    sent_detail: Option<RunDetail>,
    logs: Option<LogFeed>,
    /// Lost container runs as their containers showed them at the last look.
    observed: HashMap<String, Run>,
    ticks: u64,
    /// Metrics bytes the summaries may read per look.
    summary_budget: u64,
    /// The live claims last sent.
    claimed: Vec<Claim>,
    /// `claims.json` as it was when the claims were last looked at, and at which look.
    claims_stamp: Option<(u64, u64, i64, i64)>,
    claims_looked: u64,
    /// What each Xid means, for the Xids that hit a run (the built-in catalog and the user's).
    xid_catalog: XidCatalog,
}

impl Watcher {
    pub fn new(store: RunStore, updates: Sender<RunsUpdate>) -> Self {
        Self {
            index: store.index(),
            store,
            updates,
            listed: BTreeMap::new(),
            problems: BTreeMap::new(),
            pending: BTreeSet::new(),
            sent_warnings: None,
            listing_current: false,
            focus: None,
            sent_detail: None,
            logs: None,
            observed: HashMap::new(),
            ticks: 0,
            summary_budget: feeds::SUMMARY_BUDGET,
            claimed: Vec::new(),
            claims_stamp: None,
            claims_looked: 0,
            xid_catalog: XidCatalog::builtin(),
        }
    }

    /// The same watcher telling what Xids mean from `catalog` (the user's files layered over
    /// the built-in catalog) instead of the built-in one alone.
    pub fn with_xid_catalog(mut self, catalog: XidCatalog) -> Self {
        self.xid_catalog = catalog;
        self
    }

    /// The same watcher reading at most `bytes` of metrics per look for the list's summaries.
    pub fn with_summary_budget(mut self, bytes: u64) -> Self {
        self.summary_budget = bytes;
        self
    }

    /// Looks on a clock while anything followed may change by itself, and sleeps until `wake`
    /// or a command says so while nothing can (without a watch, it keeps to the clock).
    fn run(mut self, commands: &mpsc::Receiver<RunsCommand>, mut wake: Option<StoreWake>) {
        let mut idle = false;
        loop {
            let started = Instant::now();
            // The watches are set before the look: a change after them wakes the collector,
            // one before them is seen by the look.
            let watched = idle && wake.as_mut().is_some_and(StoreWake::watch_all);
            if !self.look(false) {
                return;
            }
            let was_idle = idle;
            idle = wake.is_some() && self.is_idle();
            if idle && !was_idle {
                // Just idle: set the watches and look once more at once, so that nothing made
                // between this look and the watches is missed.
                continue;
            }
            let asleep = idle && watched;
            let deadline = started + if asleep { IDLE_TICK } else { TICK };
            loop {
                let wait = deadline.saturating_duration_since(Instant::now());
                match commands.recv_timeout(wait) {
                    Ok(RunsCommand::Shutdown) | Err(RecvTimeoutError::Disconnected) => return,
                    Ok(RunsCommand::Look) => break,
                    Ok(command) => {
                        if !self.apply(command) {
                            return;
                        }
                        // A run followed now may be a live one: the clock is chosen again.
                        if asleep {
                            break;
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
        }
    }

    /// Nothing followed can change unless the store's directories do: no run that is not
    /// settled (live, lost, or not read whole), no live claim whose owner may die, and the run
    /// in focus and the logs followed, if any, settled.
    pub fn is_idle(&self) -> bool {
        let settled = |id: &str| {
            self.index
                .get(std::ffi::OsStr::new(id))
                .is_some_and(|i| i.settled)
        };
        self.pending.is_empty()
            && self.index.all_settled()
            && self.index.unreadable().is_none()
            && self.claimed.is_empty()
            && self.observed.is_empty()
            && self.focus.as_ref().is_none_or(|f| settled(f.id()))
            && self.logs.as_ref().is_none_or(|l| settled(l.id()))
    }

    /// Takes a command in; false once the app is gone.
    pub fn apply(&mut self, command: RunsCommand) -> bool {
        match command {
            RunsCommand::Focus(id) => {
                if self.focus.as_ref().map(FocusFeed::id) != id.as_deref() {
                    self.focus = id.and_then(|id| self.open_run(&id)).map(FocusFeed::new);
                }
                // The app forgets a detail when its selection changes: asked, it is sent.
                self.sent_detail = None;
                self.send_detail()
            }
            RunsCommand::FollowLogs { id, rank } => {
                self.logs = self.open_run(&id).map(|run| LogFeed::new(&run, rank));
                self.send_logs()
            }
            RunsCommand::Refresh => self.tick(),
            RunsCommand::Look => self.look(false),
            RunsCommand::Shutdown => false,
        }
    }

    /// One look at everything followed, sending the list whether or not it changed; false once
    /// the app is gone.
    pub fn tick(&mut self) -> bool {
        self.sent_detail = None;
        self.look(true)
    }

    /// One look at everything followed; the list is sent when it changed or `always`.
    fn look(&mut self, always: bool) -> bool {
        self.ticks += 1;
        self.send_list(always) && self.send_claims() && self.send_detail() && self.send_logs()
    }

    /// How many run records the collector has read since it started (each ended run's once).
    pub fn records_read(&self) -> u64 {
        self.index.reads()
    }

    /// The live claims, looked at when `claims.json` changed (a claim made or given back) and
    /// otherwise every [`CLAIMS_EVERY`] looks (a claim whose owner died): telling a live shell
    /// from a dead one can mean reading every process's cgroup, too much for twice a second.
    fn send_claims(&mut self) -> bool {
        let stamp = std::fs::metadata(self.store.claims().file())
            .ok()
            .map(|m| (m.ino(), m.len(), m.mtime(), m.mtime_nsec()));
        let due = self.ticks.saturating_sub(self.claims_looked) >= CLAIMS_EVERY;
        if stamp == self.claims_stamp && !due && self.claims_looked > 0 {
            return true;
        }
        self.claims_stamp = stamp;
        self.claims_looked = self.ticks;
        let claimed = match self.store.claims().live(&SystemLiveness) {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!("{e}");
                return true;
            }
        };
        if claimed == self.claimed {
            return true;
        }
        self.claimed = claimed.clone();
        self.send(RunsUpdate::Claimed(claimed))
    }

    /// A container run whose supervisor died is still running while its containers do: asks
    /// the engine now and then (each look connects to it), and shows the last answer between.
    fn look_at_lost(&mut self, runs: &mut [Run], warnings: &mut Vec<String>) {
        let lost = |r: &Run| r.record.container.is_some() && r.state() == RunState::Lost;
        if !runs.iter().any(lost) {
            self.observed.clear();
            return;
        }
        if self.ticks % LOST_LOOK_TICKS == 1 || self.observed.is_empty() {
            let before: Vec<String> = runs
                .iter()
                .filter(|r| lost(r))
                .map(|r| r.id().to_string())
                .collect();
            warnings.extend(crate::runs::launch::container::lost::look_at_lost(runs));
            self.observed = runs
                .iter()
                .filter(|r| before.iter().any(|id| id == r.id()))
                .map(|r| (r.id().to_string(), r.clone()))
                .collect();
            return;
        }
        for run in runs.iter_mut().filter(|r| lost(r)) {
            if let Some(seen) = self.observed.get(run.id()) {
                *run = seen.clone();
            }
        }
    }

    fn open_run(&self, id: &str) -> Option<Run> {
        Run::open(&self.store.root().join(id)).ok()
    }

    /// Looks at the store; sends the list when a row or a warning changed, or `always`. Only
    /// runs that may still change are looked at: a settled run's row is made once.
    fn send_list(&mut self, always: bool) -> bool {
        let relisted = self.index.refresh();
        if let Some(e) = self.index.unreadable() {
            // A store that cannot be read is not an empty one; once it can be, all of it is sent.
            self.listing_current = false;
            return self.send(RunsUpdate::StoreUnreadable(format!("{e}. {}", e.fix())));
        }
        if relisted {
            self.relist();
        }
        let (mut live, mut warnings): (Vec<(OsString, Run)>, Vec<String>) = (
            self.index
                .unsettled()
                .filter(|i| !is_service(i.run))
                .map(|i| (i.name.to_os_string(), i.run.clone()))
                .collect(),
            self.index.warnings(),
        );
        let mut runs: Vec<Run> = live.iter().map(|(_, r)| r.clone()).collect();
        self.look_at_lost(&mut runs, &mut warnings);
        // Each look runs squeue; between looks the record on disk holds the last answer. A job
        // just submitted is looked at every second, so it shows running soon after it does.
        let every_job = self.ticks % LOST_LOOK_TICKS == 1;
        if every_job || self.ticks % 2 == 1 {
            warnings.extend(crate::runs::slurm::run::look_at_jobs(&mut runs, !every_job));
        }
        for ((_, run), looked) in live.iter_mut().zip(runs) {
            *run = looked;
        }
        let changed = self.update_rows(&live);
        // Bad lines skipped in runs' metrics, said as `gpudeck runs` says them.
        warnings.extend(self.problems.values().cloned());
        let new_warnings = self.sent_warnings.as_ref() != Some(&warnings);
        let full = always || !self.listing_current;
        if !full && changed.is_empty() && !new_warnings {
            return true;
        }
        self.sent_warnings = Some(warnings.clone());
        if !full {
            let rows = changed
                .iter()
                .filter_map(|name| self.listed.get(name)?.row.clone())
                .collect();
            return self.send(RunsUpdate::Changed { rows, warnings });
        }
        let rows: Vec<RunRow> = self
            .index
            .indexed()
            .filter_map(|i| self.listed.get(i.name)?.row.clone())
            .collect();
        self.listing_current = true;
        self.send(RunsUpdate::Listed {
            runs: rows,
            warnings,
        })
    }

    /// The store's runs changed: forgets the rows of runs gone, and looks again at every run
    /// whose row is not fixed.
    fn relist(&mut self) {
        self.listing_current = false;
        let index = &self.index;
        self.listed
            .retain(|name, l| index.get(name).is_some_and(|i| i.born == l.born));
        self.pending = index
            .indexed()
            .filter(|i| !is_service(i.run))
            .filter(|i| self.listed.get(i.name).is_none_or(|l| l.feed.is_some()))
            .map(|i| i.name.to_os_string())
            .collect();
    }

    /// Updates the rows that may change, newest first (recent runs get the metrics budget
    /// first); `live` holds the unsettled runs as looked at now. Returns the runs whose row
    /// changed.
    fn update_rows(&mut self, live: &[(OsString, Run)]) -> Vec<OsString> {
        let live_runs: HashMap<&OsString, &Run> = live.iter().map(|(n, r)| (n, r)).collect();
        self.pending.extend(live.iter().map(|(n, _)| n.clone()));
        let now = clock::now_ms();
        let mut budget = self.summary_budget;
        let mut changed = Vec::new();
        let mut fixed = Vec::new();
        for name in self.pending.iter().rev() {
            let Some(indexed) = self.index.get(name) else {
                fixed.push(name.clone());
                continue;
            };
            let run = live_runs.get(name).copied().unwrap_or(indexed.run);
            let fresh = || Listed {
                born: indexed.born,
                feed: Some(SummaryFeed::new(run)),
                row: None,
            };
            let listed = self.listed.entry(name.clone()).or_insert_with(fresh);
            if listed.born != indexed.born {
                *listed = fresh();
            }
            let Some(feed) = listed.feed.as_mut() else {
                fixed.push(name.clone());
                continue;
            };
            let summary = feed.update(run, now, &mut budget);
            match feed.problem() {
                Some(problem) => self.problems.insert(name.clone(), problem),
                None => self.problems.remove(name),
            };
            let done = indexed.settled && feed.is_done();
            let row = row_of(run, summary, &self.xid_catalog);
            if listed.row.as_ref() != Some(&row) {
                listed.row = Some(row);
                changed.push(name.clone());
            }
            if done {
                listed.feed = None;
                fixed.push(name.clone());
            }
        }
        for name in fixed {
            self.pending.remove(&name);
        }
        changed
    }

    fn send_detail(&mut self) -> bool {
        let Some(focus) = self.focus.as_mut() else {
            return true;
        };
        let detail = focus.update();
        if self.sent_detail.as_ref() == Some(&detail) {
            return true;
        }
        self.sent_detail = Some(detail.clone());
        self.send(RunsUpdate::Detail(Box::new(detail)))
    }

    fn send_logs(&mut self) -> bool {
        let Some(logs) = self.logs.as_mut() else {
            return true;
        };
        match logs.read() {
            Some(chunk) => self.send(RunsUpdate::Log(chunk)),
            None => true,
        }
    }

    fn send(&self, update: RunsUpdate) -> bool {
        self.updates.blocking_send(update).is_ok()
    }
}

/// Services (notebooks, TensorBoards, Triton servers) are the Services tab's, as `gpudeck
/// runs` leaves them to `gpudeck services`: they get no row here.
fn is_service(run: &Run) -> bool {
    run.record.service.is_some()
}

fn row_of(run: &Run, summary: Option<RunSummary>, catalog: &XidCatalog) -> RunRow {
    let r = &run.record;
    let state = run.state();
    // A lost run's end is its last evidence, so its time stops counting as `gpudeck runs`'s does.
    let lost_end = || {
        (state == RunState::Lost)
            .then(|| run.last_evidence_ms(summary.as_ref().map(|s| s.ended_ms)))
            .flatten()
    };
    let (xids, _) = crate::runs::recorded::xids::hits_of(
        run,
        summary.as_ref(),
        crate::runs::clock::now_ms(),
        crate::runs::recorded::xids::XidJudge {
            catalog,
            kernel: None,
        },
    );
    RunRow {
        xids,
        id: r.id.clone(),
        name: r.name.clone(),
        state,
        launcher: r.launcher,
        image: r.image.clone(),
        gpus: r.gpus.iter().map(|g| g.index).collect(),
        ranks: r.log_ranks(),
        command: r
            .ranks
            .first()
            .map(|rank| {
                shlex::try_join(rank.argv.iter().map(String::as_str))
                    .unwrap_or_else(|_| rank.argv.join(" "))
            })
            .unwrap_or_default(),
        created_ms: r.created_ms,
        started_ms: r.started_ms,
        ended_ms: r.ended_ms.or_else(lost_end),
        exit_code: r.exit_code,
        first_failed_rank: r.first_failed_rank,
        error: r.error.clone(),
        dir: run.dir.clone(),
        summary,
        job: r.remote_job(),
        engine_away: r
            .container
            .as_ref()
            .and_then(|c| c.engine_away.clone())
            .filter(|_| run.state() == RunState::Running),
        owner: RunOwner {
            uid: std::fs::metadata(&run.dir).ok().map(|m| m.uid()),
            process_group: r.process_group.map(|g| g.pid),
            session: r.supervisor.map(|s| s.pid),
            created_ms: r.created_ms,
            ended_ms: r.ended_ms,
        },
    }
}

#[cfg(test)]
mod tests {
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
    fn services_get_no_row_among_the_runs() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        ended_run(&store, "run-00", 1);
        let mut notebook = ended_run(&store, "notebook-01", 1);
        notebook.record.service = Some(crate::runs::spec::ServiceSpec {
            kind: crate::runs::spec::ServiceKind::Notebook,
            ports: Vec::new(),
            idle_stop_secs: None,
        });
        notebook.write_record(&notebook.record).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let mut watcher = Watcher::new(store.clone(), tx);
        assert!(watcher.tick());
        assert_eq!(listings(&mut rx), vec![vec!["run-00".to_string()]]);
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
    fn a_store_of_ended_runs_is_idle_and_a_live_run_or_a_live_focus_is_not() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let (tx, _rx) = tokio::sync::mpsc::channel(64);
        let mut watcher = Watcher::new(store.clone(), tx);
        assert!(watcher.look(false));
        assert!(
            watcher.is_idle(),
            "no store yet: nothing can change by itself"
        );
        ended_run(&store, "done", 5);
        assert!(watcher.look(false));
        assert!(watcher.is_idle(), "an ended run does not change by itself");
        assert!(watcher.apply(RunsCommand::Focus(Some("done".into()))));
        assert!(watcher.is_idle(), "nor does its detail");
        std::fs::create_dir(store.root().join("half")).unwrap();
        assert!(watcher.look(false));
        assert!(
            !watcher.is_idle(),
            "a run directory without its record yet is being made"
        );
        std::fs::remove_dir(store.root().join("half")).unwrap();
        let run = ended_run(&store, "live", 0);
        let mut record = run.record.clone();
        record.state = RunState::Running;
        record.ended_ms = None;
        record.exit_code = None;
        record.supervisor = crate::runs::ProcessRef::current();
        run.write_record(&record).unwrap();
        assert!(watcher.look(false));
        assert!(!watcher.is_idle(), "a live run is looked at on the clock");
        // Ended long enough ago to settle (a run just ended is still looked at for a minute).
        record.state = RunState::Stopped;
        record.ended_ms = Some(clock::now_ms() - crate::runs::watch::index::SETTLE_MS);
        run.write_record(&record).unwrap();
        for _ in 0..5 {
            assert!(watcher.look(false));
        }
        assert!(watcher.is_idle(), "the run has ended and settled");
    }

    #[test]
    fn xids_that_hit_a_run_are_told_from_the_catalog_given_user_entries_included() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let run = ended_run(&store, "hit", 5);
        let mut record = run.record.clone();
        record.state = RunState::Failed;
        record.exit_code = Some(1);
        record.gpus = vec![crate::runs::record::RunGpu {
            index: 0,
            uuid: "GPU-0".into(),
            name: "x".into(),
        }];
        run.write_record(&record).unwrap();
        let at = record.ended_ms.unwrap() - 10_000;
        let event = crate::gpu::xid_watch::XidEvent {
            gpu: 0,
            pci_bus_id: "00000000:18:00.0".into(),
            uuid: "GPU-0".into(),
            xid: 79,
            at_unix_ms: at,
        };
        std::fs::write(
            run.dir.join("xids.jsonl"),
            serde_json::to_string(&event).unwrap() + "\n",
        )
        .unwrap();
        let user = tempfile::tempdir().unwrap();
        let ours = "source = \"our lab\"\ndate = \"2026-11-25\"\n[[xid]]\nxid = 79\n\
                    name = \"OURS\"\nmeaning = \"our own words for it\"\n\
                    class = \"bus-power\"\nseverity = \"fail\"\naction = \"reboot\"\n\
                    action_text = \"Reboot.\"\ncatalog_action = \"RESTART_BM\"\n\
                    catalog_investigation = \"CONTACT_SUPPORT\"\n";
        std::fs::write(user.path().join("mine.toml"), ours).unwrap();
        let (catalog, warnings) = XidCatalog::load(Some(user.path()));
        assert!(warnings.is_empty(), "{warnings:?}");
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let mut watcher = Watcher::new(store.clone(), tx).with_xid_catalog(catalog);
        assert!(watcher.look(false));
        let Ok(RunsUpdate::Listed { runs, .. }) = rx.try_recv() else {
            panic!("a first listing");
        };
        let hit = runs[0].xids.first().expect("the Xid that hit the run");
        assert_eq!(hit.xid, 79);
        assert_eq!(hit.meaning, "our own words for it");
    }

    #[test]
    fn an_idle_collector_wakes_for_a_run_made_in_its_store() {
        let home = tempfile::tempdir().unwrap();
        // A first start: not even the data directory is made yet.
        let store = RunStore::new(&home.path().join("share").join("gpudeck"));
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let handle = spawn(store.clone(), tx, XidCatalog::builtin());
        let first = rx.blocking_recv().expect("a first listing");
        assert!(matches!(first, RunsUpdate::Listed { ref runs, .. } if runs.is_empty()));
        // The collector is idle now (no store yet) and sleeps for far longer than this test
        // waits: only the watch on the nearest directory that exists, then on the store, wakes it.
        std::thread::sleep(Duration::from_millis(700));
        ended_run(&store, "first", 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen: Vec<String> = Vec::new();
        while Instant::now() < deadline && seen.is_empty() {
            match rx.try_recv() {
                Ok(RunsUpdate::Listed { runs, .. })
                | Ok(RunsUpdate::Changed { rows: runs, .. }) => {
                    seen = runs.into_iter().map(|r| r.id).collect();
                }
                Ok(_) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        assert_eq!(
            seen,
            ["first"],
            "the new run is listed within 5 s, not at the idle clock"
        );
        // And a second one, now that the store directory itself is watched.
        std::thread::sleep(Duration::from_millis(700));
        ended_run(&store, "second", 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut listed = false;
        while Instant::now() < deadline && !listed {
            match rx.try_recv() {
                Ok(RunsUpdate::Listed { runs, .. })
                | Ok(RunsUpdate::Changed { rows: runs, .. }) => {
                    listed = runs.iter().any(|r| r.id == "second");
                }
                Ok(_) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        assert!(listed, "the second run is listed within 5 s");
        drop(handle);
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
        let header = crate::runs::recorded::samples::CSV_HEADER;
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
}
