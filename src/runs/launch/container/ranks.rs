//! A container run's ranks under the supervisor: each rank's container created, attached to
//! before it starts (so not a byte of output is missed), started, its output appended to the
//! rank's log files as it arrives and its exit code sent on like a host rank's; stopped
//! (SIGINT, then `docker stop`) and removed at the end unless kept. After the start, every call
//! goes through the run's [`EngineLink`], so an engine that goes away is waited for.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bollard::container::LogOutput;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, KillContainerOptionsBuilder,
    WaitContainerOptionsBuilder,
};
use futures::{Stream, StreamExt};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::engine::connect;
use super::engine_link::{say, EngineLink, EngineNotice};
use super::logs::{copy_output, follow_log, has_ended, RankLogs};
use super::service::{create_network, own_network, remove_network};
use super::spec::{ContainerPlan, RankContainer};
use crate::docker::{DockerError, Engine};
use crate::launch_check::{LaunchError, Workload};
use crate::runs::error::RunError;
use crate::runs::record::RunRecord;
use crate::runs::run_lock::try_lock;
use crate::runs::store::Run;
use crate::shell::ShellError;

/// A rank that could not be started, and why (as the host path reports it).
pub(in crate::runs) type StartFailure = (usize, io::Error);

/// The started containers of a run, and the run's lock, held while the supervisor lives.
pub(in crate::runs) struct ContainerRanks {
    engine: Engine,
    /// The engine for everything after the start: it survives the engine going away.
    link: Arc<EngineLink>,
    ids: Vec<String>,
    /// A service's own network, made before its container and removed after it.
    network: Option<String>,
    keep: bool,
    stopper: Option<JoinHandle<Result<&'static str, DockerError>>>,
    lock: File,
}

/// Creates and starts every rank's container in rank order; each rank's exit code arrives on
/// `exits`, and word of the engine going away and coming back on `notices`. On a failure the
/// containers already made are removed.
pub(in crate::runs) async fn start_containers(
    run: &Run,
    record: &mut RunRecord,
    exits: &UnboundedSender<(usize, i32)>,
    notices: UnboundedSender<EngineNotice>,
) -> Result<ContainerRanks, StartFailure> {
    let setup = |why: String| (0, io::Error::other(why));
    let lock = match try_lock(&run.dir) {
        Ok(Some(lock)) => lock,
        Ok(None) => return Err(setup("another process holds the run's lock".into())),
        Err(e) => return Err(setup(format!("the run's lock: {e}"))),
    };
    let plan = ContainerPlan::read(&run.dir).map_err(|e| setup(e.to_string()))?;
    let container = record
        .container
        .as_mut()
        .ok_or_else(|| setup("run.json has no container part".into()))?;
    let engine = connect(container).await.map_err(|e| (0, start_error(e)))?;
    let link = EngineLink::new(engine.clone(), container.host_spec(), notices);
    let network = own_network(run.id(), &container.network);
    if let Some(name) = &network {
        create_network(&engine, name, run.id())
            .await
            .map_err(|e| (0, start_error(e)))?;
    }
    let mut ranks = ContainerRanks {
        engine,
        link: Arc::new(link),
        ids: Vec::new(),
        network,
        keep: container.keep,
        stopper: None,
        lock,
    };
    for planned in &plan.ranks {
        let started = ranks.start_rank(run, planned, exits).await;
        // Created in rank order, so the ids line up with the ranks.
        for (slot, id) in container.containers.iter_mut().zip(&ranks.ids) {
            slot.id = Some(id.clone());
        }
        if let Err(e) = started {
            ranks.discard().await;
            return Err((planned.rank, e));
        }
    }
    if let Some(image) = ranks.image_of_first().await {
        container.image_id = image;
    }
    Ok(ranks)
}

impl ContainerRanks {
    /// Starts one rank. A limit the engine may not raise (`[shell]` memlock or stack) is
    /// dropped for Docker's own and the rank started again, as shells do, said in
    /// supervisor.log.
    async fn start_rank(
        &mut self,
        run: &Run,
        planned: &RankContainer,
        exits: &UnboundedSender<(usize, i32)>,
    ) -> io::Result<()> {
        let mut body = planned.body.clone();
        loop {
            let Err(e) = self.launch(run, planned, body.clone(), exits).await else {
                return Ok(());
            };
            match ShellError::from(e.clone()) {
                ShellError::Rlimit { limit, detail } if drop_ulimit(&mut body, limit) => {
                    errln!(
                        "gpudeck supervisor: rank {}: Docker may not raise the {limit} limit ({detail}); starting it again with Docker's own",
                        planned.rank
                    );
                    if let Some(id) = self.ids.pop() {
                        remove(&self.engine, &id).await.map_err(start_error)?;
                    }
                }
                _ => return Err(start_error(e)),
            }
        }
    }

