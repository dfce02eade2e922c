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
    let too_big =
        "sbatch: error: Batch job submission failed: Requested node configuration is not available";
    let other = "sbatch: error: Batch job submission failed: Invalid qos specification";
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
    let node = classify_refusal(too_big);
    assert!(node
        .to_string()
        .contains("Requested node configuration is not available"));
    assert!(node.to_string().contains("more GPUs"));
    assert!(matches!(node, SubmitError::NodeConfig { .. }));
    let offered = SubmitError::NodeConfig {
        stderr: too_big.into(),
        offered: Some("debug*: 1 node, gpu:2".into()),
    };
    assert!(
        offered.fix().contains("debug*: 1 node, gpu:2"),
        "{}",
        offered.fix()
    );
    let gres = classify_refusal("sbatch: error: Invalid generic resource (gres) specification");
    assert!(matches!(gres, SubmitError::NoGpuGres { .. }));
    assert!(gres.fix().contains("--gpus none"));
    let rejected = classify_refusal(other);
    assert!(rejected.to_string().contains("Invalid qos"));
    assert!(matches!(rejected, SubmitError::Rejected { .. }));
}

#[test]
fn not_installed_says_to_install_or_dry_run() {
    let fix = SubmitError::NotInstalled.fix();
    assert!(fix.contains("Install Slurm's client tools"));
    assert!(fix.contains("--dry-run"));
}

#[test]
fn squeue_pending_carries_its_reason_and_running_its_nodes_and_start() {
    let pending = parse_squeue("PENDING|Resources||0:00|1795472300\n").unwrap();
    assert_eq!(pending.state, RunState::Starting);
    assert_eq!(pending.reason.as_deref(), Some("Resources"));
    // A pending job's %S is a guess of when it will start, not a start.
    assert_eq!((pending.nodes, pending.started_s), (None, None));
    let running = parse_squeue("RUNNING|None|gpu[01-02]|1:05|1795472198\n").unwrap();
    assert_eq!(running.state, RunState::Running);
    assert_eq!(running.reason, None);
    assert_eq!(running.nodes.as_deref(), Some("gpu[01-02]"));
    assert_eq!(running.elapsed.as_deref(), Some("1:05"));
    assert_eq!(running.started_s, Some(1_795_472_198));
    assert_eq!(parse_squeue(""), None);
    assert_eq!(parse_squeue("\n  \n"), None);
}

#[test]
fn sacct_end_states_map_to_run_states() {
    let end = |text| parse_sacct(text).expect("ended");
    let failed = end("FAILED|3:0|00:00:01|vm|1795472198|1795472199|NonZeroExitCode\n");
    assert_eq!(
        (failed.state, failed.exit_code()),
        (RunState::Failed, Some(3))
    );
    assert_eq!(failed.nodes.as_deref(), Some("vm"));
    assert_eq!(
        (failed.started_s, failed.ended_s),
        (Some(1_795_472_198), Some(1_795_472_199))
    );
    assert_eq!(failed.elapsed.as_deref(), Some("00:00:01"));
    let ok = end("COMPLETED|0:0|00:00:02|vm|1|3|\n");
    assert_eq!((ok.state, ok.exit_code()), (RunState::Succeeded, Some(0)));
    let cancelled = end("CANCELLED by 0|0:15|00:00:05|vm|1|6|\n");
    assert_eq!(cancelled.state, RunState::Stopped);
    assert_eq!(cancelled.exit_code(), Some(143));
    assert_eq!(cancelled.slurm_state, "CANCELLED by 0");
    let timeout = end("TIMEOUT|0:0|00:01:00|vm|1|61|");
    assert_eq!(timeout.state, RunState::Failed);
    assert_eq!(timeout.slurm_state, "TIMEOUT");
    assert_eq!(end("CANCELLED+|0:0|00:00:01").state, RunState::Stopped);
    // Cancelled while pending: it never ran anywhere.
    let never = end("CANCELLED by 0|0:0|00:00:00|None assigned|Unknown|1795472199|");
    assert_eq!((never.nodes, never.started_s), (None, None));
}

#[test]
fn sacct_says_nothing_for_live_or_unknown_jobs() {
    assert_eq!(parse_sacct("RUNNING|0:0|00:00:03|vm|1|Unknown|\n"), None);
    assert_eq!(parse_sacct("PENDING|0:0|00:00:00\n"), None);
    assert_eq!(parse_sacct(""), None);
    assert_eq!(parse_sacct("Slurm accounting storage is disabled\n"), None);
}

