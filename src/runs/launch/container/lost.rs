//! Container runs whose supervisor is gone. Their containers carry on (they are the engine's, not
//! the supervisor's children), so readers ask the engine, by label: while any still runs the run
//! shows as `running`; once all have ended the run is settled: the output its files missed is
//! caught up from the engine's log, the exit codes and the end are recorded, and the containers
//! are removed unless kept. Also `gpudeck stop` for container runs.

use std::collections::HashMap;
use std::time::Duration;

use bollard::models::ContainerStateStatusEnum;
use bollard::query_parameters::ListContainersOptionsBuilder;

use super::engine::{block_on, connect};
use super::logs::catch_up;
use super::ranks::{remove, stop_all};
use super::service::{own_network, remove_network};
use super::spec::{LABEL_RANK, LABEL_RUN};
use crate::docker::{unix_seconds, DockerError, Engine};
use crate::runs::clock;
use crate::runs::error::RunError;
use crate::runs::record::{RunRecord, RunState};
use crate::runs::run_lock::try_lock;
use crate::runs::store::Run;

/// One of a run's containers as the engine has it.
#[derive(Debug, Clone)]
struct Found {
    rank: usize,
    id: String,
    running: bool,
    exit_code: Option<i32>,
    finished_ms: Option<u64>,
}

/// Every lost container run gets what its containers show: `running`, or settled when they
/// have all ended. Each engine is connected to once; a warning for each run not looked at.
pub(crate) fn look_at_lost(runs: &mut [Run]) -> Vec<String> {
    let lost: Vec<usize> = (0..runs.len())
        .filter(|&i| runs[i].record.container.is_some() && runs[i].state() == RunState::Lost)
        .collect();
    if lost.is_empty() {
        return Vec::new();
    }
    let looked = block_on(async {
        let mut engines: HashMap<String, Result<Engine, DockerError>> = HashMap::new();
        let mut warnings = Vec::new();
        for i in lost {
            let Some(container) = runs[i].record.container.clone() else {
                continue;
            };
            if !engines.contains_key(&container.engine) {
                let engine = connect(&container).await;
                engines.insert(container.engine.clone(), engine);
            }
            let seen = match engines.get(&container.engine) {
                Some(Ok(engine)) => observe(engine, &runs[i]).await,
                Some(Err(e)) => Err(RunError::Docker(e.clone())),
                None => continue,
            };
            match seen {
                Ok(seen) => runs[i] = seen,
                Err(e) => warnings.push(format!(
                    "{}: its containers could not be looked at: {e}",
                    runs[i].id()
                )),
            }
        }
        Ok::<_, RunError>(warnings)
    });
    looked.unwrap_or_else(|e| vec![e.to_string()])
}

async fn observe(engine: &Engine, run: &Run) -> Result<Run, RunError> {
    let mut seen = run.clone();
    let Some(container) = seen.record.container.as_mut() else {
        return Ok(seen);
    };
    let found = find(engine, run.id()).await?;
    if found.iter().any(|f| f.running) {
        container.observed = Some(RunState::Running);
        return Ok(seen);
    }
    if found.is_empty() {
        return Ok(seen);
    }
    Ok(settle(engine, run, &found, false).await?.unwrap_or(seen))
}

/// `gpudeck stop` for a container run: SIGINT, then `docker stop`, to each of its containers
/// that still runs; the last signal needed.
pub(in crate::runs) fn stop_containers(
    run: &Run,
    grace: Duration,
) -> Result<&'static str, RunError> {
    block_on(async {
        let Some(container) = &run.record.container else {
            return Ok("none");
        };
        let engine = connect(container).await?;
        let found = find(&engine, run.id()).await?;
        let ids: Vec<String> = found.into_iter().map(|f| f.id).collect();
        stop_all(&engine, &ids, grace)
            .await
            .map_err(|e| RunError::StopFailed {
                id: run.id().to_string(),
                why: e.to_string(),
            })
    })
}

/// Records a stopped container run whose supervisor is gone from its containers; `false` when
/// there are none to read the end from.
pub(in crate::runs) fn settle_stopped(run: &Run) -> Result<bool, RunError> {
    block_on(async {
        let Some(container) = &run.record.container else {
            return Ok(false);
        };
        let engine = connect(container).await?;
        let found = find(&engine, run.id()).await?;
        if found.is_empty() {
            return Ok(false);
        }
        settle(&engine, run, &found, true).await?;
        Ok::<_, RunError>(true)
    })
}