    /// Creates, attaches to and starts one rank's container, and follows it on a task.
    async fn launch(
        &mut self,
        run: &Run,
        planned: &RankContainer,
        body: ContainerCreateBody,
        exits: &UnboundedSender<(usize, i32)>,
    ) -> Result<(), DockerError> {
        let docker = self.engine.client();
        let what = format!("container {}", planned.name);
        let fail = |e: bollard::errors::Error| self.engine.error(e, &what);
        let options = CreateContainerOptionsBuilder::new()
            .name(&planned.name)
            .build();
        let created = docker
            .create_container(Some(options), body)
            .await
            .map_err(fail)?;
        let id = created.id;
        self.ids.push(id.clone());
        let logs = RankLogs::open(&run.dir, planned.rank)
            .map_err(|e| DockerError::Other(e.to_string()))?;
        let attach = AttachContainerOptionsBuilder::new()
            .stdout(true)
            .stderr(true)
            .stream(true)
            .build();
        let attached = docker
            .attach_container(&id, Some(attach))
            .await
            .map_err(fail)?;
        docker.start_container(&id, None).await.map_err(fail)?;
        let follow = RankFollow {
            link: Arc::clone(&self.link),
            id,
            rank: planned.rank,
            dir: run.dir.clone(),
        };
        tokio::spawn(follow.run(attached.output, logs, exits.clone()));
        Ok(())
    }

    /// The image id the first container got: the exact image, whatever the tag means later.
    async fn image_of_first(&self) -> Option<String> {
        let id = self.ids.first()?;
        let inspect = self
            .engine
            .client()
            .inspect_container(id, None)
            .await
            .ok()?;
        inspect.image
    }

    /// Starts stopping every container, once, on a task; exits keep being recorded meanwhile.
    /// With the engine away, the stop waits for it.
    pub(in crate::runs) fn begin_stop(&mut self, grace: Duration) {
        if self.stopper.is_some() {
            return;
        }
        let (link, ids) = (Arc::clone(&self.link), self.ids.clone());
        self.stopper = Some(tokio::spawn(async move {
            link.call("stopping the containers", |engine| {
                let ids = ids.clone();
                async move { stop_all(&engine, &ids, grace).await }
            })
            .await
        }));
    }

    /// Waits for a stop under way and removes the containers unless kept (waiting for the
    /// engine if it is away); returns the run's lock, to be held until the end is written.
    pub(in crate::runs) async fn finish(mut self, record: &mut RunRecord) -> File {
        if let Some(stopper) = self.stopper.take() {
            match stopper.await {
                Ok(Ok(signal)) => errln!("gpudeck supervisor: containers gone after {signal}"),
                Ok(Err(e)) => record.error = Some(format!("stopping the containers: {e}")),
                Err(e) => record.error = Some(format!("the stopping task failed: {e}")),
            }
        }
        if !self.keep {
            for id in &self.ids {
                let removed = self
                    .link
                    .call(&format!("removing container {id}"), |engine| {
                        let id = id.clone();
                        async move { remove(&engine, &id).await }
                    })
                    .await;
                if let Err(e) = removed {
                    record.error = Some(format!("container {id} could not be removed: {e}"));
                }
            }
            if let Some(name) = &self.network {
                let removed = self
                    .link
                    .call(&format!("removing network {name}"), |engine| {
                        let name = name.clone();
                        async move { remove_network(&engine, &name).await }
                    })
                    .await;
                if let Err(e) = removed {
                    errln!("gpudeck supervisor: network {name} could not be removed: {e}");
                }
            }
        }
        self.lock
    }

    /// Removes every container made so far, running or not, and the service's network (a
    /// start failed).
    async fn discard(&self) {
        for id in &self.ids {
            if let Err(e) = remove(&self.engine, id).await {
                errln!("gpudeck supervisor: container {id} could not be removed: {e}");
            }
        }
        if let Some(name) = &self.network {
            if let Err(e) = remove_network(&self.engine, name).await {
                errln!("gpudeck supervisor: network {name} could not be removed: {e}");
            }
        }
    }
}