#[test]
fn scontrol_state_reason_exit_nodes_and_times() {
    // As `SLURM_TIME_FORMAT=%s scontrol show job 5` printed it on the test cluster.
    let text = "JobId=5 JobName=wrap\n   UserId=root(0) GroupId=root(0)\n   JobState=FAILED Reason=JobLaunchFailure Dependency=(null)\n   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:53\n   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A\n   StartTime=1795472198 EndTime=1795472198 Deadline=N/A\n   ReqNodeList=(null) ExcNodeList=(null)\n   NodeList=vm\n";
    let failed = parse_scontrol(text).unwrap();
    assert_eq!(failed.state, RunState::Failed);
    assert_eq!(failed.reason.as_deref(), Some("JobLaunchFailure"));
    assert_eq!(failed.exit.as_deref(), Some("0:53"));
    assert_eq!(failed.nodes.as_deref(), Some("vm"));
    assert_eq!(failed.started_s, Some(1_795_472_198));
    assert_eq!(failed.ended_s, Some(1_795_472_198));
    let pending = parse_scontrol(
        "JobId=8 JobState=PENDING Reason=Resources Dependency=(null) ExitCode=0:0 StartTime=1795479999 NodeList=(null)",
    )
    .unwrap();
    assert_eq!(pending.state, RunState::Starting);
    assert_eq!(pending.reason.as_deref(), Some("Resources"));
    assert_eq!(
        (pending.started_s, pending.exit, pending.nodes),
        (None, None, None)
    );
    let cancelled = parse_scontrol("JobState=CANCELLED Reason=None ExitCode=0:15").unwrap();
    assert_eq!(cancelled.state, RunState::Stopped);
    assert_eq!(cancelled.reason, None);
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

/// 0 with a signal past `i32::MAX - 128` overflowed `128 + signal` (a panic in a debug build),
/// and a negative signal gave an exit code below 128 (found by `fuzz::exit_codes`).
#[test]
fn a_signal_that_is_no_signal_number_is_no_exit_code() {
    assert_eq!(exit_code_of("0:2147483647"), None);
    assert_eq!(exit_code_of("0:-1"), None);
    assert_eq!(exit_code_of("0:256"), None);
    assert_eq!(exit_code_of("0:255"), Some(383));
}

/// Property tests: whatever Slurm's tools print (garbled, cut short, another version's format),
/// reading it never panics and a job view read from it is one of Slurm's states.
mod fuzz {
    use proptest::prelude::*;

    use super::*;
    use crate::fuzz::{self, any_text, near_miss_line};
    use crate::runs::slurm::job::offer_of;

    const SQUEUE: &[&str] = &[
        "PENDING|Resources||0:00|1795472300",
        "RUNNING|None|gpu[01-02]|1:05|1795472198",
        "CANCELLED by 0|None|vm|1-02:00:00|N/A",
    ];
    const SACCT: &[&str] = &[
        "FAILED|3:0|00:00:01|vm|1795472198|1795472199|NonZeroExitCode",
        "COMPLETED|0:0|00:00:02|vm|1|3|",
        "TIMEOUT+|0:15|00:01:00|vm|1|61|(TimeLimit)",
    ];
    const SCONTROL: &[&str] = &[
        "JobId=5 JobState=FAILED Reason=JobLaunchFailure ExitCode=0:53 RunTime=00:00:00 \
         StartTime=1795472198 EndTime=1795472198 NodeList=vm",
        "JobId=8 JobState=PENDING Reason=Resources ExitCode=0:0 StartTime=1795479999",
    ];
    const SBATCH: &[&str] = &[
        "42",
        "42;cluster",
        "sbatch: error: Batch job submission failed: Invalid partition name specified",
    ];
    const SINFO: &[&str] = &["debug*|1|gpu:2", "gpu|4|gpu:h100:8(S:0-1)", "cpu|2|(null)"];

    /// Any `i32`, with the ends of its range as likely as the middle.
    fn edgy_i32() -> impl Strategy<Value = i32> {
        prop_oneof![
            any::<i32>(),
            -256..256i32,
            (i32::MAX - 255)..=i32::MAX,
            i32::MIN..=(i32::MIN + 255),
        ]
    }

    /// A view's state is a word Slurm uses, and an ended job's exit folds without panicking.
    fn check_view(view: Option<JobView>) {
        if let Some(view) = view {
            assert!(!view.slurm_state.is_empty(), "{view:?}");
            let _ = view.exit_code();
            let _ = view.never_ran();
        }
    }

    fn check_all(text: &str) {
        check_view(parse_squeue(text));
        let ended = parse_sacct(text);
        assert!(ended.as_ref().is_none_or(JobView::has_ended), "{ended:?}");
        check_view(ended);
        check_view(parse_scontrol(text));
        for success in [true, false] {
            if let Ok(id) = submitted_job_id(success, text, text) {
                assert!(
                    id.bytes().all(|b| b.is_ascii_digit()) && !id.is_empty(),
                    "{id}"
                );
            }
        }
        let _ = classify_refusal(text).fix();
        let _ = exit_code_of(text);
        let _ = offer_of(text);
    }

    proptest! {
        #![proptest_config(fuzz::config())]

        #[test]
        fn any_text_as_slurm_output(text in any_text()) {
            check_all(&text);
        }

        #[test]
        fn slurm_lines_with_mistakes(
            text in prop_oneof![
                near_miss_line(SQUEUE),
                near_miss_line(SACCT),
                near_miss_line(SCONTROL),
                near_miss_line(SBATCH),
                near_miss_line(SINFO),
            ]
        ) {
            check_all(&text);
        }

        #[test]
        fn exit_codes(
            code in prop_oneof![Just(0), edgy_i32()],
            signal in edgy_i32(),
            wide in any::<i64>(),
        ) {
            let folded = exit_code_of(&format!("{code}:{signal}"));
            assert!(folded.is_none_or(|c| c == code || c >= 128), "{code}:{signal} {folded:?}");
            let _ = exit_code_of(&format!("{wide}:{signal}"));
        }
    }
}
