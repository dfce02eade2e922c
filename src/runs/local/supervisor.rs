//! The supervisor: a detached process (`gpudeck __supervise DIR`) that starts a run's ranks in one
//! process group (a container run's in their containers), records each exit, stops the rest when
//! one fails or when it is told to stop, and writes the run's end to `run.json` whether or not
//! anyone is watching, retrying until it can (a full disk must not turn an ended run into a lost
//! one).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;

use super::stop::{escalate, Targets, DEFAULT_GRACE};
use crate::runs::clock;
use crate::runs::launch::container::engine_link::EngineNotice;
use crate::runs::launch::container::ranks::{start_containers, ContainerRanks};
use crate::runs::launch::procs::{exit_code_of, ProcessRef};
use crate::runs::launch::worker_logs::WorkerLinker;
use crate::runs::record::{EngineAway, RankRecord, RunRecord, RunState};
use crate::runs::recorded::sampler::Sampler;
use crate::runs::store::{log_path, open_log, torchrun_log_path, LogStream, Run};

/// Exit code of a rank that could not be started: 127 when the program is missing, as shells do.
const EXIT_NOT_FOUND: i32 = 127;
/// ... and 126 when it exists but cannot be executed.
const EXIT_CANNOT_EXECUTE: i32 = 126;
/// The first wait before `run.json` is tried again after a failed write of the run's end...
const END_RETRY_FIRST: Duration = Duration::from_millis(100);
/// ... doubling up to this.
const END_RETRY_MAX: Duration = Duration::from_secs(5);
/// How long each of SIGINT and SIGTERM gets when processes of the run outlive its ranks (a
/// torchrun agent killed with SIGKILL leaves its workers training).
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);

