//! The real facts a GPU claim's liveness rests on: a process by pid and start time, a run by its
//! record in the run store, a container by its processes in `/proc` (no engine needed, so a
//! reader never waits on Docker).

use std::path::Path;

use crate::claims::Liveness;
use crate::host::ProcessRef;
use crate::runs::record::RunState;
use crate::runs::store::Run;

/// Whether a run in this state still holds its GPUs: while starting or running. A finished run
/// has let them go. A lost one (its supervisor died without recording an end) holds them while
/// a process of it lives, which only the real machine can tell ([`SystemLiveness`]); on its
/// state alone it has let them go.
pub fn run_holds_gpus(state: RunState) -> bool {
    !state.is_finished() && state != RunState::Lost
}

/// The real facts: `/proc` and the run store.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLiveness;

impl Liveness for SystemLiveness {
    fn process_alive(&self, process: &ProcessRef) -> bool {
        process.is_alive()
    }

    fn run_holds_gpus(&self, dir: &Path) -> Option<bool> {
        let run = Run::open(dir).ok()?;
        Some(match run.state() {
            // Its supervisor died without recording an end (`kill -9`), which does not end
            // the ranks: the GPUs are held while any of its processes or containers lives.
            RunState::Lost => self.lost_run_still_runs(&run),
            state => run_holds_gpus(state),
        })
    }

    fn container_running(&self, id: &str) -> bool {
        container_running(id)
    }
}

impl SystemLiveness {
    /// Some process of a lost run still lives: one in its ranks' process group or its
    /// supervisor's session, started while the run was, of its user (as a run's leftovers are
    /// recognised), or one that carries its `GPUDECK_RUN_ID` (torchrun's workers, in sessions
    /// of their own); or one of its containers still runs.
    pub fn lost_run_still_runs(&self, run: &Run) -> bool {
        use std::os::unix::fs::MetadataExt;
        let r = &run.record;
        let owner = crate::runs::record::RunOwner {
            uid: std::fs::metadata(&run.dir).ok().map(|m| m.uid()),
            process_group: r.process_group.map(|g| g.pid),
            session: r.supervisor.map(|s| s.pid),
            created_ms: r.created_ms,
            ended_ms: None,
        };
        let containers = r
            .container
            .iter()
            .flat_map(|c| c.containers.iter().filter_map(|c| c.id.clone()));
        let procs = crate::host::ProcFs::new();
        let in_group_or_session = |pid: u32| {
            let Some(stat) = crate::host::ProcStat::read(pid) else {
                return false;
            };
            let of_run =
                owner.process_group == Some(stat.pgid) || owner.session == Some(stat.session);
            of_run
                && stat.is_alive()
                && owner.owns(
                    crate::host::ProcessTable::describe(&procs, pid)
                        .and_then(|d| d.identity)
                        .as_ref(),
                )
        };
        let carries_id = || {
            r.container.is_none()
                && !crate::runs::launch::procs::run_processes(&r.id, None, &[]).is_empty()
        };
        crate::host::pids().any(in_group_or_session)
            || carries_id()
            || containers.into_iter().any(|id| container_running(&id))
    }
}

/// Some process on this host runs in the container with this full id.
fn container_running(id: &str) -> bool {
    crate::host::pids()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok())
        .filter_map(|text| crate::host::container_from_cgroup(&text))
        .any(|c| c.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::record::RunRecord;
    use crate::runs::spec::Launcher;
    use crate::runs::store::RunStore;
    use std::os::unix::process::CommandExt;

    /// A run whose supervisor is dead (so it reads `lost`) and whose ranks' process group is
    /// that of `rank`.
    fn lost_run(store: &RunStore, rank: u32) -> Run {
        let now = crate::runs::clock::now_ms();
        let (id, dir) = store
            .create("train", "command = [\"true\"]\n", now)
            .unwrap();
        let mut record = RunRecord::starting(
            id,
            "train".into(),
            Launcher::Single,
            "/tmp".into(),
            "box".into(),
            now - 5_000,
        );
        record.state = RunState::Running;
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        record.supervisor = Some(ProcessRef {
            pid: dead_pid,
            start_ticks: 1,
        });
        record.process_group = ProcessRef::of(rank);
        let run = Run { dir, record };
        run.write_record(&run.record).unwrap();
        run
    }

    #[test]
    fn a_lost_run_holds_its_gpus_while_a_process_of_its_group_lives_and_not_after() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let mut rank = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let run = lost_run(&store, rank.id());
        assert_eq!(run.state(), RunState::Lost);
        assert_eq!(SystemLiveness.run_holds_gpus(&run.dir), Some(true));
        rank.kill().unwrap();
        rank.wait().unwrap();
        assert_eq!(SystemLiveness.run_holds_gpus(&run.dir), Some(false));
    }

    #[test]
    fn a_lost_run_holds_its_gpus_while_a_worker_that_left_its_group_lives() {
        let data = tempfile::tempdir().unwrap();
        let store = RunStore::new(data.path());
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let run = lost_run(&store, gone.id());
        gone.wait().unwrap();
        assert_eq!(SystemLiveness.run_holds_gpus(&run.dir), Some(false));
        // A torchrun worker: its own session, the run's id inherited.
        let mut worker = std::process::Command::new("setsid")
            .args(["sleep", "30"])
            .env("GPUDECK_RUN_ID", run.id())
            .spawn()
            .unwrap();
        let held = crate::runs::clock::wait_for(std::time::Duration::from_secs(5), || {
            SystemLiveness.run_holds_gpus(&run.dir) == Some(true)
        });
        worker.kill().unwrap();
        worker.wait().unwrap();
        assert!(held, "a live worker of the lost run did not hold its GPUs");
        assert_eq!(SystemLiveness.run_holds_gpus(&run.dir), Some(false));
    }
}