/// One rank's container, followed to its end.
struct RankFollow {
    link: Arc<EngineLink>,
    id: String,
    rank: usize,
    dir: PathBuf,
}

impl RankFollow {
    /// Copies the output, follows the engine's own log when that stream broke or the engine
    /// went away under it, reads the exit code (waiting for an engine that went away), and only
    /// then reports the exit: once a rank's exit is known its logs are complete.
    async fn run(
        self,
        output: impl Stream<Item = Result<LogOutput, bollard::errors::Error>> + Unpin,
        mut logs: RankLogs,
        exits: UnboundedSender<(usize, i32)>,
    ) {
        let id = self.id.as_str();
        let what = format!("rank {} ({})", self.rank, id.get(..12).unwrap_or(id));
        let whole = copy_output(output, &mut logs, &what).await;
        // The attach stream also just ends when the engine goes away: believe it only once the
        // container is seen to have ended.
        let ended = whole
            && self
                .link
                .call(&what, |engine| async move { has_ended(&engine, id).await })
                .await
                .unwrap_or(false);
        if !ended {
            let (dir, rank) = (self.dir.as_path(), self.rank);
            let followed = self
                .link
                .call(&format!("following the output of {what}"), |engine| {
                    follow_log(engine, id, dir, rank)
                })
                .await;
            if let Err(e) = followed {
                say(&format!(
                    "the output of {what} could not be caught up from the engine's log ({e}); \
                     the log files may miss its last lines. Check the engine: `docker info`"
                ));
            }
        }
        let code = self
            .link
            .call(&format!("waiting for {what}"), |engine| async move {
                wait_exit(&engine, id).await
            })
            .await
            .unwrap_or_else(|e| {
                say(&format!(
                    "the exit code of {what} is unknown ({e}); recorded as 255. \
                     Check the engine: `docker info`"
                ));
                255
            });
        let _ = exits.send((self.rank, code));
    }
}

/// The container's exit code once it has stopped, as the engine says it.
async fn wait_exit(engine: &Engine, id: &str) -> Result<i32, DockerError> {
    let options = WaitContainerOptionsBuilder::new()
        .condition("not-running")
        .build();
    let code = match engine
        .client()
        .wait_container(id, Some(options))
        .next()
        .await
    {
        Some(Ok(done)) => done.status_code,
        // bollard reports a non-zero exit as an error; here it is just the answer.
        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
        Some(Err(e)) => return Err(engine.error(e, &format!("container {id}"))),
        None => {
            return Err(DockerError::Unreachable {
                host: engine.host().to_string(),
                detail: format!("the wait for container {id} ended without an answer"),
            })
        }
    };
    Ok(i32::try_from(code).unwrap_or(255))
}

/// The container's exit code once it has stopped; 255 when the engine cannot say.
pub(in crate::runs) async fn exit_code(engine: &Engine, id: &str) -> i32 {
    if let Ok(code) = wait_exit(engine, id).await {
        return code;
    }
    engine
        .client()
        .inspect_container(id, None)
        .await
        .ok()
        .and_then(|i| i.state?.exit_code)
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(255)
}

/// SIGINT (what Ctrl-C sends, which training loops catch to save a checkpoint), then after
/// `grace` `docker stop` (SIGTERM, SIGKILL after `grace` more); the last signal needed.
pub(in crate::runs) async fn stop_container(
    engine: &Engine,
    id: &str,
    grace: Duration,
) -> Result<&'static str, DockerError> {
    let sigint = KillContainerOptionsBuilder::new().signal("SIGINT").build();
    match engine.client().kill_container(id, Some(sigint)).await {
        Ok(()) => {}
        Err(e) => {
            return match engine.error(e, &format!("container {id}")) {
                // Gone, or not running: nothing to stop.
                DockerError::NotFound { .. } | DockerError::Conflict { .. } => Ok("none"),
                other => Err(other),
            };
        }
    }
    if tokio::time::timeout(grace, exit_code(engine, id))
        .await
        .is_ok()
    {
        return Ok("SIGINT");
    }
    let seconds = u32::try_from(grace.as_secs()).unwrap_or(u32::MAX);
    match engine.stop(id, seconds).await {
        Ok(()) | Err(DockerError::NotFound { .. }) => {}
        Err(e) => return Err(e),
    }
    // `docker stop` does not say whether SIGKILL was needed; the exit code does.
    Ok(match exit_code(engine, id).await {
        137 => "SIGKILL",
        _ => "SIGTERM",
    })
}

