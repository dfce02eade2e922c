use super::*;

#[test]
fn parsable_job_id_with_or_without_cluster() {
    assert_eq!(submitted_job_id(true, "42\n", ""), Ok("42".into()));
    assert_eq!(
        submitted_job_id(true, "42;gpu-cluster\n", ""),
        Ok("42".into())
    );
    assert!(matches!(
        submitted_job_id(true, "Submitted batch job 42\n", ""),
        Err(SubmitError::NoJobId { .. })
    ));
}

#[test]
fn refusals_are_told_apart_and_keep_sbatch_words() {
    let partition =
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n";
    let account = "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified";
    let down = "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)";
    let config = "sbatch: error: Could not establish a configuration source";
    let other =
        "sbatch: error: Batch job submission failed: Requested node configuration is not available";
    assert!(
        matches!(submitted_job_id(false, "", partition), Err(SubmitError::UnknownPartition { stderr }) if stderr.contains("Invalid partition name"))
    );
    assert!(matches!(
        classify_refusal(account),
        SubmitError::UnknownAccount { .. }
    ));
    assert!(matches!(
        classify_refusal(down),
        SubmitError::Unreachable { .. }
    ));
    assert!(matches!(
        classify_refusal(config),
        SubmitError::Unreachable { .. }
    ));
    let rejected = classify_refusal(other);
    assert!(rejected
        .to_string()
        .contains("Requested node configuration is not available"));
    assert!(matches!(rejected, SubmitError::Rejected { .. }));
}

#[test]
fn not_installed_says_to_install_or_dry_run() {
    let fix = SubmitError::NotInstalled.fix();
    assert!(fix.contains("Install Slurm's client tools"));
    assert!(fix.contains("--dry-run"));
}

#[test]
fn squeue_pending_carries_its_reason() {
    assert_eq!(
        parse_squeue("PENDING|Resources\n"),
        Some(JobView::Queued {
            state: RunState::Starting,
            reason: Some("Resources".into())
        })
    );
    assert_eq!(
        parse_squeue("RUNNING|None\n"),
        Some(JobView::Queued {
            state: RunState::Running,
            reason: None
        })
    );
    assert_eq!(parse_squeue(""), None);
    assert_eq!(parse_squeue("\n  \n"), None);
}

#[test]
fn sacct_end_states_map_to_run_states() {
    let end = |text| parse_sacct(text).expect("ended");
    let failed = end("FAILED|3:0|00:00:01\nFAILED|3:0|00:00:01\n");
    assert_eq!(
        (failed.state, failed.exit_code),
        (RunState::Failed, Some(3))
    );
    let ok = end("COMPLETED|0:0|00:00:02\n");
    assert_eq!((ok.state, ok.exit_code), (RunState::Succeeded, Some(0)));
    let cancelled = end("CANCELLED by 0|0:15|00:00:05\n");
    assert_eq!(cancelled.state, RunState::Stopped);
    assert_eq!(cancelled.exit_code, Some(143));
    let timeout = end("TIMEOUT|0:0|00:01:00\n");
    assert_eq!(timeout.state, RunState::Failed);
    assert_eq!(timeout.slurm_state, "TIMEOUT");
    assert_eq!(end("CANCELLED+|0:0|00:00:01").state, RunState::Stopped);
}

#[test]
fn sacct_says_nothing_for_live_or_unknown_jobs() {
    assert_eq!(parse_sacct("RUNNING|0:0|00:00:03\n"), None);
    assert_eq!(parse_sacct("PENDING|0:0|00:00:00\n"), None);
    assert_eq!(parse_sacct(""), None);
    assert_eq!(parse_sacct("Slurm accounting storage is disabled\n"), None);
}

#[test]
fn scontrol_state_reason_and_exit() {
    let text = "JobId=7 JobName=gpudeck-x\n   UserId=root(0) GroupId=root(0)\n   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0\n";
    assert_eq!(
        parse_scontrol(text),
        Some(JobView::Ended(JobEnd {
            state: RunState::Failed,
            exit_code: Some(3),
            slurm_state: "FAILED".into()
        }))
    );
    let pending = "JobId=8 JobState=PENDING Reason=Resources Dependency=(null) ExitCode=0:0";
    assert_eq!(
        parse_scontrol(pending),
        Some(JobView::Queued {
            state: RunState::Starting,
            reason: Some("Resources".into())
        })
    );
    let cancelled = parse_scontrol("JobState=CANCELLED Reason=None ExitCode=0:15");
    assert!(matches!(
        cancelled,
        Some(JobView::Ended(JobEnd {
            state: RunState::Stopped,
            ..
        }))
    ));
    assert_eq!(
        parse_scontrol("slurm_load_jobs error: Invalid job id specified"),
        None
    );
}

#[test]
fn exit_codes_fold_signals() {
    assert_eq!(exit_code_of("3:0"), Some(3));
    assert_eq!(exit_code_of("0:9"), Some(137));
    assert_eq!(exit_code_of("junk"), None);
}
