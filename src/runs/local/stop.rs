//! Stopping a run: SIGINT to its process group and to every process that carries its id (those
//! that left the group, as torchrun's workers do), SIGTERM after a grace period, then SIGKILL (for a
//! container run SIGINT, then `docker stop`); the supervisor records `stopped` (or `gpudeck stop`
//! does, when the supervisor is gone).

use std::time::Duration;

use crate::docker::DockerError;
use crate::runs::clock::{self, wait_for};
use crate::runs::error::RunError;
use crate::runs::launch::container::lost::{settle_stopped, stop_containers};
use crate::runs::launch::procs::{
    group_exists, run_processes, signal_each, signal_group, ProcStat, ProcessRef,
};
use crate::runs::record::RunState;
use crate::runs::store::{Run, StopOutcome};

/// How long each of SIGINT and SIGTERM gets before the next, stronger signal.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// How long SIGKILL gets before gpudeck gives up (a process in uninterruptible sleep on a hung
/// GPU or file system can outlive it).
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long the supervisor gets to record the end once the ranks are gone.
const RECORD_WAIT: Duration = Duration::from_secs(5);

/// Stops a local run that has not finished (see `backend::stop_run`) and waits until its
/// processes are gone and the end is recorded. Blocks for up to twice `grace` plus a few seconds.
pub(crate) fn stop_local(run: &Run, grace: Duration) -> Result<StopOutcome, RunError> {
    run.request_stop()?;
    let signal = match (&run.record.container, run.record.process_group) {
        (Some(_), _) => match stop_containers(run, grace) {
            Err(RunError::Docker(DockerError::Unreachable { host, .. })) => {
                return tell_the_supervisor(run, host)
            }
            other => other?,
        },
        // The group while it is the run's, and whatever of the run left it.
        (None, group) => {
            let targets = Targets {
                run_id: run.id().to_string(),
                group: group.filter(group_is_ours).map(|g| g.pid),
                except: run.record.supervisor.map(|s| s.pid).into_iter().collect(),
            };
            escalate(&targets, grace).map_err(|why| RunError::StopFailed {
                id: run.id().to_string(),
                why,
            })?
        }
    };
    // The supervisor records the end; when it is gone (lost), nobody will, so no wait.
    let recorded = wait_for(RECORD_WAIT, || {
        run.reload()
            .is_ok_and(|r| r.record.state.is_finished() || r.state() == RunState::Lost)
    });
    if !recorded || run.reload()?.state() == RunState::Lost {
        // A container run's end can still be read from its containers.
        let settled = run.record.container.is_some() && settle_stopped(run)?;
        if !settled {
            // The ranks are gone whatever happens now: a store that cannot be written (a full
            // disk) does not make the stop a failure, it leaves the end to be recorded later.
            if let Err(e) = record_stopped_ourselves(run) {
                let supervisor_alive = run.reload().is_ok_and(|r| r.state() != RunState::Lost);
                return Ok(StopOutcome::EndNotRecorded {
                    signal,
                    why: e.to_string(),
                    supervisor_alive,
                });
            }
        }
    }
    Ok(StopOutcome::Stopped {
        signal,
        run: Box::new(run.reload()?),
    })
}

/// The processes a stop is for: the run's process group, and every process that carries the
/// run's id in its environment (torchrun's workers, which leave the group), less `except` (the
/// supervisor, which outlives its ranks to record their end).
#[derive(Debug, Clone)]
pub(crate) struct Targets {
    pub run_id: String,
    pub group: Option<u32>,
    pub except: Vec<u32>,
}

impl Targets {
    pub(crate) fn live(&self) -> Vec<u32> {
        run_processes(&self.run_id, self.group, &self.except)
    }
}

/// SIGINT (what Ctrl-C sends, which training loops catch to save a checkpoint), SIGTERM, then
/// SIGKILL, each to the group and to every process of the run, until none is left or its wait
/// passes; the last signal sent ("none" when nothing was left to signal).
pub(crate) fn escalate(targets: &Targets, grace: Duration) -> Result<&'static str, String> {
    let steps = [
        (libc::SIGINT, "SIGINT", grace),
        (libc::SIGTERM, "SIGTERM", grace),
        (libc::SIGKILL, "SIGKILL", KILL_WAIT),
    ];
    let mut last = "none";
    for (signal, name, wait) in steps {
        let pids = targets.live();
        if pids.is_empty() {
            return Ok(last);
        }
        if let Some(group) = targets.group {
            signal_group(group, signal);
        }
        signal_each(&pids, signal);
        last = name;
        if wait_for(wait, || targets.live().is_empty()) {
            return Ok(last);
        }
    }
    let left: Vec<String> = targets.live().iter().map(u32::to_string).collect();
    Err(format!(
        "{} of the run outlived SIGKILL by {}s (stuck in the kernel?): pid {}",
        crate::units::plural(left.len(), "process"),
        KILL_WAIT.as_secs(),
        left.join(", ")
    ))
}

/// Whether the recorded group is still the run's: its leader is the same process, or the leader
/// has exited but the group lives on (Linux reuses no pid while a group carries it).
fn group_is_ours(group: &ProcessRef) -> bool {
    match ProcStat::read(group.pid) {
        Some(stat) => stat.start_ticks == group.start_ticks,
        None => group_exists(group.pid),
    }
}

/// The engine of a container run is away: its supervisor, which waits for the engine, is told to
/// stop the containers (SIGTERM) once it is back. Without a supervisor there is nobody to tell.
#[allow(unsafe_code)]
fn tell_the_supervisor(run: &Run, host: String) -> Result<StopOutcome, RunError> {
    let unreachable = || {
        RunError::Docker(DockerError::Unreachable {
            host: host.clone(),
            detail: "its containers cannot be stopped while it is away".into(),
        })
    };
    let Some(supervisor) = run.record.supervisor.filter(ProcessRef::is_alive) else {
        return Err(unreachable());
    };
    let pid = i32::try_from(supervisor.pid).map_err(|_| unreachable())?;
    // SAFETY: kill(2) on the run's own live supervisor; no memory is touched.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(unreachable());
    }
    Err(RunError::StopDeferred {
        id: run.id().to_string(),
        host,
    })
}

/// The supervisor is gone (killed, crashed): nobody else will write the end.
fn record_stopped_ourselves(run: &Run) -> Result<(), RunError> {
    let mut record = run.reload()?.record;
    if record.state.is_finished() {
        return Ok(());
    }
    record.state = RunState::Stopped;
    record.ended_ms = Some(clock::now_ms());
    record.error = Some(
        "the supervisor was gone; gpudeck stop recorded the end, the ranks' exit codes are unknown"
            .into(),
    );
    run.write_record(&record)
}
