//! The pull progress reducer: folds the Engine's CreateImageInfo messages into per-layer and total progress.

use std::time::Duration;

use bollard::models::CreateImageInfo;
use serde::Serialize;

/// How quickly the smoothed rate follows the instantaneous one.
const RATE_TIME_CONSTANT: Duration = Duration::from_secs(2);
/// Samples closer together than this say more about scheduling than about the network.
const MIN_RATE_SAMPLE: Duration = Duration::from_millis(50);

/// Where one layer is in its pull.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerStatus {
    Waiting,
    Downloading,
    Verifying,
    Downloaded,
    Extracting,
    Complete,
    AlreadyExists,
}

impl LayerStatus {
    /// Past the download: its bytes are all here.
    pub fn is_downloaded(self) -> bool {
        matches!(
            self,
            LayerStatus::Verifying
                | LayerStatus::Downloaded
                | LayerStatus::Extracting
                | LayerStatus::Complete
        )
    }

    /// Nothing left to do for this layer.
    pub fn is_finished(self) -> bool {
        matches!(self, LayerStatus::Complete | LayerStatus::AlreadyExists)
    }
}

/// One layer's progress: `current`/`total` are bytes of the current phase (download or extraction).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayerProgress {
    /// The short layer id the Engine prints (12 hex digits).
    pub id: String,
    pub status: LayerStatus,
    pub current: u64,
    /// The compressed layer size, once the Engine has said it.
    pub total: Option<u64>,
}

/// A snapshot of a whole pull.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PullProgress {
    /// Layers in the order the Engine first mentioned them.
    pub layers: Vec<LayerProgress>,
    /// Bytes downloaded so far, over all layers.
    pub bytes_done: u64,
    /// Bytes to download over the layers whose size is known (it grows as sizes become known).
    pub bytes_total: u64,
    /// Download rate, exponentially smoothed.
    pub rate_bytes_per_sec: f64,
    /// Time left to download, when every layer's size is known and bytes are moving.
    #[serde(serialize_with = "seconds")]
    pub eta: Option<Duration>,
    /// The Engine's last message that was not about a single layer, or a summary of the layers.
    pub status_line: String,
}

