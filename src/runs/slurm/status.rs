//! What Slurm's client tools say about a job, read from their output text: `sbatch --parsable`'s
//! job id or why it refused, `squeue`'s state and reason, and the end `sacct` or `scontrol`
//! reports. Pure: the commands are run elsewhere, so this is tested without a cluster.

use crate::runs::error::slurm::SubmitError;
use crate::runs::record::RunState;

/// The job id from `sbatch --parsable` ("123" or "123;cluster"), or why sbatch refused.
pub fn submitted_job_id(success: bool, stdout: &str, stderr: &str) -> Result<String, SubmitError> {
    if !success {
        return Err(classify_refusal(stderr));
    }
    let first = stdout.lines().next().unwrap_or("").trim();
    let id = first.split(';').next().unwrap_or("");
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(id.to_string());
    }
    Err(SubmitError::NoJobId {
        stdout: stdout.trim().to_string(),
    })
}

/// Which of the refusals sbatch's stderr describes.
pub fn classify_refusal(stderr: &str) -> SubmitError {
    let text = stderr.trim().to_string();
    let lower = text.to_lowercase();
    let has = |needle: &str| lower.contains(needle);
    if has("unable to contact slurm controller")
        || has("could not establish a configuration source")
        || has("connection refused")
        || has("unable to process configuration file")
        || has("munge")
    {
        SubmitError::Unreachable { stderr: text }
    } else if has("invalid partition") {
        SubmitError::UnknownPartition { stderr: text }
    } else if has("invalid account") {
        SubmitError::UnknownAccount { stderr: text }
    } else if has("invalid generic resource") {
        SubmitError::NoGpuGres { stderr: text }
    } else if has("requested node configuration is not available") {
        SubmitError::NodeConfig {
            stderr: text,
            offered: None,
        }
    } else {
        SubmitError::Rejected { stderr: text }
    }
}

/// What Slurm's tools say of a job: where it is, and what they know of its run. Times come as
/// epoch seconds because every command is run with `SLURM_TIME_FORMAT=%s`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobView {
    /// `Starting` (pending), `Running`, or how it ended.
    pub state: RunState,
    /// Slurm's own word for the state ("PENDING", "TIMEOUT", "CANCELLED by 0").
    pub slurm_state: String,
    /// Why it waits ("Resources", "PartitionTimeLimit") or why it ended ("JobLaunchFailure").
    pub reason: Option<String>,
    /// Slurm's `CODE:SIGNAL`, as reported.
    pub exit: Option<String>,
    /// The nodes it runs or ran on ("node[01-02]").
    pub nodes: Option<String>,
    /// Run time so far, or in all, as Slurm writes it ("00:01:05", "1-02:00:00").
    pub elapsed: Option<String>,
    pub started_s: Option<u64>,
    pub ended_s: Option<u64>,
}

impl JobView {
    /// Its exit code: the code, or 128 + the signal that killed it.
    pub fn exit_code(&self) -> Option<i32> {
        self.exit.as_deref().and_then(exit_code_of)
    }

    pub fn has_ended(&self) -> bool {
        self.state.is_finished()
    }

    /// It ended without its batch script ever running: Slurm allocated it (and so gives it a
    /// start time) but could not launch it, or could not boot its nodes.
    pub fn never_ran(&self) -> bool {
        self.reason.as_deref() == Some("JobLaunchFailure")
            || self.slurm_state.starts_with("BOOT_FAIL")
    }
}

/// `squeue --noheader --format=%T|%r|%N|%M|%S -j ID`: the job while queued; `None` once it left
/// the queue (empty output).
pub fn parse_squeue(stdout: &str) -> Option<JobView> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut fields = line.split('|').map(str::trim);
    let mut view = view_of(fields.next()?)?;
    view.reason = fields.next().and_then(reason_of);
    view.nodes = fields.next().and_then(known);
    view.elapsed = fields.next().and_then(known);
    // For a pending job %S is the scheduler's guess of when it will start.
    if view.state == RunState::Running {
        view.started_s = fields.next().and_then(epoch);
    }
    Some(view)
}

