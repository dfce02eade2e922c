//! Which processes on a run's GPUs are the run's own leftovers, and so may be offered for
//! killing: never another user's job that shares the GPU.

use crate::host::ProcessIdentity;

/// Boot time is given in whole seconds, so a process's start is known to within one.
const CLOCK_SLACK_MS: u64 = 1000;

/// What a run's processes are recognised by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOwner {
    /// The user who started it (the owner of its run directory).
    pub uid: Option<u32>,
    /// The ranks' process group (rank 0's pid).
    pub process_group: Option<u32>,
    /// The supervisor's session (it calls setsid, so its pid).
    pub session: Option<u32>,
    /// The run's lifetime in Unix ms: created, and ended when it has.
    pub created_ms: u64,
    pub ended_ms: Option<u64>,
}

impl RunOwner {
    /// Started within the run's lifetime, and in its process group or session or owned by its
    /// user. A process whose start or owner cannot be read is not the run's.
    pub fn owns(&self, process: Option<&ProcessIdentity>) -> bool {
        let Some(p) = process else {
            return false;
        };
        let Some(started) = p.started_unix_ms else {
            return false;
        };
        let after_start = started + CLOCK_SLACK_MS >= self.created_ms;
        let before_end = self
            .ended_ms
            .is_none_or(|end| started <= end + CLOCK_SLACK_MS);
        if !(after_start && before_end) {
            return false;
        }
        // A group or session id outlives its run's processes and may be reused: only the
        // lifetime above makes it the run's.
        let in_group = self.process_group.is_some_and(|g| g == p.pgid);
        let in_session = self.session.is_some_and(|s| s == p.session);
        let same_user = matches!((self.uid, p.uid), (Some(a), Some(b)) if a == b);
        let other_user = matches!((self.uid, p.uid), (Some(a), Some(b)) if a != b);
        !other_user && (in_group || in_session || same_user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_767_225_600_000;

    fn run() -> RunOwner {
        RunOwner {
            uid: Some(1000),
            process_group: Some(4000),
            session: Some(3990),
            created_ms: T0,
            ended_ms: Some(T0 + 60_000),
        }
    }

    fn process(uid: u32, pgid: u32, session: u32, started: u64) -> ProcessIdentity {
        ProcessIdentity {
            start_ticks: 1,
            started_unix_ms: Some(started),
            uid: Some(uid),
            pgid,
            session,
        }
    }

    #[test]
    fn the_runs_group_session_and_user_within_its_lifetime_are_its_own() {
        let run = run();
        assert!(run.owns(Some(&process(1000, 4000, 3990, T0 + 5_000))));
        assert!(run.owns(Some(&process(1000, 7777, 3990, T0 + 5_000))));
        assert!(run.owns(Some(&process(1000, 7777, 7777, T0 + 5_000))));
        // Within the second that boot time is rounded to.
        assert!(run.owns(Some(&process(1000, 4000, 3990, T0 - 900))));
    }

    #[test]
    fn another_users_job_or_one_from_before_or_after_the_run_is_not() {
        let run = run();
        // alice's job on the same GPU, started before the run.
        assert!(!run.owns(Some(&process(1001, 9000, 9000, T0 - 600_000))));
        // alice's job started during the run, in a group and session of her own.
        assert!(!run.owns(Some(&process(1001, 9000, 9000, T0 + 5_000))));
        // The run's own user, but a job from before it or after it.
        assert!(!run.owns(Some(&process(1000, 9000, 9000, T0 - 600_000))));
        assert!(!run.owns(Some(&process(1000, 9000, 9000, T0 + 120_000))));
        // The group id reused later by someone else.
        assert!(!run.owns(Some(&process(1001, 4000, 9000, T0 + 120_000))));
        // In the run's group, but someone else's (a setuid helper): not offered.
        assert!(!run.owns(Some(&process(1001, 4000, 3990, T0 + 5_000))));
        // Unknown start or no identity at all.
        let mut unknown = process(1000, 4000, 3990, T0);
        unknown.started_unix_ms = None;
        assert!(!run.owns(Some(&unknown)));
        assert!(!run.owns(None));
    }
}
