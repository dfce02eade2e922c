//! The reducer replayed over message sequences recorded from Docker Engine 20.10.

use super::*;
use bollard::models::ProgressDetail;

/// A real pull of a 3-layer image whose base layer was already present.
const THREE_LAYERS: &str = include_str!("testdata/pull_three_layers.jsonl");

fn recorded(text: &str) -> Vec<CreateImageInfo> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("recorded line parses"))
        .collect()
}

fn info(id: &str, status: &str, current: Option<i64>, total: Option<i64>) -> CreateImageInfo {
    CreateImageInfo {
        id: Some(id.to_string()),
        status: Some(status.to_string()),
        progress_detail: Some(ProgressDetail { current, total }),
        error_detail: None,
    }
}

fn status(state: &mut PullState) -> Vec<(String, LayerStatus)> {
    let snapshot = state.snapshot(Duration::ZERO);
    snapshot
        .layers
        .into_iter()
        .map(|l| (l.id, l.status))
        .collect()
}

#[test]
fn a_recorded_pull_ends_with_every_layer_done_and_the_digest() {
    let mut state = PullState::new();
    for message in recorded(THREE_LAYERS) {
        state.apply(&message);
    }
    assert_eq!(
        state.digest(),
        Some("sha256:932dea209eefe02feb4949543840d987dc2faf40a8add86ff1e3c7af394f3ea7")
    );
    assert_eq!(
        status(&mut state),
        vec![
            ("2f5990b81449".to_string(), LayerStatus::AlreadyExists),
            ("ae646e26beda".to_string(), LayerStatus::Complete),
            ("17de01b6f3f0".to_string(), LayerStatus::Complete),
        ]
    );
    let done = state.snapshot(Duration::from_secs(1));
    assert_eq!(
        done.bytes_total,
        8_391_323 + 3_146_842,
        "the existing layer downloads nothing"
    );
    assert_eq!(done.bytes_done, done.bytes_total);
    assert_eq!(
        done.status_line,
        "Status: Downloaded newer image for 127.0.0.1:5123/probe/three:1"
    );
    assert!(done.layers.iter().all(|l| l.status.is_finished()));
}

#[test]
fn the_pulling_from_line_is_not_a_layer() {
    let mut state = PullState::new();
    state.apply(&info("1", "Pulling from probe/three", None, None));
    let snapshot = state.snapshot(Duration::ZERO);
    assert!(snapshot.layers.is_empty());
    assert_eq!(snapshot.status_line, "Pulling from probe/three");
}

#[test]
fn every_prefix_of_a_recorded_pull_is_consistent() {
    let messages = recorded(THREE_LAYERS);
    for n in 0..=messages.len() {
        let mut state = PullState::new();
        messages[..n].iter().for_each(|m| state.apply(m));
        let snapshot = state.snapshot(Duration::ZERO);
        assert!(
            snapshot.bytes_done <= snapshot.bytes_total,
            "after {n} messages: {snapshot:?}"
        );
        for layer in &snapshot.layers {
            if let Some(total) = layer.total {
                assert!(layer.current <= total, "after {n} messages: {layer:?}");
            }
        }
    }
}

#[test]
fn download_then_extraction_progress() {
    let mut state = PullState::new();
    state.apply(&info("aaa", "Pulling fs layer", None, None));
    state.apply(&info("bbb", "Pulling fs layer", None, None));
    state.apply(&info("aaa", "Downloading", Some(100), Some(1000)));
    let early = state.snapshot(Duration::ZERO);
    assert_eq!(early.layers[0].status, LayerStatus::Downloading);
    assert_eq!(
        (early.layers[0].current, early.layers[0].total),
        (100, Some(1000))
    );
    assert_eq!((early.bytes_done, early.bytes_total), (100, 1000));
    assert_eq!(early.eta, None, "layer bbb's size is unknown");
    assert_eq!(early.status_line, "downloading: 0/2 layers done");

    state.apply(&info("bbb", "Downloading", Some(0), Some(500)));
    state.apply(&info("aaa", "Verifying Checksum", None, None));
    state.apply(&info("aaa", "Download complete", None, None));
    state.apply(&info("aaa", "Extracting", Some(300), Some(1000)));
    let mid = state.snapshot(Duration::ZERO);
    assert_eq!(mid.layers[0].status, LayerStatus::Extracting);
    assert_eq!(
        (mid.layers[0].current, mid.layers[0].total),
        (300, Some(1000))
    );
    assert_eq!((mid.bytes_done, mid.bytes_total), (1000, 1500));
    assert_eq!(mid.status_line, "extracting: 0/2 layers done");

    state.apply(&info("aaa", "Pull complete", None, None));
    let late = state.snapshot(Duration::ZERO);
    assert_eq!(late.layers[0].current, 1000);
    assert_eq!(late.status_line, "downloading: 1/2 layers done");
}

#[test]
fn a_layer_without_download_progress_learns_its_size_from_extraction() {
    let mut state = PullState::new();
    state.apply(&info("ccc", "Pulling fs layer", None, None));
    state.apply(&info("ccc", "Download complete", None, None));
    assert_eq!(state.snapshot(Duration::ZERO).bytes_total, 0);
    state.apply(&info("ccc", "Extracting", Some(10), Some(700)));
    let snapshot = state.snapshot(Duration::ZERO);
    assert_eq!((snapshot.bytes_done, snapshot.bytes_total), (700, 700));
}

#[test]
fn retry_messages_keep_the_layer_where_it_was() {
    let mut state = PullState::new();
    state.apply(&info("ddd", "Downloading", Some(40), Some(100)));
    state.apply(&info("ddd", "Retrying in 5 seconds", None, None));
    let layer = &state.snapshot(Duration::ZERO).layers[0];
    assert_eq!(
        (layer.status, layer.current),
        (LayerStatus::Downloading, 40)
    );
}

#[test]
fn rate_is_smoothed_and_gives_an_eta() {
    let mut state = PullState::new();
    state.apply(&info("eee", "Downloading", Some(0), Some(10_000_000)));
    assert_eq!(state.snapshot(Duration::ZERO).rate_bytes_per_sec, 0.0);
    state.apply(&info(
        "eee",
        "Downloading",
        Some(1_000_000),
        Some(10_000_000),
    ));
    let first = state.snapshot(Duration::from_secs(1));
    assert!(
        (first.rate_bytes_per_sec - 1_000_000.0).abs() < 1.0,
        "{first:?}"
    );
    assert_eq!(first.eta, Some(Duration::from_secs(9)));

    // A burst is damped rather than taken at face value.
    state.apply(&info(
        "eee",
        "Downloading",
        Some(2_000_000),
        Some(10_000_000),
    ));
    let burst = state.snapshot(Duration::from_millis(1100));
    assert!(burst.rate_bytes_per_sec > 1_000_000.0, "{burst:?}");
    assert!(burst.rate_bytes_per_sec < 10_000_000.0, "{burst:?}");

    // Samples closer than the minimum interval do not move the rate.
    let again = state.snapshot(Duration::from_millis(1110));
    assert_eq!(again.rate_bytes_per_sec, burst.rate_bytes_per_sec);
}

#[test]
fn negative_numbers_from_the_engine_are_ignored() {
    let mut state = PullState::new();
    state.apply(&info("fff", "Downloading", Some(-1), Some(-1)));
    let layer = &state.snapshot(Duration::ZERO).layers[0];
    assert_eq!((layer.current, layer.total), (0, None));
}
