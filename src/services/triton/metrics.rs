//! Per-model inference statistics from Triton's Prometheus metrics (`--allow-metrics`,
//! `/metrics` on the metrics port).
//!
//! Checked against tritonserver 2.51.0: every series is per `model` and `version` label;
//! `nv_inference_request_failure` has one series per `reason` (OTHER, BACKEND, CANCELED,
//! REJECTED), summed here. A request the server turns away before the model (an unknown input
//! name) counts nowhere; an exception the python backend raises in `execute` is a BACKEND
//! failure; an error response the model returns counts as a success. The durations are
//! cumulative microseconds over successful requests only (`/v2/models/M/stats` shows the
//! same total under `success.ns`), so the mean latency is duration over successes. Counters
//! are updated at once; the CPU and GPU gauges every `--metrics-interval-ms` (2 s).

use std::collections::BTreeMap;

/// One model version's counters since the server started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelStats {
    pub model: String,
    pub version: String,
    /// `nv_inference_count`: inferences performed (a batch of n counts n).
    pub inferences: u64,
    /// `nv_inference_exec_count`: model executions (batches).
    pub executions: u64,
    /// `nv_inference_request_success`.
    pub successes: u64,
    /// `nv_inference_request_failure`, every reason.
    pub failures: u64,
    /// `nv_inference_request_duration_us`: cumulative, successful requests only.
    pub request_duration_us: u64,
    /// `nv_inference_queue_duration_us`: cumulative time waiting for an instance.
    pub queue_duration_us: u64,
    /// `nv_inference_pending_request_count`: waiting now.
    pub pending_requests: u64,
}

impl ModelStats {
    /// The mean end-to-end latency of a successful request, in microseconds.
    pub fn average_latency_us(&self) -> Option<f64> {
        (self.successes > 0).then(|| self.request_duration_us as f64 / self.successes as f64)
    }
}

/// The per-model statistics in a `/metrics` answer, by model name then version. Series other
/// than the per-model ones (CPU, GPU, pinned memory) are skipped; a per-model line that cannot
/// be read is an error that quotes it.
pub fn parse_metrics(text: &str) -> Result<Vec<ModelStats>, String> {
    let mut models: BTreeMap<(String, String), ModelStats> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let Some(field) = field_of(&line[..name_end]) else {
            continue;
        };
        let (labels, value) = sample(line, name_end).ok_or_else(|| unreadable(line))?;
        let (Some(model), Some(version)) = (label(&labels, "model"), label(&labels, "version"))
        else {
            return Err(unreadable(line));
        };
        let stats = models
            .entry((model.to_string(), version.to_string()))
            .or_insert_with(|| ModelStats {
                model: model.to_string(),
                version: version.to_string(),
                ..ModelStats::default()
            });
        // Counters are floats in the text format; Triton's are whole numbers.
        *field(stats) += value.max(0.0).round() as u64;
    }
    Ok(models.into_values().collect())
}

type Field = fn(&mut ModelStats) -> &mut u64;

fn field_of(series: &str) -> Option<Field> {
    Some(match series {
        "nv_inference_count" => |s| &mut s.inferences,
        "nv_inference_exec_count" => |s| &mut s.executions,
        "nv_inference_request_success" => |s| &mut s.successes,
        "nv_inference_request_failure" => |s| &mut s.failures,
        "nv_inference_request_duration_us" => |s| &mut s.request_duration_us,
        "nv_inference_queue_duration_us" => |s| &mut s.queue_duration_us,
        "nv_inference_pending_request_count" => |s| &mut s.pending_requests,
        _ => return None,
    })
}

fn unreadable(line: &str) -> String {
    format!("a Triton metrics line could not be read: {line}")
}

fn label<'a>(labels: &'a [(String, String)], name: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The labels and value of `name{a="x",b="y"} 3 [timestamp]`, `name_end` being where the name
/// stops.
fn sample(line: &str, name_end: usize) -> Option<(Vec<(String, String)>, f64)> {
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some((labels, value))
}

/// Labels up to the closing brace, with the text format's escapes (`\\`, `\"`, `\n`).
fn parse_labels(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start_matches([' ', ',']);
        if let Some(after) = text.strip_prefix('}') {
            return Some((labels, after));
        }
        let (name, after) = text.split_once('=')?;
        let mut chars = after.strip_prefix('"')?.char_indices();
        let mut value = String::new();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((name.trim().to_string(), value));
        text = &after[1 + end + 1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = include_str!("../../../tests/fixtures/services/triton-metrics.txt");

    #[test]
    fn per_model_counters_are_read_from_real_metrics() {
        let stats = parse_metrics(METRICS).unwrap();
        assert_eq!(
            stats,
            [
                ModelStats {
                    model: "identity".into(),
                    version: "1".into(),
                    inferences: 3,
                    executions: 3,
                    successes: 3,
                    failures: 0,
                    request_duration_us: 32851,
                    queue_duration_us: 129,
                    pending_requests: 0,
                },
                ModelStats {
                    model: "picky".into(),
                    version: "1".into(),
                    inferences: 1,
                    executions: 3,
                    successes: 1,
                    failures: 2,
                    request_duration_us: 18164,
                    queue_duration_us: 93,
                    pending_requests: 0,
                },
            ]
        );
    }

    #[test]
    fn the_mean_latency_is_duration_over_successes() {
        let stats = parse_metrics(METRICS).unwrap();
        let identity = stats[0].average_latency_us().unwrap();
        assert!((identity - 32851.0 / 3.0).abs() < 1e-9, "{identity}");
        assert_eq!(stats[1].average_latency_us(), Some(18164.0));
        assert_eq!(ModelStats::default().average_latency_us(), None);
    }

    #[test]
    fn failures_of_every_reason_are_summed_and_label_order_and_escapes_do_not_matter() {
        let text = concat!(
            "nv_inference_request_failure{version=\"2\",model=\"a \\\"q\\\" b\",reason=\"BACKEND\"} 2\n",
            "nv_inference_request_failure{model=\"a \\\"q\\\" b\",reason=\"REJECTED\",version=\"2\"} 5 1700000000000\n",
            "nv_gpu_utilization{gpu_uuid=\"GPU-1\"} 0.5\n",
            "nv_cpu_utilization 0.98\n",
        );
        let stats = parse_metrics(text).unwrap();
        assert_eq!(stats.len(), 1);
        assert_eq!(
            (stats[0].model.as_str(), stats[0].version.as_str()),
            ("a \"q\" b", "2")
        );
        assert_eq!(stats[0].failures, 7);
    }

    #[test]
    fn no_models_means_no_stats() {
        let text = "# HELP nv_cpu_utilization CPU\nnv_cpu_utilization 1\n";
        assert_eq!(parse_metrics(text).unwrap(), []);
    }

    #[test]
    fn a_per_model_line_that_cannot_be_read_is_quoted() {
        for line in [
            "nv_inference_count{model=\"m\",version=\"1\"} many",
            "nv_inference_count{model=\"m\",version=\"1\" 3",
            "nv_inference_count{model=\"m\"} 3",
        ] {
            let err = parse_metrics(line).unwrap_err();
            assert_eq!(
                err,
                format!("a Triton metrics line could not be read: {line}")
            );
        }
    }
}
