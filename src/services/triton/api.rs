//! What Triton's HTTP API says: the model repository index (which models, which version, in
//! which state and why) and the server's readiness.
//!
//! Checked against tritonserver 2.51.0: `POST /v2/repository/index` (a POST, with no body or
//! `{}`) answers `[{"name":"identity","version":"1","state":"READY"}]`; a model that failed to
//! load has `"state":"UNAVAILABLE","reason":"Internal: RuntimeError: ...\n\nAt:\n  ..."`, an
//! unloaded one `"reason":"unloaded"`; a model in the repository but never loaded
//! (`--model-control-mode=explicit`) has only its name.
//! `GET /v2/health/ready` answers 200 with an empty body when the server and every model are
//! ready, 400 otherwise (strict readiness, the default): one UNAVAILABLE model makes the whole
//! server not ready (with no model loaded at all it is 200). `GET /v2/health/live` is 200 as
//! soon as the HTTP endpoint is up.

use serde::Deserialize;

/// The repository index; it takes a POST.
pub const REPOSITORY_INDEX_PATH: &str = "/v2/repository/index";
/// 200 when the server and all its models are ready, 400 otherwise.
pub const READY_PATH: &str = "/v2/health/ready";

/// Where a model version is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelState {
    Ready,
    Loading,
    Unloading,
    /// Failed to load, or unloaded: `reason` says which.
    Unavailable,
    Other(String),
}

impl ModelState {
    /// Triton's word for it.
    pub fn as_str(&self) -> &str {
        match self {
            ModelState::Ready => "READY",
            ModelState::Loading => "LOADING",
            ModelState::Unloading => "UNLOADING",
            ModelState::Unavailable => "UNAVAILABLE",
            ModelState::Other(word) => word,
        }
    }
}

/// One entry of the repository index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub name: String,
    /// None for a model in the repository that was never loaded.
    pub version: Option<String>,
    /// None for a model in the repository that was never loaded.
    pub state: Option<ModelState>,
    /// Why it is not ready, Triton's words (the Python traceback included).
    pub reason: Option<String>,
}

#[derive(Deserialize)]
struct ModelJson {
    name: String,
    version: Option<String>,
    state: Option<String>,
    reason: Option<String>,
}

/// Parses a `/v2/repository/index` answer.
pub fn parse_repository_index(body: &str) -> Result<Vec<Model>, String> {
    let models: Vec<ModelJson> = serde_json::from_str(body)
        .map_err(|e| format!("the repository index is not what Triton sends: {e}"))?;
    Ok(models
        .into_iter()
        .map(|m| Model {
            name: m.name,
            version: m.version.filter(|v| !v.is_empty()),
            state: m.state.filter(|s| !s.is_empty()).map(|s| match s.as_str() {
                "READY" => ModelState::Ready,
                "LOADING" => ModelState::Loading,
                "UNLOADING" => ModelState::Unloading,
                "UNAVAILABLE" => ModelState::Unavailable,
                _ => ModelState::Other(s),
            }),
            reason: m.reason.filter(|r| !r.is_empty()),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_models_are_listed_with_their_versions() {
        let body = include_str!("../../../tests/fixtures/services/triton-repository-index.json");
        let models = parse_repository_index(body).unwrap();
        assert_eq!(
            models,
            ["identity", "picky"].map(|name| Model {
                name: name.into(),
                version: Some("1".into()),
                state: Some(ModelState::Ready),
                reason: None,
            })
        );
    }

    #[test]
    fn a_model_that_failed_to_load_is_unavailable_with_the_reason() {
        let body = include_str!(
            "../../../tests/fixtures/services/triton-repository-index-unavailable.json"
        );
        let models = parse_repository_index(body).unwrap();
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].name, "broken");
        assert_eq!(models[0].state, Some(ModelState::Unavailable));
        let reason = models[0].reason.as_deref().unwrap();
        assert!(
            reason.starts_with("Internal: RuntimeError: no weights here\n"),
            "{reason}"
        );
        assert_eq!(models[1].state, Some(ModelState::Ready));
    }

    #[test]
    fn a_model_never_loaded_has_only_its_name_and_an_unloaded_one_says_so() {
        // --model-control-mode=explicit --load-model=identity, then identity unloaded.
        let body =
            include_str!("../../../tests/fixtures/services/triton-repository-index-explicit.json");
        assert_eq!(
            parse_repository_index(body).unwrap(),
            [
                Model {
                    name: "identity".into(),
                    version: Some("1".into()),
                    state: Some(ModelState::Unavailable),
                    reason: Some("unloaded".into()),
                },
                Model {
                    name: "picky".into(),
                    version: None,
                    state: None,
                    reason: None,
                },
            ]
        );
        let models = parse_repository_index(r#"[{"name":"x","version":"","state":"WARM"}]"#);
        let models = models.unwrap();
        assert_eq!(models[0].version, None);
        assert_eq!(models[0].state, Some(ModelState::Other("WARM".into())));
    }

    #[test]
    fn an_error_answer_is_not_an_index() {
        let err = parse_repository_index(r#"{"error":"Not Found"}"#).unwrap_err();
        assert!(
            err.starts_with("the repository index is not what Triton sends"),
            "{err}"
        );
    }
}
