//! Triton Inference Server as a service is looked at through: `/v2/health/ready`, the model
//! repository index (`POST /v2/repository/index`) and its Prometheus metrics (per model:
//! inference count, successes, failures, time spent).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One model of the repository index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TritonModel {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `READY`, `UNAVAILABLE`, `LOADING`, ... (absent: not loaded).
    #[serde(default)]
    pub state: Option<String>,
    /// Why it is not ready, in Triton's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The models of a repository index body.
pub fn parse_repository_index(body: &str) -> Result<Vec<TritonModel>, String> {
    serde_json::from_str(body).map_err(|e| format!("the model index is not JSON: {e}"))
}

/// A model's figures from the metrics endpoint, summed over its versions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelStats {
    pub inference_count: u64,
    pub success: u64,
    pub failure: u64,
    /// Mean time per successful request, in microseconds.
    pub mean_latency_us: Option<f64>,
}

/// Per-model stats from Triton's Prometheus text.
pub fn parse_metrics(text: &str) -> BTreeMap<String, ModelStats> {
    let mut counts: BTreeMap<String, (u64, u64, u64, f64)> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Some((metric, labels)) = series.split_once('{') else {
            continue;
        };
        let Some(model) = label(labels, "model") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let entry = counts.entry(model).or_default();
        match metric {
            "nv_inference_count" => entry.0 += value as u64,
            "nv_inference_request_success" => entry.1 += value as u64,
            "nv_inference_request_failure" => entry.2 += value as u64,
            "nv_inference_request_duration_us" => entry.3 += value,
            _ => {}
        }
    }
    counts
        .into_iter()
        .map(|(model, (count, success, failure, duration))| {
            let stats = ModelStats {
                inference_count: count,
                success,
                failure,
                mean_latency_us: (success > 0).then(|| duration / success as f64),
            };
            (model, stats)
        })
        .collect()
}

/// The value of `name="..."` in a label list.
fn label(labels: &str, name: &str) -> Option<String> {
    let start = labels.find(&format!("{name}=\""))? + name.len() + 2;
    let end = labels[start..].find('"')?;
    Some(labels[start..start + end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_and_the_metrics_are_read_per_model() {
        let models = parse_repository_index(
            r#"[{"name":"identity","version":"1","state":"READY"},{"name":"broken","state":"UNAVAILABLE","reason":"no config"}]"#,
        )
        .expect("valid");
        assert_eq!(models[0].state.as_deref(), Some("READY"));
        assert_eq!(models[1].reason.as_deref(), Some("no config"));
        let text = "# HELP nv_inference_count x\n\
            nv_inference_count{model=\"identity\",version=\"1\"} 3\n\
            nv_inference_request_success{model=\"identity\",version=\"1\"} 3\n\
            nv_inference_request_failure{model=\"identity\",reason=\"OTHER\",version=\"1\"} 1\n\
            nv_inference_request_duration_us{model=\"identity\",version=\"1\"} 300\n";
        let stats = parse_metrics(text);
        assert_eq!(stats["identity"].inference_count, 3);
        assert_eq!(stats["identity"].failure, 1);
        assert_eq!(stats["identity"].mean_latency_us, Some(100.0));
    }
}
