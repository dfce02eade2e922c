//! The engine's streams on the real engine: logs (whole and followed), events and stats.

use crate::support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{Stream, StreamExt, TryStreamExt};
use gpudeck::docker::{ContainerState, DockerError, Engine, EngineEvent, LogLine, LogStream};
use support::docker::{connect as engine, docker, engine_or_skip, unique};
use support::docker_cleanup::Cleanup;

const DEADLINE: Duration = Duration::from_secs(20);

/// The next item of a stream, or a panic naming `what` after the deadline.
async fn next_within<S, T>(stream: &mut S, what: &str) -> T
where
    S: Stream<Item = Result<T, DockerError>> + Unpin,
{
    match tokio::time::timeout(DEADLINE, stream.next()).await {
        Ok(Some(item)) => item.unwrap(),
        Ok(None) => panic!("the stream ended before {what}"),
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

async fn wait_until_exited(engine: &Engine, id: &str) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let state = engine.container(id).await.unwrap().map(|c| c.state);
        if state == Some(ContainerState::Exited) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "still {state:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn logs_tell_stdout_from_stderr() {
    if !engine_or_skip("logs_tell_stdout_from_stderr") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("logs");
    cleanup.container(&name);
    let script = "echo out; echo err >&2; echo 'two words'; printf 'no newline'";
    let id = docker(&["run", "-d", "--name", &name, &image, "sh", "-c", script]);
    let engine = engine().await;
    wait_until_exited(&engine, &id).await;

    let lines: Vec<LogLine> = engine.logs(&id, false, None).try_collect().await.unwrap();
    // The engine reads the two pipes apart, so only the order within each stream is certain.
    let of = |stream: LogStream| -> Vec<&str> {
        lines
            .iter()
            .filter(|l| l.stream == stream)
            .map(|l| l.text.as_str())
            .collect()
    };
    assert_eq!(of(LogStream::Stdout), ["out", "two words", "no newline"]);
    assert_eq!(of(LogStream::Stderr), ["err"]);
    assert_eq!(lines.len(), 4, "{lines:?}");
    for line in &lines {
        let stamp = line.timestamp.as_deref().unwrap_or_default();
        assert!(stamp.starts_with("20") && stamp.ends_with('Z'), "{line:?}");
    }

    let last: Vec<LogLine> = engine
        .logs(&id, false, Some(1))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        last.iter().collect::<Vec<_>>(),
        lines.last().into_iter().collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_tty_container_logs_everything_as_stdout() {
    if !engine_or_skip("a_tty_container_logs_everything_as_stdout") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("tty");
    cleanup.container(&name);
    let id = docker(&[
        "run",
        "-d",
        "-t",
        "--name",
        &name,
        &image,
        "sh",
        "-c",
        "echo out; echo err >&2",
    ]);
    let engine = engine().await;
    wait_until_exited(&engine, &id).await;
    let lines: Vec<LogLine> = engine.logs(&id, false, None).try_collect().await.unwrap();
    let texts: Vec<(LogStream, &str)> = lines.iter().map(|l| (l.stream, l.text.as_str())).collect();
    assert_eq!(
        texts,
        [(LogStream::Stdout, "out"), (LogStream::Stdout, "err")]
    );
}

#[tokio::test]
async fn following_logs_yields_a_line_printed_later() {
    if !engine_or_skip("following_logs_yields_a_line_printed_later") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("follow");
    cleanup.container(&name);
    let id = docker(&[
        "run",
        "-d",
        "--name",
        &name,
        &image,
        "sh",
        "-c",
        "echo first; exec sleep 300",
    ]);
    let engine = engine().await;
    let mut lines = engine.logs(&id, true, None);
    assert_eq!(
        next_within(&mut lines, "the first line").await.text,
        "first"
    );

    // Written by another process straight to the container's stdout, after the follow began.
    docker(&["exec", &name, "sh", "-c", "echo later >/proc/1/fd/1"]);
    let later = next_within(&mut lines, "the later line").await;
    assert_eq!(
        (later.stream, later.text.as_str()),
        (LogStream::Stdout, "later")
    );
    docker(&["exec", &name, "sh", "-c", "echo oops >/proc/1/fd/2"]);
    let oops = next_within(&mut lines, "the stderr line").await;
    assert_eq!(
        (oops.stream, oops.text.as_str()),
        (LogStream::Stderr, "oops")
    );

    engine.remove(&id, true).await.unwrap();
    let end = tokio::time::timeout(DEADLINE, lines.next()).await;
    assert!(
        matches!(end, Ok(None)),
        "the follow ends with the container: {end:?}"
    );
}

#[tokio::test]
async fn events_announce_a_start_and_a_removal() {
    if !engine_or_skip("events_announce_a_start_and_a_removal") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("events");
    cleanup.container(&name);
    let engine = engine().await;
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 1;
    let id = docker(&["run", "-d", "--name", &name, &image, "sleep", "300"]);

    // Subscribed after the start: the engine replays from `since`, so nothing is missed.
    let mut events = engine.events_since(since);
    loop {
        let event = next_within(&mut events, "the start of the container").await;
        if event == (EngineEvent::ContainerChanged { id: id.clone() }) {
            break;
        }
    }
    engine.remove(&id, true).await.unwrap();
    loop {
        let event = next_within(&mut events, "the removal of the container").await;
        if event == (EngineEvent::ContainerRemoved { id: id.clone() }) {
            break;
        }
    }
}

#[tokio::test]
async fn live_events_include_image_changes() {
    if !engine_or_skip("live_events_include_image_changes") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let engine = engine().await;
    let mut events = engine.events();
    // The subscription is only made on the first poll; tag images until one tag is seen.
    let tag = format!("{}:tagged", unique("events"));
    cleanup.image_name(&tag);
    let seen = async {
        loop {
            // Other tests start containers meanwhile.
            if let Ok(EngineEvent::ImagesChanged) = events.next().await.unwrap() {
                return EngineEvent::ImagesChanged;
            }
        }
    };
    let tagging = async {
        loop {
            docker(&["tag", &image, &tag]);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let event = tokio::time::timeout(DEADLINE, async {
        tokio::select! {
            event = seen => event,
            _ = tagging => unreachable!("tagging never ends"),
        }
    })
    .await
    .expect("an image event in time");
    assert_eq!(event, EngineEvent::ImagesChanged);
    docker(&["rmi", &tag]);
}

#[tokio::test]
async fn stats_of_a_running_container() {
    if !engine_or_skip("stats_of_a_running_container") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let name = unique("stats");
    cleanup.container(&name);
    let id = docker(&["run", "-d", "--name", &name, &image, "sleep", "300"]);
    let engine = engine().await;
    let mut stats = engine.stats(&id);
    let first = next_within(&mut stats, "a first sample").await;
    assert!(first.memory_used_bytes > 0, "{first:?}");
    assert!(
        first.memory_limit_bytes >= first.memory_used_bytes,
        "{first:?}"
    );
    let second = next_within(&mut stats, "a second sample").await;
    assert!(
        second.cpu_pct >= 0.0 && second.cpu_pct < 50.0,
        "sleep is idle: {second:?}"
    );

    let err = engine
        .stats("gpudeck-test-no-such")
        .next()
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, DockerError::NotFound { .. }), "{err:?}");
}
