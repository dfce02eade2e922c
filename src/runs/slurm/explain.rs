//! What a job's pending reason or end means for the person who submitted it, and what to do:
//! Slurm's reason codes ("PartitionTimeLimit", "JobLaunchFailure") are terse, and some pending
//! reasons mean the job will never start on its own.

use super::status::JobView;
use crate::runs::record::RunState;

/// Why a pending job waits, in words, with what to do when waiting will not help.
pub fn waiting(job_id: &str, reason: &str) -> String {
    let (what, fix) = pending_reason(reason);
    match fix {
        None => format!("pending in the Slurm queue ({reason}): {what}"),
        Some(fix) => format!(
            "pending in the Slurm queue ({reason}): {what}; it will not start as it is. {fix}, \
             or cancel it with `gpudeck stop RUN` (scancel {job_id})"
        ),
    }
}

/// The job waits on something that frees up by itself (`None`), or on something that will not
/// change unless someone acts (the fix).
fn pending_reason(reason: &str) -> (&'static str, Option<&'static str>) {
    match reason {
        "Resources" => ("waiting for the GPUs, CPUs or nodes it asked for to be free", None),
        "Priority" => ("jobs with a higher priority are ahead of it", None),
        "Dependency" => ("waiting for the jobs it depends on", None),
        "BeginTime" => ("its start time has not come yet", None),
        "ReqNodeNotAvail" | "NodeDown" => (
            "a node it needs is down, drained or reserved",
            Some("Check the nodes with `sinfo -R`; resubmit without them, or wait for an administrator"),
        ),
        "PartitionTimeLimit" => (
            "its time limit is longer than the partition allows",
            Some("Resubmit with a shorter --time (`sinfo -o \"%P %l\"` lists each partition's limit)"),
        ),
        "PartitionNodeLimit" => (
            "it asks for more nodes than the partition has or allows",
            Some("Resubmit with fewer --nodes (`sinfo -s` lists each partition's nodes)"),
        ),
        "PartitionDown" | "PartitionInactive" => (
            "its partition is down",
            Some("Resubmit to another partition (`sinfo -s`), or wait for an administrator"),
        ),
        "JobHeldUser" | "JobHeldAdmin" => (
            "it is held",
            Some("Release it with `scontrol release JOBID` (an administrator's hold needs them)"),
        ),
        "DependencyNeverSatisfied" => (
            "a job it depends on failed, so its dependency can never be met",
            Some("Resubmit it without the dependency"),
        ),
        "BadConstraints" => (
            "no node of the partition can ever meet what it asks for (GPUs, memory, features)",
            Some("Resubmit asking for what `sinfo -o \"%P %D %G %m %f\"` shows the nodes have"),
        ),
        "InvalidAccount" | "InvalidQOS" => (
            "its account or QOS is not valid for this partition",
            Some("Resubmit with an account `sacctmgr show assoc user=$USER` lists"),
        ),
        r if r.starts_with("Assoc") || r.starts_with("QOS") => {
            if r.contains("Max") && r.contains("PerJob") {
                (
                    "it asks for more than your account or QOS allows one job",
                    Some("Resubmit asking for less (`sacctmgr show assoc user=$USER` shows the limits)"),
                )
            } else {
                ("your account's or QOS's running jobs are at their limit", None)
            }
        }
        _ => ("Slurm's reason for holding it", None),
    }
}

/// How an ended job went, in words: `None` for a job that completed.
pub fn ended(job_id: &str, view: &JobView) -> Option<String> {
    let word = view.slurm_state.split_whitespace().next().unwrap_or("");
    let word = word.trim_end_matches('+');
    let nodes = view.nodes.as_deref().unwrap_or("its node");
    if view.reason.as_deref() == Some("JobLaunchFailure") {
        return Some(format!(
            "the job failed before starting: Slurm could not launch its batch script on {nodes} \
             (JobLaunchFailure). Its work dir or the run directory that holds its log files is \
             missing or not writable there: the work dir and gpudeck's run store must be on a \
             file system every node shares (see slurmd's log on {nodes} for job {job_id})"
        ));
    }
    let exit = view.exit_code();
    let text = match (word, view.state) {
        (_, RunState::Succeeded) => return None,
        ("TIMEOUT", _) => {
            "it ran out of its time limit (TIMEOUT); resubmit with a longer --time".into()
        }
        ("OUT_OF_MEMORY", _) => {
            "it ran out of memory (OUT_OF_MEMORY); ask for more with an extra `--mem=...` line"
                .into()
        }
        ("NODE_FAIL", _) => format!("{nodes} failed while it ran (NODE_FAIL)"),
        ("BOOT_FAIL", _) => format!("{nodes} could not be booted for it (BOOT_FAIL)"),
        ("PREEMPTED", _) => "a job with a higher priority preempted it (PREEMPTED)".into(),
        ("DEADLINE", _) => "it could not finish before its deadline (DEADLINE)".into(),
        ("CANCELLED", _) => format!("it was cancelled ({})", view.slurm_state),
        (_, _) => match exit {
            Some(code) => format!("its batch script exited with {code} ({})", view.slurm_state),
            None => format!("Slurm ended it as {}", view.slurm_state),
        },
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_that_pass_carry_no_fix_and_waits_that_do_not_say_so() {
        let busy = waiting("7", "Resources");
        assert!(
            busy.contains("(Resources)") && !busy.contains("will not start"),
            "{busy}"
        );
        let never = waiting("7", "PartitionTimeLimit");
        assert!(never.contains("will not start"), "{never}");
        assert!(
            never.contains("shorter --time") && never.contains("scancel 7"),
            "{never}"
        );
        assert!(waiting("7", "AssocMaxGRESPerJob").contains("will not start"));
        assert!(!waiting("7", "AssocGrpGRES").contains("will not start"));
        assert!(waiting("7", "SomethingNew").contains("(SomethingNew)"));
    }

    #[test]
    fn ends_are_told_with_the_fix() {
        let view = |state: RunState, word: &str, exit: &str| JobView {
            state,
            slurm_state: word.into(),
            exit: Some(exit.into()),
            nodes: Some("gpu01".into()),
            ..JobView::default()
        };
        assert_eq!(
            ended("1", &view(RunState::Succeeded, "COMPLETED", "0:0")),
            None
        );
        let failed = ended("1", &view(RunState::Failed, "FAILED", "3:0")).unwrap();
        assert!(failed.contains("exited with 3"), "{failed}");
        let timeout = ended("1", &view(RunState::Failed, "TIMEOUT", "0:0")).unwrap();
        assert!(timeout.contains("longer --time"), "{timeout}");
        let launch = JobView {
            reason: Some("JobLaunchFailure".into()),
            ..view(RunState::Failed, "FAILED", "0:53")
        };
        let launch = ended("9", &launch).unwrap();
        assert!(
            launch.contains("failed before starting") && launch.contains("gpu01"),
            "{launch}"
        );
        assert!(launch.contains("share"), "{launch}");
    }
}