/// The run's containers, found by its label, rank order.
async fn find(engine: &Engine, run_id: &str) -> Result<Vec<Found>, DockerError> {
    let label = format!("{LABEL_RUN}={run_id}");
    let filters = HashMap::from([("label", vec![label.as_str()])]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let summaries = engine
        .client()
        .list_containers(Some(options))
        .await
        .map_err(|e| engine.error(e, "the container list"))?;
    let mut found = Vec::new();
    for summary in summaries {
        let id = summary.id.unwrap_or_default();
        let rank = summary
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_RANK))
            .and_then(|r| r.parse().ok());
        let Ok(inspect) = engine.client().inspect_container(&id, None).await else {
            continue;
        };
        let state = inspect.state.unwrap_or_default();
        found.push(Found {
            rank: rank.unwrap_or(usize::MAX),
            id,
            running: matches!(
                state.status,
                Some(
                    ContainerStateStatusEnum::RUNNING
                        | ContainerStateStatusEnum::PAUSED
                        | ContainerStateStatusEnum::RESTARTING
                )
            ),
            exit_code: state.exit_code.and_then(|c| i32::try_from(c).ok()),
            finished_ms: state
                .finished_at
                .as_deref()
                .and_then(unix_seconds)
                .and_then(|s| u64::try_from(s).ok())
                .map(|s| s * 1000),
        });
    }
    found.sort_by_key(|f| f.rank);
    Ok(found)
}

/// Records the end from ended containers, under the run's lock; `None` when another process
/// holds it (the supervisor lives after all, or another reader is settling it).
async fn settle(
    engine: &Engine,
    run: &Run,
    found: &[Found],
    stopped: bool,
) -> Result<Option<Run>, RunError> {
    let Some(_lock) = try_lock(&run.dir).map_err(|e| RunError::store(&run.dir, e))? else {
        return Ok(None);
    };
    let current = run.reload()?;
    if current.record.state.is_finished() {
        return Ok(Some(current));
    }
    let mut record = current.record;
    for f in found {
        if let Err(e) = catch_up(engine, &f.id, &run.dir, f.rank, false).await {
            tracing::warn!(
                "catching up the output of rank {} of {}: {e}",
                f.rank,
                run.id()
            );
        }
    }
    record_end(&mut record, found, stopped);
    if !record.container.as_ref().is_some_and(|c| c.keep) {
        for f in found {
            if let Err(e) = remove(engine, &f.id).await {
                record.error = Some(format!("container {} could not be removed: {e}", f.id));
            }
        }
        let network = record.container.as_ref().map(|c| c.network.as_str());
        if let Some(name) = network.and_then(|n| own_network(run.id(), n)) {
            if let Err(e) = remove_network(engine, &name).await {
                tracing::warn!("network {name} of {} could not be removed: {e}", run.id());
            }
        }
    }
    run.write_record(&record)?;
    Ok(Some(Run {
        dir: run.dir.clone(),
        record,
    }))
}

