//! Notebooks that hold GPUs while nobody uses them: doctor's `gpus.idle_notebooks` check, and
//! the words the table, the tab and the check share.

use std::time::Duration;

use super::listing::ServiceRow;
use crate::doctor::{Check, Family, Status};
use crate::units::run_duration;

/// The check's stable id.
pub const IDLE_CHECK: &str = "gpus.idle_notebooks";

/// `GPU 1,2` of a row.
pub fn gpu_list(row: &ServiceRow) -> String {
    format!("GPU {}", row.gpu_indices())
}

/// One flagged notebook in words: `notebook ID on GPU 1: every kernel idle for 3h04m`.
pub fn idle_words(row: &ServiceRow) -> String {
    format!(
        "{} on {}: every kernel idle for {}",
        row.id,
        gpu_list(row),
        run_duration(row.idle_seconds.unwrap_or(0) * 1000)
    )
}

/// Doctor's check over the services as `look_at_all` saw them.
pub fn idle_check(rows: &[ServiceRow], idle_alert: Option<Duration>) -> Check {
    let title = "Idle notebooks holding GPUs";
    let Some(limit) = idle_alert else {
        return Check::new(
            IDLE_CHECK,
            Family::Gpus,
            title,
            Status::Pass,
            "not checked: [notebook] idle_alert is off",
        );
    };
    let limit = run_duration(limit.as_millis() as u64);
    let flagged: Vec<&ServiceRow> = rows.iter().filter(|r| r.idle_alert).collect();
    if flagged.is_empty() {
        return Check::new(
            IDLE_CHECK,
            Family::Gpus,
            title,
            Status::Pass,
            format!("no notebook on a GPU has been idle for {limit} or more"),
        );
    }
    let detail: Vec<String> = flagged.iter().map(|r| idle_words(r)).collect();
    let stops: Vec<String> = flagged
        .iter()
        .map(|r| format!("gpudeck stop {}", r.id))
        .collect();
    Check::new(
        IDLE_CHECK,
        Family::Gpus,
        title,
        Status::Warn,
        format!(
            "{} idle for {limit} or more ([notebook] idle_alert): {}",
            crate::units::plural(flagged.len(), "notebook"),
            detail.join("; ")
        ),
    )
    .with_fix(format!(
        "Save your work and free the GPUs: {}. Or let gpudeck shut idle kernels down: \
         [notebook] idle_stop = \"2h\" in the config.",
        stops.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::{RunGpu, RunState, ServiceKind};
    use crate::services::Health;

    fn row(id: &str, idle: Option<u64>, alert: bool) -> ServiceRow {
        ServiceRow {
            id: id.into(),
            kind: ServiceKind::Notebook,
            name: "nb".into(),
            state: RunState::Running,
            health: Health::Ready,
            problem: None,
            url: "http://127.0.0.1:8888/lab?token=t".into(),
            ssh: "ssh -N -L 8888:127.0.0.1:8888 me@box".into(),
            ports: Vec::new(),
            gpus: vec![RunGpu {
                index: 1,
                uuid: "GPU-a".into(),
                name: "H100".into(),
            }],
            image: None,
            started_ms: None,
            ended_ms: None,
            error: None,
            idle_seconds: idle,
            idle_alert: alert,
            kernels: Vec::new(),
            models: Vec::new(),
            gpu_memory_bytes: None,
            own: Default::default(),
        }
    }

    #[test]
    fn a_flagged_notebook_warns_with_its_gpus_time_and_the_stop_command() {
        let hour = Some(Duration::from_secs(3600));
        let rows = [
            row("nb-1", Some(11_040), true),
            row("nb-2", Some(60), false),
        ];
        let check = idle_check(&rows, hour);
        assert_eq!(check.status, Status::Warn);
        assert_eq!(check.id, IDLE_CHECK);
        assert!(
            check.detail.contains("1 notebook idle for 1h00m or more")
                && check
                    .detail
                    .contains("nb-1 on GPU 1: every kernel idle for 3h04m")
                && !check.detail.contains("nb-2"),
            "{}",
            check.detail
        );
        assert!(check
            .fix
            .as_deref()
            .is_some_and(|f| f.contains("gpudeck stop nb-1")));
        assert_eq!(idle_check(&rows[1..], hour).status, Status::Pass);
        assert!(idle_check(&rows, None).detail.contains("idle_alert is off"));
    }
}