/// The `--format` `parse_sacct` reads.
pub const SACCT_FORMAT: &str = "--format=State,ExitCode,Elapsed,NodeList,Start,End,Reason";

/// `sacct -X -n -P -j ID` with [`SACCT_FORMAT`] (from accounting, or with `-c` from the
/// job-completion log): the job's end; `None` while it has not ended or sacct knows nothing.
pub fn parse_sacct(stdout: &str) -> Option<JobView> {
    let line = stdout.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut fields = line.split('|').map(str::trim);
    let mut view = view_of(fields.next()?)?;
    if !view.has_ended() {
        return None;
    }
    view.exit = fields.next().and_then(known);
    view.elapsed = fields.next().and_then(known);
    view.nodes = fields.next().and_then(known);
    view.started_s = fields.next().and_then(epoch);
    view.ended_s = fields.next().and_then(epoch);
    view.reason = fields.next().and_then(reason_of);
    Some(view)
}

/// `scontrol show job ID` of a job the controller still holds; `None` when it has no state (an
/// invalid job id).
pub fn parse_scontrol(stdout: &str) -> Option<JobView> {
    let field = |key: &str| {
        stdout
            .split_whitespace()
            .find_map(|word| word.strip_prefix(key))
    };
    let mut view = view_of(field("JobState=")?)?;
    view.reason = field("Reason=").and_then(reason_of);
    view.nodes = field("NodeList=").and_then(known);
    view.elapsed = field("RunTime=").and_then(known);
    if view.state != RunState::Starting {
        view.started_s = field("StartTime=").and_then(epoch);
    }
    if view.has_ended() {
        view.exit = field("ExitCode=").and_then(known);
        view.ended_s = field("EndTime=").and_then(epoch);
    }
    Some(view)
}

/// Slurm's `CODE:SIGNAL` as one exit code: the code, or 128 + the signal that killed it;
/// `None` for a signal that is no signal number (negative, or past 255).
pub fn exit_code_of(text: &str) -> Option<i32> {
    let (code, signal) = text.trim().split_once(':')?;
    let code: i32 = code.parse().ok()?;
    let signal = i32::from(signal.parse::<u8>().ok()?);
    Some(if code == 0 && signal != 0 {
        128 + signal
    } else {
        code
    })
}

/// A field Slurm filled in: not empty, not one of its words for "nothing".
fn known(text: &str) -> Option<String> {
    match text.trim() {
        "" | "(null)" | "None" | "None assigned" | "N/A" | "Unknown" | "INVALID" => None,
        t => Some(t.to_string()),
    }
}

fn reason_of(text: &str) -> Option<String> {
    known(text.trim_matches(|c| c == '(' || c == ')'))
}

fn epoch(text: &str) -> Option<u64> {
    text.trim().parse().ok().filter(|s| *s > 0)
}

/// One of Slurm's job states as a run's; `None` for a word that is no job state (an error text).
fn view_of(slurm_state: &str) -> Option<JobView> {
    // sacct writes "CANCELLED by UID"; fixed-width tools add a "+".
    let word = slurm_state
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches('+');
    let state = match word {
        "PENDING" | "CONFIGURING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED"
        | "RESV_DEL_HOLD" => RunState::Starting,
        "RUNNING" | "COMPLETING" | "SUSPENDED" | "STAGE_OUT" | "SIGNALING" | "RESIZING" => {
            RunState::Running
        }
        "COMPLETED" => RunState::Succeeded,
        "CANCELLED" | "PREEMPTED" => RunState::Stopped,
        "FAILED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY" | "BOOT_FAIL" | "DEADLINE"
        | "REVOKED" | "SPECIAL_EXIT" => RunState::Failed,
        _ => return None,
    };
    Some(JobView {
        state,
        slurm_state: slurm_state.trim().to_string(),
        ..JobView::default()
    })
}

#[cfg(test)]
mod tests {
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
}