/// Stops every container at once; the strongest signal any needed.
pub(in crate::runs) async fn stop_all(
    engine: &Engine,
    ids: &[String],
    grace: Duration,
) -> Result<&'static str, DockerError> {
    let stops = ids.iter().map(|id| stop_container(engine, id, grace));
    let mut last = "none";
    for result in futures::future::join_all(stops).await {
        let signal = result?;
        last = strongest(last, signal);
    }
    Ok(last)
}

fn strongest(a: &'static str, b: &'static str) -> &'static str {
    let rank = |s: &str| {
        ["none", "SIGINT", "SIGTERM", "SIGKILL"]
            .iter()
            .position(|x| *x == s)
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Removes a container, running or not; one already gone is no error.
pub(in crate::runs) async fn remove(engine: &Engine, id: &str) -> Result<(), DockerError> {
    match engine.remove(id, true).await {
        Ok(()) | Err(DockerError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Takes the `limit` ulimit out of the body; whether it was there.
fn drop_ulimit(body: &mut ContainerCreateBody, limit: &str) -> bool {
    let Some(ulimits) = body.host_config.as_mut().and_then(|h| h.ulimits.as_mut()) else {
        return false;
    };
    let before = ulimits.len();
    ulimits.retain(|u| u.name.as_deref() != Some(limit));
    ulimits.len() < before
}

/// A failed create or start in the terms the host path uses: a missing program (127), one that
/// cannot be executed (126), anything else (126); GPUs the engine cannot hand over explained
/// with the toolkit's fix.
fn start_error(e: DockerError) -> io::Error {
    if let DockerError::NoGpuRuntime { detail } = &e {
        let explained = RunError::Launch(LaunchError::NoToolkit {
            workload: Workload::Run,
            detail: detail.clone(),
        });
        return io::Error::other(format!(
            "{explained} (the engine said: {detail}). {}",
            explained.fix()
        ));
    }
    let text = e.to_string();
    let exec = text.contains("exec:");
    if exec && (text.contains("not found") || text.contains("no such file")) {
        io::Error::new(io::ErrorKind::NotFound, text)
    } else if exec && text.contains("permission denied") {
        io::Error::new(io::ErrorKind::PermissionDenied, text)
    } else {
        io::Error::other(text)
    }
}

#[cfg(test)]
mod tests {
    use bollard::models::{HostConfig, ResourcesUlimits};

    use super::*;

    #[test]
    fn start_failures_read_like_the_host_path() {
        let gpu = start_error(DockerError::NoGpuRuntime {
            detail: "could not select device driver \"\" with capabilities: [[gpu]]".into(),
        });
        let text = gpu.to_string();
        assert!(text.starts_with(crate::shell::TOOLKIT_MESSAGE), "{text}");
        assert!(text.contains("could not select device driver"), "{text}");
        assert!(text.contains("systemctl restart docker"), "{text}");
        let missing = start_error(DockerError::Other(
            "OCI runtime create failed: exec: \"nope\": executable file not found in $PATH".into(),
        ));
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let denied = start_error(DockerError::Other(
            "OCI runtime create failed: exec: \"/x\": permission denied".into(),
        ));
        assert_eq!(denied.kind(), io::ErrorKind::PermissionDenied);
        let other = start_error(DockerError::Other("no space left on device".into()));
        assert_eq!(other.kind(), io::ErrorKind::Other);
    }

    #[test]
    fn a_limit_the_engine_refuses_is_dropped_once() {
        let limit = |name: &str| ResourcesUlimits {
            name: Some(name.into()),
            soft: Some(-1),
            hard: Some(-1),
        };
        let mut body = ContainerCreateBody {
            host_config: Some(HostConfig {
                ulimits: Some(vec![limit("memlock"), limit("stack")]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(drop_ulimit(&mut body, "memlock"));
        assert!(
            !drop_ulimit(&mut body, "memlock"),
            "already gone: no retry loop"
        );
        let left = body.host_config.unwrap().ulimits.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].name.as_deref(), Some("stack"));
    }

    #[test]
    fn the_strongest_signal_needed_is_reported() {
        assert_eq!(strongest("none", "SIGINT"), "SIGINT");
        assert_eq!(strongest("SIGKILL", "SIGTERM"), "SIGKILL");
        assert_eq!(strongest("SIGINT", "none"), "SIGINT");
    }
}
