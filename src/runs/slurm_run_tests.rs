use super::*;
use crate::runs::slurm::JobEnd;

fn submitted() -> RunRecord {
    let spec = RunSpec {
        command: vec!["python".into(), "train.py".into()],
        ..RunSpec::default()
    };
    let mut record = submitted_record(&spec, "r1".into(), "train".into(), 1_000);
    record.slurm = Some(SlurmJob {
        job_id: "42".into(),
        script: "/runs/r1/job.sbatch".into(),
        partition: None,
        submitted_ms: 1_000,
        reason: None,
        slurm_state: None,
    });
    record
}

#[test]
fn a_pending_job_is_starting_with_its_reason() {
    let mut record = submitted();
    let view = JobView::Queued {
        state: RunState::Starting,
        reason: Some("Resources".into()),
    };
    apply(&mut record, view, 2_000);
    assert_eq!(record.effective_state(), RunState::Starting);
    assert_eq!(
        record.slurm.as_ref().unwrap().reason.as_deref(),
        Some("Resources")
    );
    assert!(record.error.as_deref().unwrap().contains("Resources"));
}

#[test]
fn running_then_failed_records_start_end_and_exit_code() {
    let mut record = submitted();
    let running = JobView::Queued {
        state: RunState::Running,
        reason: None,
    };
    apply(&mut record, running, 2_000);
    assert_eq!(record.state, RunState::Running);
    assert_eq!(record.started_ms, Some(2_000));
    assert_eq!(record.error, None);
    let end = JobEnd {
        state: RunState::Failed,
        exit_code: Some(3),
        slurm_state: "FAILED".into(),
    };
    apply(&mut record, JobView::Ended(end), 5_000);
    assert_eq!(record.state, RunState::Failed);
    assert_eq!(record.exit_code, Some(3));
    assert_eq!(
        (record.started_ms, record.ended_ms),
        (Some(2_000), Some(5_000))
    );
    assert_eq!(
        record.slurm.as_ref().unwrap().slurm_state.as_deref(),
        Some("FAILED")
    );
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
