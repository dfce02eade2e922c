use super::*;

fn submitted() -> RunRecord {
    let spec = RunSpec {
        command: vec!["python".into(), "train.py".into()],
        ..RunSpec::default()
    };
    let mut record = submitted_record(&spec, "r1".into(), "train".into(), 1_000);
    record.slurm = Some(SlurmJob::submitted(
        "42".into(),
        "/runs/r1/job.sbatch".into(),
        None,
        1_000,
    ));
    record
}

fn view(state: RunState, slurm_state: &str) -> JobView {
    JobView {
        state,
        slurm_state: slurm_state.into(),
        ..JobView::default()
    }
}

#[test]
fn a_pending_job_is_starting_with_its_reason_explained() {
    let mut record = submitted();
    let pending = JobView {
        reason: Some("Resources".into()),
        ..view(RunState::Starting, "PENDING")
    };
    apply(&mut record, pending, "squeue", 2_000);
    assert_eq!(record.effective_state(), RunState::Starting);
    assert_eq!(
        record.slurm.as_ref().unwrap().reason.as_deref(),
        Some("Resources")
    );
    let error = record.error.clone().unwrap();
    assert!(
        error.contains("(Resources)") && !error.contains("will not start"),
        "{error}"
    );
    let never = JobView {
        reason: Some("PartitionTimeLimit".into()),
        ..view(RunState::Starting, "PENDING")
    };
    apply(&mut record, never, "squeue", 2_500);
    let error = record.error.clone().unwrap();
    assert!(
        error.contains("will not start") && error.contains("--time"),
        "{error}"
    );
}

#[test]
fn running_then_failed_records_slurms_times_nodes_and_exit() {
    let mut record = submitted();
    let running = JobView {
        nodes: Some("gpu01".into()),
        started_s: Some(2),
        ..view(RunState::Running, "RUNNING")
    };
    apply(&mut record, running, "squeue", 9_000);
    assert_eq!(record.state, RunState::Running);
    // Slurm's start, not when gpudeck happened to look.
    assert_eq!(record.started_ms, Some(2_000));
    assert_eq!(record.error, None);
    let end = JobView {
        exit: Some("3:0".into()),
        started_s: Some(2),
        ended_s: Some(5),
        elapsed: Some("00:00:03".into()),
        ..view(RunState::Failed, "FAILED")
    };
    apply(&mut record, end, "sacct", 60_000);
    assert_eq!(record.state, RunState::Failed);
    assert_eq!(record.exit_code, Some(3));
    assert_eq!(
        (record.started_ms, record.ended_ms),
        (Some(2_000), Some(5_000))
    );
    let job = record.slurm.as_ref().unwrap();
    assert_eq!(job.slurm_state.as_deref(), Some("FAILED"));
    assert_eq!(job.exit.as_deref(), Some("3:0"));
    assert_eq!(job.nodes.as_deref(), Some("gpu01"));
    assert_eq!(job.elapsed.as_deref(), Some("00:00:03"));
    assert_eq!(job.reported_by.as_deref(), Some("sacct"));
    assert!(record.error.as_deref().unwrap().contains("exited with 3"));
}

#[test]
fn a_job_that_failed_to_launch_says_so_and_has_no_start() {
    let mut record = submitted();
    let launch = JobView {
        reason: Some("JobLaunchFailure".into()),
        exit: Some("0:53".into()),
        nodes: Some("vm".into()),
        started_s: Some(4),
        ended_s: Some(4),
        ..view(RunState::Failed, "FAILED")
    };
    apply(&mut record, launch, "scontrol", 9_000);
    assert_eq!(record.state, RunState::Failed);
    assert_eq!((record.started_ms, record.exit_code), (None, None));
    assert_eq!(record.ended_ms, Some(4_000));
    let error = record.error.unwrap();
    assert!(error.contains("failed before starting"), "{error}");
}

#[test]
fn a_job_no_slurm_tool_knows_is_lost_not_guessed() {
    let mut record = submitted();
    apply(
        &mut record,
        view(RunState::Running, "RUNNING"),
        "squeue",
        2_000,
    );
    vanished(&mut record, 7_000);
    assert_eq!(record.state, RunState::Lost);
    assert_eq!(record.exit_code, None);
    assert_eq!(record.ended_ms, Some(7_000));
    assert!(record.error.unwrap().contains("no longer knows job 42"));
}

#[test]
fn an_old_slurm_run_is_never_lost() {
    // No supervisor and long past the start deadline: a local run would be `lost`.
    let record = submitted();
    assert_eq!(record.effective_state(), RunState::Starting);
}

#[test]
fn the_record_round_trips_and_local_records_stay_as_they_were() {
    let record = submitted();
    let text = serde_json::to_string(&record).unwrap();
    assert!(text.contains("\"backend\":\"slurm\""));
    assert!(text.contains("\"job_id\":\"42\""));
    assert_eq!(serde_json::from_str::<RunRecord>(&text).unwrap(), record);
    let mut local = submitted();
    local.backend = Backend::Local;
    local.slurm = None;
    let text = serde_json::to_string(&local).unwrap();
    assert!(!text.contains("backend") && !text.contains("slurm"));
}
