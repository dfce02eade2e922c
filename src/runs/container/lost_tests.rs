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
    r.supervisor = Some(crate::runs::local::procs::ProcessRef {
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
