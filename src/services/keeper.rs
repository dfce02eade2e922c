//! `[notebook] idle_stop`: a notebook's supervisor shuts down each kernel that has been idle
//! longer than the limit it started with, so the GPU memory the kernel holds is freed while
//! nobody uses it. The notebook itself keeps running; a browser tab reconnects to a new kernel.

use std::path::Path;
use std::time::Duration;

use super::jupyter::{parse_kernels, Kernel, KERNELS_PATH};
use super::listing::token_of;
use super::probe;
use crate::runs::{Run, RunState, ServiceKind};

/// Starts the keeper beside a run's supervisor (in the same process) when the run is a
/// notebook with `idle_stop_secs`; nothing otherwise.
pub fn keep(dir: &Path) {
    let Ok(run) = Run::open(dir) else {
        return;
    };
    let Some(service) = &run.record.service else {
        return;
    };
    let (ServiceKind::Notebook, Some(limit)) = (service.kind, service.idle_stop_secs) else {
        return;
    };
    let Some(port) = service.port("http") else {
        return;
    };
    let dir = dir.to_path_buf();
    let limit = Duration::from_secs(limit);
    let spawned = std::thread::Builder::new()
        .name("idle-keeper".into())
        .spawn(move || watch(&dir, port, limit));
    if let Err(e) = spawned {
        tracing::warn!("the idle keeper could not start: {e}");
    }
}

/// How often it looks: a quarter of the limit, between 1 s and 60 s.
fn period(limit: Duration) -> Duration {
    (limit / 4).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

fn watch(dir: &Path, port: u16, limit: Duration) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let Ok(client) = probe::client() else {
        return;
    };
    let base = format!("http://127.0.0.1:{port}");
    loop {
        std::thread::sleep(period(limit));
        let Ok(run) = Run::open(dir) else {
            return;
        };
        match run.state() {
            RunState::Running => {}
            RunState::Starting => continue,
            _ => return,
        }
        let token = token_of(&run);
        runtime.block_on(shut_idle_kernels(&client, &base, token.as_deref(), limit));
    }
}

/// Shuts down every kernel idle longer than `limit`; says each on stderr (the supervisor's log).
async fn shut_idle_kernels(
    client: &reqwest::Client,
    base: &str,
    token: Option<&str>,
    limit: Duration,
) {
    let answer = probe::get(client, &format!("{base}{KERNELS_PATH}"), token).await;
    let Ok(body) = answer.and_then(probe::Answer::success) else {
        return;
    };
    let kernels = parse_kernels(&body).unwrap_or_default();
    let now = crate::runs::now_ms();
    for kernel in kernels.iter().filter(|k| idle_past(k, now, limit)) {
        let url = format!("{base}/api/kernels/{}", kernel.id);
        match probe::delete(client, &url, token).await {
            Ok(probe::Answer {
                status: 200..=299, ..
            }) => errln!(
                "gpudeck: kernel {} ({}) shut down: idle for more than {} ([notebook] idle_stop)",
                kernel.id,
                kernel.name,
                crate::units::run_duration(limit.as_millis() as u64)
            ),
            Ok(probe::Answer { status, .. }) => errln!(
                "gpudeck: kernel {} could not be shut down: HTTP {status}",
                kernel.id
            ),
            Err(why) => errln!(
                "gpudeck: kernel {} could not be shut down: {why}",
                kernel.id
            ),
        }
    }
}

/// Whether `kernel` computes nothing and has said nothing for longer than `limit`.
fn idle_past(kernel: &Kernel, now_ms: u64, limit: Duration) -> bool {
    kernel.execution_state.is_quiet()
        && kernel
            .last_activity_ms
            .is_some_and(|at| now_ms.saturating_sub(at) > limit.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::jupyter::KernelState;

    fn kernel(state: &str, at: Option<u64>) -> Kernel {
        Kernel {
            id: "k".into(),
            name: "python3".into(),
            execution_state: match state {
                "idle" => KernelState::Idle,
                "starting" => KernelState::Starting,
                "busy" => KernelState::Busy,
                other => KernelState::Other(other.into()),
            },
            last_activity_ms: at,
            connections: 0,
        }
    }

    #[test]
    fn only_quiet_kernels_past_the_limit_are_shut_down() {
        let limit = Duration::from_secs(60);
        assert!(idle_past(&kernel("idle", Some(0)), 61_000, limit));
        assert!(idle_past(&kernel("starting", Some(0)), 61_000, limit));
        assert!(!idle_past(&kernel("idle", Some(0)), 60_000, limit));
        assert!(!idle_past(&kernel("busy", Some(0)), 600_000, limit));
        assert!(!idle_past(&kernel("idle", None), 600_000, limit));
        assert_eq!(period(Duration::from_secs(2)), Duration::from_secs(1));
        assert_eq!(period(Duration::from_secs(7200)), Duration::from_secs(60));
    }
}