fn seconds<S: serde::Serializer>(eta: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match eta {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// The state of one pull, built from the Engine's messages by [`PullState::apply`].
///
/// Pure: no clock and no I/O, so recorded message sequences replay exactly in tests.
#[derive(Debug, Default, Clone)]
pub struct PullState {
    layers: Vec<Layer>,
    digest: Option<String>,
    status_line: String,
    rate: RateEstimator,
}

#[derive(Debug, Clone)]
struct Layer {
    progress: LayerProgress,
    /// The download size, kept when the extraction phase reuses `current`/`total`.
    download_total: Option<u64>,
    downloaded: u64,
}

impl PullState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one message from the Engine's pull stream into the state.
    pub fn apply(&mut self, info: &CreateImageInfo) {
        let status = info.status.as_deref().unwrap_or_default();
        if let Some(digest) = status.strip_prefix("Digest: ") {
            self.digest = Some(digest.trim().to_string());
        }
        let Some(id) = info.id.as_deref().filter(|_| is_layer_message(status)) else {
            if !status.is_empty() {
                self.status_line = status.to_string();
            }
            return;
        };
        let detail = info.progress_detail.as_ref();
        let current = detail.and_then(|d| d.current).and_then(non_negative);
        let total = detail.and_then(|d| d.total).and_then(non_negative);
        let layer = self.layer_mut(id);
        layer.update(status, current, total);
    }

    /// The image digest from the Engine's `Digest: sha256:...` line, once seen.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// A snapshot at `elapsed` since the pull started; also feeds the rate estimator.
    pub fn snapshot(&mut self, elapsed: Duration) -> PullProgress {
        let bytes_done: u64 = self.layers.iter().map(|l| l.downloaded).sum();
        let bytes_total: u64 = self.layers.iter().filter_map(Layer::counted_total).sum();
        let rate = self.rate.sample(elapsed, bytes_done);
        let sizes_known = self.layers.iter().all(|l| l.size_known());
        let eta = (sizes_known && rate > 0.0 && !self.layers.is_empty())
            .then(|| Duration::from_secs_f64(bytes_total.saturating_sub(bytes_done) as f64 / rate));
        PullProgress {
            layers: self.layers.iter().map(|l| l.progress.clone()).collect(),
            bytes_done,
            bytes_total,
            rate_bytes_per_sec: rate,
            eta,
            status_line: self.status_line(),
        }
    }

    fn status_line(&self) -> String {
        let finished = self
            .layers
            .iter()
            .filter(|l| l.progress.status.is_finished());
        let finished = finished.count();
        if self.layers.is_empty() || finished == self.layers.len() {
            return self.status_line.clone();
        }
        let extracting = self
            .layers
            .iter()
            .any(|l| l.progress.status == LayerStatus::Extracting);
        let verb = if extracting {
            "extracting"
        } else {
            "downloading"
        };
        format!("{verb}: {finished}/{} layers done", self.layers.len())
    }

    fn layer_mut(&mut self, id: &str) -> &mut Layer {
        let index = match self.layers.iter().position(|l| l.progress.id == id) {
            Some(index) => index,
            None => {
                self.layers.push(Layer::new(id));
                self.layers.len() - 1
            }
        };
        &mut self.layers[index]
    }
}

/// Per-layer statuses. `Pulling from X` carries the tag as its id and is not a layer.
fn is_layer_message(status: &str) -> bool {
    !status.starts_with("Pulling from")
        && !status.starts_with("Digest:")
        && !status.starts_with("Status:")
}

fn non_negative(value: i64) -> Option<u64> {
    u64::try_from(value).ok()
}

impl Layer {
    fn new(id: &str) -> Self {
        Layer {
            progress: LayerProgress {
                id: id.to_string(),
                status: LayerStatus::Waiting,
                current: 0,
                total: None,
            },
            download_total: None,
            downloaded: 0,
        }
    }

    fn update(&mut self, status: &str, current: Option<u64>, total: Option<u64>) {
        let new_status = match status {
            "Pulling fs layer" | "Waiting" => LayerStatus::Waiting,
            "Downloading" => LayerStatus::Downloading,
            "Verifying Checksum" => LayerStatus::Verifying,
            "Download complete" => LayerStatus::Downloaded,
            "Extracting" => LayerStatus::Extracting,
            "Pull complete" => LayerStatus::Complete,
            "Already exists" => LayerStatus::AlreadyExists,
            // "Retrying in N seconds" and anything newer: keep the phase, the numbers stand.
            _ => self.progress.status,
        };
        self.progress.status = new_status;
        match new_status {
            LayerStatus::Downloading => {
                self.download_total = total.or(self.download_total);
                self.downloaded = current.unwrap_or(self.downloaded);
                self.progress.current = self.downloaded;
                self.progress.total = self.download_total;
            }
            LayerStatus::Extracting => {
                // Extraction counts the same compressed bytes: it tells a size the download hid.
                self.download_total = self.download_total.or(total);
                self.progress.current = current.unwrap_or(self.progress.current);
                self.progress.total = total.or(self.progress.total);
            }
            _ => {}
        }
        if new_status.is_downloaded() {
            self.downloaded = self.download_total.unwrap_or(self.downloaded);
        }
        if matches!(new_status, LayerStatus::Verifying | LayerStatus::Downloaded) {
            self.progress.current = self.downloaded;
            self.progress.total = self.download_total;
        }
        if new_status == LayerStatus::Complete {
            self.progress.total = self.progress.total.or(self.download_total);
            self.progress.current = self.progress.total.unwrap_or(self.progress.current);
        }
    }

    /// Layers that already exist download nothing, so they count neither way.
    fn counted_total(&self) -> Option<u64> {
        match self.progress.status {
            LayerStatus::AlreadyExists => None,
            _ => self
                .download_total
                .or((self.downloaded > 0).then_some(self.downloaded)),
        }
    }

    fn size_known(&self) -> bool {
        self.download_total.is_some()
            || self.progress.status.is_downloaded()
            || self.progress.status == LayerStatus::AlreadyExists
    }
}

/// An exponentially weighted download rate that does not depend on how often it is sampled.
#[derive(Debug, Default, Clone)]
struct RateEstimator {
    last: Option<(Duration, u64)>,
    rate: f64,
}

impl RateEstimator {
    fn sample(&mut self, at: Duration, bytes: u64) -> f64 {
        let Some((last_at, last_bytes)) = self.last else {
            self.last = Some((at, bytes));
            return self.rate;
        };
        let dt = at.saturating_sub(last_at);
        if dt < MIN_RATE_SAMPLE {
            return self.rate;
        }
        let instant = bytes.saturating_sub(last_bytes) as f64 / dt.as_secs_f64();
        let weight = 1.0 - (-dt.as_secs_f64() / RATE_TIME_CONSTANT.as_secs_f64()).exp();
        self.rate = if self.rate == 0.0 {
            instant
        } else {
            self.rate + weight * (instant - self.rate)
        };
        self.last = Some((at, bytes));
        self.rate
    }
}

#[cfg(test)]
mod tests {
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
}