/// Exit codes, state and end time as the supervisor would have written them.
fn record_end(record: &mut RunRecord, found: &[Found], stopped: bool) {
    for f in found {
        if let Some(rank) = record.ranks.get_mut(f.rank) {
            rank.exit_code = Some(f.exit_code.unwrap_or(255));
        }
    }
    let mut failed: Vec<&Found> = found
        .iter()
        .filter(|f| f.exit_code.unwrap_or(255) != 0)
        .collect();
    failed.sort_by_key(|f| f.finished_ms);
    let first_failed = failed.first().map(|f| (f.rank, f.exit_code.unwrap_or(255)));
    let (state, code) = match first_failed {
        _ if stopped => (RunState::Stopped, first_failed.map_or(0, |(_, c)| c)),
        Some((rank, code)) => {
            record.first_failed_rank = Some(rank);
            (RunState::Failed, code)
        }
        None => (RunState::Succeeded, 0),
    };
    record.state = state;
    record.exit_code = Some(code);
    record.ended_ms = found
        .iter()
        .filter_map(|f| f.finished_ms)
        .max()
        .or(Some(clock::now_ms()));
    record.error = Some(
        "the supervisor was gone; gpudeck recorded the end from the containers' exit codes".into(),
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::runs::record::{ContainerRecord, RankRecord};
    use crate::runs::spec::Launcher;

    fn record(ranks: usize) -> RunRecord {
        let starting = RunRecord::starting(
            "r".into(),
            "r".into(),
            Launcher::PerGpu,
            "/work".into(),
            "box".into(),
            1_000,
        );
        RunRecord {
            image: Some("busybox".into()),
            ranks: (0..ranks)
                .map(|rank| RankRecord {
                    rank,
                    argv: vec!["true".into()],
                    env: BTreeMap::new(),
                    gpus: Vec::new(),
                    pid: None,
                    exit_code: None,
                    ended_ms: None,
                })
                .collect(),
            state: RunState::Running,
            started_ms: Some(2_000),
            ..starting
        }
    }

    fn ended(rank: usize, exit_code: i32, finished_s: u64) -> Found {
        Found {
            rank,
            id: format!("c{rank}"),
            running: false,
            exit_code: Some(exit_code),
            finished_ms: Some(finished_s * 1000),
        }
    }

    #[test]
    fn all_zero_is_succeeded_at_the_last_finish() {
        let mut r = record(2);
        record_end(&mut r, &[ended(0, 0, 7), ended(1, 0, 9)], false);
        assert_eq!(r.state, RunState::Succeeded);
        assert_eq!(r.exit_code, Some(0));
        assert_eq!(r.ended_ms, Some(9_000));
        assert_eq!(r.ranks[1].exit_code, Some(0));
        assert!(r.error.as_deref().unwrap().contains("supervisor was gone"));
    }

    #[test]
    fn the_rank_that_failed_first_names_the_failure() {
        let mut r = record(3);
        record_end(
            &mut r,
            &[ended(0, 137, 9), ended(1, 3, 5), ended(2, 0, 4)],
            false,
        );
        assert_eq!(r.state, RunState::Failed);
        assert_eq!(r.first_failed_rank, Some(1));
        assert_eq!(r.exit_code, Some(3));
        let codes: Vec<Option<i32>> = r.ranks.iter().map(|k| k.exit_code).collect();
        assert_eq!(codes, [Some(137), Some(3), Some(0)]);
    }

    #[test]
    fn a_stop_is_stopped_whatever_the_codes() {
        let mut r = record(1);
        record_end(&mut r, &[ended(0, 130, 5)], true);
        assert_eq!(r.state, RunState::Stopped);
        assert_eq!(r.exit_code, Some(130));
        assert_eq!(r.first_failed_rank, None);
        let mut unknown = record(1);
        let never_started = Found {
            exit_code: None,
            finished_ms: None,
            ..ended(0, 0, 0)
        };
        record_end(&mut unknown, &[never_started], false);
        assert_eq!(unknown.ranks[0].exit_code, Some(255));
        assert!(unknown.ended_ms.is_some());
    }

    #[test]
    fn a_lost_container_run_shows_what_its_containers_showed() {
        let mut r = record(1);
        r.supervisor = Some(crate::runs::launch::procs::ProcessRef {
            pid: u32::MAX - 1,
            start_ticks: 1,
        });
        assert_eq!(r.effective_state(), RunState::Lost);
        r.container = Some(ContainerRecord {
            engine: "unix:///var/run/docker.sock".into(),
            engine_tls: None,
            image_id: "sha256:abc".into(),
            image_digests: Vec::new(),
            network: "bridge".into(),
            gpu_request: "none".into(),
            keep: false,
            containers: Vec::new(),
            observed: None,
            engine_away: None,
        });
        assert_eq!(r.effective_state(), RunState::Lost);
        if let Some(c) = r.container.as_mut() {
            c.observed = Some(RunState::Running);
        }
        assert_eq!(r.effective_state(), RunState::Running);
        let written = serde_json::to_string(&r).unwrap();
        assert!(
            !written.contains("observed"),
            "derived, never written: {written}"
        );
        let back: RunRecord = serde_json::from_str(&written).unwrap();
        assert_eq!(back.container.unwrap().observed, None);
    }

    #[test]
    fn a_host_record_without_the_container_part_still_reads() {
        let mut host = serde_json::to_value(record(1)).unwrap();
        host.as_object_mut().unwrap().remove("container");
        assert!(host.get("container").is_none());
        let back: RunRecord = serde_json::from_value(host).unwrap();
        assert_eq!(back.container, None);
        let again = serde_json::to_string(&back).unwrap();
        assert!(
            !again.contains("\"container\""),
            "left out for host runs: {again}"
        );
    }
}