/// Runs the supervisor for the run in `dir` to the run's end. Its stdout and stderr are the
/// run's `supervisor.log`.
pub fn supervise(dir: &Path) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let result = match runtime {
        Ok(rt) => rt.block_on(supervise_run(dir)),
        Err(e) => Err(format!("could not start the async runtime: {e}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            errln!("gpudeck supervisor: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the supervisor tracks while the ranks run.
struct Watch {
    record: RunRecord,
    running: usize,
    stopping: bool,
    stopper: Option<std::thread::JoinHandle<Result<&'static str, String>>>,
    /// A container run's containers (they are stopped through the engine, not by signals).
    containers: Option<ContainerRanks>,
}

async fn supervise_run(dir: &Path) -> Result<(), String> {
    let run = Run::open(dir).map_err(|e| e.to_string())?;
    if run.record.state != RunState::Starting {
        return Err(format!(
            "{} is {}, not waiting to start",
            run.id(),
            run.record.state
        ));
    }
    // Handlers first: a stop that arrives while the ranks start must not kill the supervisor
    // (and installing them means ranks start with the default action even if gpudeck was
    // started with SIGINT ignored, as `cmd &` in a script does).
    let mut sigterm = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut sighup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    let mut record = run.record.clone();
    record.supervisor = ProcessRef::current();
    let (tx, mut exits) = mpsc::unbounded_channel();
    let (notices_tx, mut notices) = mpsc::unbounded_channel();
    let containers = if record.container.is_some() {
        match start_containers(&run, &mut record, &tx, notices_tx).await {
            Ok(containers) => Some(containers),
            Err(e) => {
                let record = finish_unstarted(record, e);
                write_end(&run, &record, [&mut sigterm, &mut sigint]).await;
                return Ok(());
            }
        }
    } else {
        match spawn_ranks(&run, &mut record) {
            Ok(children) => wait_for_children(children, &tx),
            Err(e) => {
                let record = finish_unstarted(record, e);
                write_end(&run, &record, [&mut sigterm, &mut sigint]).await;
                return Ok(());
            }
        }
        None
    };
    let linker = match (&record.container, record.torchrun_workers) {
        (None, Some(workers)) => Some(WorkerLinker::start(run.dir.clone(), workers)),
        _ => None,
    };
    record.state = RunState::Running;
    record.started_ms = Some(clock::now_ms());
    let mut sampler = Sampler::start(&run.dir, &record);
    // The ranks run now: a record that cannot be written must not orphan them; the end is
    // written (retried) when they are done.
    if let Err(e) = run.write_record(&record) {
        errln!("gpudeck supervisor: the start could not be recorded: {e}");
    }
    errln!(
        "gpudeck supervisor: started {} of {}",
        crate::units::plural(record.ranks.len(), "rank"),
        record.id
    );
    let mut watch = Watch {
        running: record.ranks.len(),
        record,
        stopping: false,
        stopper: None,
        containers,
    };
    if run.stop_requested() {
        watch.begin_stop("a stop was requested while the ranks started");
    }
    while watch.running > 0 {
        tokio::select! {
            Some((rank, code)) = exits.recv() => watch.rank_exited(&run, rank, code),
            Some(notice) = notices.recv() => watch.engine_notice(&run, notice),
            Some(why) = sampler.failure() => {
                watch.record.lost_gpus = sampler.lost_gpus();
                watch.metrics_failed(&run, why);
            }
            _ = sigterm.recv() => watch.begin_stop("the supervisor got SIGTERM"),
            _ = sigint.recv() => watch.begin_stop("the supervisor got SIGINT"),
            // Its own session has no terminal to lose; a stray SIGHUP must not end the run.
            _ = sighup.recv() => {}
        }
    }
    // The ranks are gone, but what they started may not be: the run is over only when
    // every process of it is.
    if watch.containers.is_none() {
        watch.end_leftovers();
    }
    if let Some(linker) = linker {
        linker.finish();
    }
    watch.record.lost_gpus = sampler.lost_gpus();
    let xids = sampler.take_xid_watch();
    if let Some(why) = sampler.finish() {
        watch.metrics_failed(&run, why);
    }
    // The lock is held until the end is written, so nobody settles the run meanwhile.
    let _lock = match watch.containers.take() {
        Some(containers) => Some(containers.finish(&mut watch.record).await),
        None => None,
    };
    // Every exit is in, so the engine answered again if it went away: a "back" notice still
    // queued behind the last exit must not leave the run looking as if it waits for it.
    if let Some(container) = watch.record.container.as_mut() {
        container.engine_away = None;
    }
    let record = watch.finish(&run);
    write_end(&run, &record, [&mut sigterm, &mut sigint]).await;
    // Dropped, not joined (a wait lasts up to xid_watch::WAIT): it records up to the moment
    // the supervisor exits, so an Xid that came with the ranks' exit still lands.
    drop(xids);
    crate::runs::recorded::saved_summary::save_after_end(&run.dir);
    Ok(())
}

/// A blocking wait per rank: it reaps the rank the moment it exits.
fn wait_for_children(children: Vec<Child>, exits: &mpsc::UnboundedSender<(usize, i32)>) {
    for (rank, mut child) in children.into_iter().enumerate() {
        let tx = exits.clone();
        std::thread::spawn(move || {
            let code = child.wait().map_or(255, exit_code_of);
            let _ = tx.send((rank, code));
        });
    }
}

impl Watch {
    fn rank_exited(&mut self, run: &Run, rank: usize, code: i32) {
        self.running -= 1;
        errln!("gpudeck supervisor: rank {rank} exited with {code}");
        if let Some(r) = self.record.ranks.get_mut(rank) {
            r.exit_code = Some(code);
            r.ended_ms = Some(clock::now_ms());
        }
        let stop_asked = self.stopping || run.stop_requested();
        if code != 0 && !stop_asked && self.record.first_failed_rank.is_none() {
            self.record.first_failed_rank = Some(rank);
            if self.running > 0 {
                self.begin_stop(&format!("rank {rank} failed with exit code {code}"));
            }
        }
        if let Err(e) = run.write_record(&self.record) {
            errln!("gpudeck supervisor: {e}");
        }
    }

    /// The engine went away or came back: run.json says so while it is away (the Runs tab shows it).
    fn engine_notice(&mut self, run: &Run, notice: EngineNotice) {
        let Some(container) = self.record.container.as_mut() else {
            return;
        };
        container.engine_away = match notice {
            EngineNotice::Away { since_ms, detail } => Some(EngineAway { since_ms, detail }),
            EngineNotice::Back => None,
        };
        if let Err(e) = run.write_record(&self.record) {
            errln!("gpudeck supervisor: {e}");
        }
    }

    /// The GPU metrics stopped or never started: the run goes on, run.json says why.
    fn metrics_failed(&mut self, run: &Run, why: String) {
        self.record.metrics_error = Some(match self.record.metrics_error.take() {
            Some(earlier) => format!("{earlier}; {why}"),
            None => why,
        });
        if let Err(e) = run.write_record(&self.record) {
            errln!("gpudeck supervisor: {e}");
        }
    }

    /// Starts stopping the group once, on a thread, so exits keep being recorded meanwhile.
    fn begin_stop(&mut self, why: &str) {
        if self.stopping {
            return;
        }
        self.stopping = true;
        errln!("gpudeck supervisor: stopping the ranks: {why}");
        if let Some(containers) = &mut self.containers {
            containers.begin_stop(DEFAULT_GRACE);
        } else if let Some(group) = self.record.process_group {
            let targets = self.targets(group.pid);
            self.stopper = Some(std::thread::spawn(move || {
                escalate(&targets, DEFAULT_GRACE)
            }));
        }
    }

    /// The run's processes: its group, and those that carry its id.
    fn targets(&self, group: u32) -> Targets {
        Targets {
            run_id: self.record.id.clone(),
            group: Some(group),
            except: Vec::new(),
        }
    }

    /// Ends the processes of the run that outlived its ranks (after a stop, the stopper has
    /// already waited for them): the workers of a torchrun agent that was killed, a helper a
    /// rank started in a session of its own. What cannot be ended is said in the record.
    fn end_leftovers(&mut self) {
        if self.stopper.is_some() {
            return;
        }
        let Some(group) = self.record.process_group else {
            return;
        };
        let targets = self.targets(group.pid);
        let left = targets.live();
        if left.is_empty() {
            return;
        }
        let pids: Vec<String> = left.iter().map(u32::to_string).collect();
        errln!(
            "gpudeck supervisor: {} of the run outlived its ranks (pid {}); stopping them",
            crate::units::plural(left.len(), "process"),
            pids.join(", ")
        );
        match escalate(&targets, LEFTOVER_GRACE) {
            Ok(signal) => errln!("gpudeck supervisor: they are gone after {signal}"),
            Err(e) => self.record.error = Some(e),
        }
    }

    /// The end: which state, which exit code, when.
    fn finish(mut self, run: &Run) -> RunRecord {
        if let Some(stopper) = self.stopper.take() {
            match stopper.join() {
                Ok(Ok(signal)) => errln!("gpudeck supervisor: ranks gone after {signal}"),
                Ok(Err(e)) => self.record.error = Some(e),
                Err(_) => self.record.error = Some("the stopping thread panicked".into()),
            }
        }
        let record = &mut self.record;
        let codes: Vec<i32> = record
            .ranks
            .iter()
            .map(|r| r.exit_code.unwrap_or(255))
            .collect();
        let first_nonzero = codes.iter().copied().find(|c| *c != 0);
        let (state, code) = match record.first_failed_rank {
            Some(rank) => (RunState::Failed, codes.get(rank).copied()),
            None if self.stopping || run.stop_requested() => {
                (RunState::Stopped, Some(first_nonzero.unwrap_or(0)))
            }
            None => (RunState::Succeeded, Some(0)),
        };
        record.state = state;
        record.exit_code = code;
        record.ended_ms = Some(clock::now_ms());
        errln!(
            "gpudeck supervisor: {} {state}, exit code {}",
            record.id,
            code.map_or_else(|| "unknown".into(), |c| c.to_string())
        );
        self.record
    }
}

/// Writes the run's end, retrying (the wait doubling to END_RETRY_MAX) until it is written: the
/// supervisor is the only one who knows it, and a run left `running` with no supervisor reads as
/// lost forever. The supervisor stays alive meanwhile, so readers see the run as running. It
/// gives up only when the run's directory itself is gone, or when it is told to (SIGTERM or
/// SIGINT: its ranks are gone, so that can only mean "stop trying").
async fn write_end(run: &Run, record: &RunRecord, [sigterm, sigint]: [&mut Signal; 2]) {
    let mut wait = END_RETRY_FIRST;
    let mut failures = 0u32;
    loop {
        match run.write_record(record) {
            Ok(()) if failures == 0 => return,
            Ok(()) => {
                errln!(
                    "gpudeck supervisor: the end of {} was recorded after {}",
                    record.id,
                    crate::units::plural(failures as usize, "failed attempt")
                );
                return;
            }
            // The run was deleted: nobody can read its end any more, so do not wait forever.
            Err(_) if !run.dir.is_dir() => {
                errln!(
                    "gpudeck supervisor: {} is gone; its end ({}) is not recorded",
                    run.dir.display(),
                    record.state
                );
                return;
            }
            Err(e) => {
                failures += 1;
                // Every attempt while the wait grows, then one line a minute or so.
                if wait < END_RETRY_MAX || failures % 12 == 0 {
                    errln!(
                        "gpudeck supervisor: could not record the end of {}: {e}; retrying \
                         every {}s until it can be written (free space in the run store)",
                        record.id,
                        wait.as_secs_f32()
                    );
                }
                let told = tokio::select! {
                    _ = tokio::time::sleep(wait) => None,
                    _ = sigterm.recv() => Some("SIGTERM"),
                    _ = sigint.recv() => Some("SIGINT"),
                };
                if let Some(signal) = told {
                    errln!(
                        "gpudeck supervisor: gave up recording the end of {} on {signal}: it \
                         was {}, exit code {}",
                        record.id,
                        record.state,
                        record
                            .exit_code
                            .map_or_else(|| "unknown".into(), |c| c.to_string())
                    );
                    return;
                }
                wait = (wait * 2).min(END_RETRY_MAX);
            }
        }
    }
}

/// Starts every rank in one new process group led by rank 0, its output going straight to its
/// log files: the ranks write to the files themselves, so no line waits in gpudeck's memory and
/// none is lost if the supervisor dies (a pipe would also hand the ranks SIGPIPE then).
fn spawn_ranks(run: &Run, record: &mut RunRecord) -> Result<Vec<Child>, (usize, std::io::Error)> {
    if record.torchrun_workers.is_some() {
        // Private like the rest of the run's directory (torchrun would make it 0755); it may
        // already be there.
        let dir = run.dir.join(crate::runs::store::TORCHRUN_LOG_DIR);
        let mut builder = std::fs::DirBuilder::new();
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                errln!("gpudeck supervisor: {}: {e}", dir.display());
            }
            _ => {}
        }
    }
    let mut children: Vec<Child> = Vec::new();
    let mut group: Option<u32> = None;
    for rank in 0..record.ranks.len() {
        let spawned =
            rank_command(run, &record.ranks[rank], record, group).and_then(|mut cmd| cmd.spawn());
        match spawned {
            Ok(child) => {
                let pid = child.id();
                record.ranks[rank].pid = Some(pid);
                if group.is_none() {
                    group = Some(pid);
                    // Rank 0 leads the group; not yet reaped, so its stat is readable even if
                    // it has already exited.
                    record.process_group = ProcessRef::of(pid).or(Some(ProcessRef {
                        pid,
                        start_ticks: 0,
                    }));
                }
                children.push(child);
            }
            Err(e) => {
                if let Some(pgid) = group {
                    let targets = Targets {
                        run_id: record.id.clone(),
                        group: Some(pgid),
                        except: Vec::new(),
                    };
                    let _ = escalate(&targets, std::time::Duration::ZERO);
                }
                for mut child in children {
                    let _ = child.wait();
                }
                return Err((rank, e));
            }
        }
    }
    Ok(children)
}

fn rank_command(
    run: &Run,
    rank: &RankRecord,
    record: &RunRecord,
    group: Option<u32>,
) -> std::io::Result<Command> {
    // torchrun's workers write their own rank logs (see worker_logs.rs); the agent has its own.
    let path = |stream| match record.torchrun_workers {
        Some(_) => torchrun_log_path(&run.dir, stream),
        None => log_path(&run.dir, rank.rank, stream),
    };
    let log = |stream| open_log(&path(stream)).map_err(std::io::Error::other);
    let program = rank
        .argv
        .first()
        .ok_or_else(|| std::io::Error::other("empty argv"))?;
    let mut cmd = Command::new(program);
    cmd.args(&rank.argv[1..])
        .envs(&rank.env)
        .current_dir(&record.workdir)
        .stdin(Stdio::null())
        .stdout(log(LogStream::Stdout)?)
        .stderr(log(LogStream::Stderr)?)
        .process_group(group.map_or(0, |g| g as i32));
    Ok(cmd)
}

/// A rank could not be started: the run failed before it ran, with the shell's code for why.
fn finish_unstarted(mut record: RunRecord, (rank, e): (usize, std::io::Error)) -> RunRecord {
    let code = match e.kind() {
        std::io::ErrorKind::NotFound => EXIT_NOT_FOUND,
        _ => EXIT_CANNOT_EXECUTE,
    };
    let program = record.ranks[rank].argv.first().cloned().unwrap_or_default();
    record.ranks[rank].exit_code = Some(code);
    record.first_failed_rank = Some(rank);
    record.state = RunState::Failed;
    record.exit_code = Some(code);
    record.error = Some(format!("rank {rank} could not be started: {program}: {e}"));
    let now = clock::now_ms();
    record.started_ms = Some(now);
    record.ended_ms = Some(now);
    errln!(
        "gpudeck supervisor: {}",
        record.error.as_deref().unwrap_or_default()
    );
    record
}
