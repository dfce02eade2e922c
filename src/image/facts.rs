//! What an image says it carries (CUDA, cuDNN, TensorFlow, PyTorch), from its env, labels and tags.

use std::collections::BTreeMap;

use serde::Serialize;

/// What an image says it carries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImageFacts {
    /// e.g. "12.4.1", from `CUDA_VERSION` (or a known tag).
    pub cuda: Option<String>,
    /// e.g. "9.1.0.70", from `NV_CUDNN_VERSION` / `CUDNN_VERSION`.
    pub cudnn: Option<String>,
    /// The raw `NVIDIA_REQUIRE_CUDA` constraint (driver branches for forward compatibility).
    pub require_cuda: Option<String>,
    pub tensorflow: Option<String>,
    pub pytorch: Option<String>,
    /// Where each fact came from, e.g. "env CUDA_VERSION", "label ...", "tag".
    pub sources: Vec<String>,
}

/// Reads CUDA / cuDNN / framework versions from an image. Precedence: the image's own env (what
/// NVIDIA's and NGC's images set), then labels (NGC's `com.nvidia.*.version`), then the tag of a
/// well-known repository (`pytorch/pytorch`, `tensorflow/tensorflow`, `nvidia/cuda`).
pub fn image_facts(
    env: &[String],
    labels: &BTreeMap<String, String>,
    tags: &[String],
) -> ImageFacts {
    let mut finder = Finder {
        env: env.iter().filter_map(|e| e.split_once('=')).collect(),
        labels,
        tags: tags
            .iter()
            .filter_map(|t| tag_facts(t).map(|f| (t.as_str(), f)))
            .collect(),
        sources: Vec::new(),
    };
    let cuda = finder.pick(&["CUDA_VERSION"], &["com.nvidia.cuda.version"], |f| &f.cuda);
    let cudnn = finder.pick(
        &["NV_CUDNN_VERSION", "CUDNN_VERSION"],
        &["com.nvidia.cudnn.version"],
        |f| &f.cudnn,
    );
    let require_cuda = finder.pick(&["NVIDIA_REQUIRE_CUDA"], &[], |_| &None);
    let tensorflow = finder.pick(
        &["TF_VERSION", "TENSORFLOW_VERSION"],
        &["com.nvidia.tensorflow.version"],
        |f| &f.tensorflow,
    );
    let pytorch = finder.pick(&["PYTORCH_VERSION"], &["com.nvidia.pytorch.version"], |f| {
        &f.pytorch
    });
    ImageFacts {
        cuda,
        cudnn,
        require_cuda,
        tensorflow,
        pytorch,
        sources: finder.sources,
    }
}

/// Looks a fact up in env, labels and tags, in that order, noting where it was found.
struct Finder<'a> {
    env: BTreeMap<&'a str, &'a str>,
    labels: &'a BTreeMap<String, String>,
    tags: Vec<(&'a str, TagFacts)>,
    sources: Vec<String>,
}

impl Finder<'_> {
    fn pick(
        &mut self,
        env_keys: &[&str],
        label_keys: &[&str],
        tag: fn(&TagFacts) -> &Option<String>,
    ) -> Option<String> {
        let (value, source) = first_env(&self.env, env_keys)
            .or_else(|| first_label(self.labels, label_keys))
            .or_else(|| {
                self.tags.iter().find_map(|(name, facts)| {
                    tag(facts).clone().map(|v| (v, format!("tag {name}")))
                })
            })?;
        if !self.sources.contains(&source) {
            self.sources.push(source);
        }
        Some(value)
    }
}

fn first_env(env: &BTreeMap<&str, &str>, keys: &[&str]) -> Option<(String, String)> {
    keys.iter().find_map(|key| {
        let value = env.get(key)?.trim();
        (!value.is_empty()).then(|| (value.to_string(), format!("env {key}")))
    })
}

fn first_label(labels: &BTreeMap<String, String>, keys: &[&str]) -> Option<(String, String)> {
    keys.iter().find_map(|key| {
        let value = labels.get(*key)?.trim();
        (!value.is_empty()).then(|| (value.to_string(), format!("label {key}")))
    })
}

/// Versions a well-known repository writes into its tags.
#[derive(Debug, Default, PartialEq)]
struct TagFacts {
    cuda: Option<String>,
    cudnn: Option<String>,
    tensorflow: Option<String>,
    pytorch: Option<String>,
}

fn tag_facts(name: &str) -> Option<TagFacts> {
    let (repo, tag) = split_tag(name)?;
    let mut parts = tag.split('-');
    let version = parts
        .next()
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string);
    let mut facts = TagFacts::default();
    let rest: Vec<&str> = parts.collect();
    let tagged = |prefix: &str| {
        rest.iter()
            .find_map(|p| p.strip_prefix(prefix))
            .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            .map(str::to_string)
    };
    if repo_is(repo, "pytorch/pytorch") {
        facts.pytorch = version;
        facts.cudnn = tagged("cudnn");
        facts.cuda = rest
            .iter()
            .filter(|p| !p.starts_with("cudnn"))
            .find_map(|p| p.strip_prefix("cuda"))
            .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            .map(str::to_string);
    } else if repo_is(repo, "tensorflow/tensorflow") {
        facts.tensorflow = version;
    } else if repo_is(repo, "nvidia/cuda") {
        facts.cuda = version;
        facts.cudnn = tagged("cudnn");
    } else {
        return None;
    }
    Some(facts)
}

/// `repo` and `tag` of `[registry[:port]/]path:tag`; `None` without a tag (or with a digest only).
fn split_tag(name: &str) -> Option<(&str, &str)> {
    let name = name.split('@').next()?;
    let (repo, tag) = name.rsplit_once(':')?;
    (!tag.contains('/')).then_some((repo, tag))
}

/// Whether `repo` is `path` on Docker Hub or on any registry or mirror.
fn repo_is(repo: &str, path: &str) -> bool {
    repo == path
        || repo
            .strip_suffix(path)
            .is_some_and(|registry| registry.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn facts(env: &[&str], labels: &[(&str, &str)], tags: &[&str]) -> ImageFacts {
        let labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        image_facts(&strings(env), &labels, &strings(tags))
    }

    #[test]
    fn env_labels_and_tags_in_order_of_authority() {
        // The facts, the expected [cuda, cudnn, tensorflow, pytorch], the expected sources.
        type Case = (ImageFacts, [Option<&'static str>; 4], Vec<&'static str>);
        let cases: Vec<Case> = vec![
            (
                facts(
                    &["CUDA_VERSION=12.4.1", "NV_CUDNN_VERSION=9.1.0.70"],
                    &[],
                    &[],
                ),
                [Some("12.4.1"), Some("9.1.0.70"), None, None],
                vec!["env CUDA_VERSION", "env NV_CUDNN_VERSION"],
            ),
            (
                facts(
                    &["CUDNN_VERSION=8.9.7"],
                    &[("com.nvidia.cuda.version", "12.3.2")],
                    &[],
                ),
                [Some("12.3.2"), Some("8.9.7"), None, None],
                vec!["label com.nvidia.cuda.version", "env CUDNN_VERSION"],
            ),
            (
                facts(&[], &[], &["pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"]),
                [Some("12.4"), Some("9"), None, Some("2.5.1")],
                vec!["tag pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"],
            ),
            (
                facts(
                    &["PYTORCH_VERSION=2.4.0a0+07cecf4", "CUDA_VERSION=12.4.1.003"],
                    &[],
                    &["nvcr.io/nvidia/pytorch:24.05-py3"],
                ),
                [Some("12.4.1.003"), None, None, Some("2.4.0a0+07cecf4")],
                vec!["env CUDA_VERSION", "env PYTORCH_VERSION"],
            ),
            (
                facts(&[], &[], &["tensorflow/tensorflow:2.17.0-gpu-jupyter"]),
                [None, None, Some("2.17.0"), None],
                vec!["tag tensorflow/tensorflow:2.17.0-gpu-jupyter"],
            ),
            (
                facts(
                    &["TF_VERSION=2.15.0"],
                    &[],
                    &["tensorflow/tensorflow:latest-gpu"],
                ),
                [None, None, Some("2.15.0"), None],
                vec!["env TF_VERSION"],
            ),
            (
                facts(
                    &[],
                    &[],
                    &["localhost:5000/nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04"],
                ),
                [Some("12.4.1"), None, None, None],
                vec!["tag localhost:5000/nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04"],
            ),
            (
                facts(
                    &["PATH=/bin"],
                    &[],
                    &["notpytorch/pytorch:2.5.1-cuda12.4", "busybox:1.36"],
                ),
                [None, None, None, None],
                vec![],
            ),
        ];
        for (got, [cuda, cudnn, tf, torch], sources) in cases {
            assert_eq!(got.cuda.as_deref(), cuda, "{got:?}");
            assert_eq!(got.cudnn.as_deref(), cudnn, "{got:?}");
            assert_eq!(got.tensorflow.as_deref(), tf, "{got:?}");
            assert_eq!(got.pytorch.as_deref(), torch, "{got:?}");
            assert_eq!(got.sources, sources, "{got:?}");
        }
    }

    #[test]
    fn env_beats_the_tag() {
        let got = facts(
            &["PYTORCH_VERSION=2.5.1+cu124"],
            &[],
            &["pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"],
        );
        assert_eq!(got.pytorch.as_deref(), Some("2.5.1+cu124"));
        assert_eq!(got.cuda.as_deref(), Some("12.4"));
        assert_eq!(
            got.sources,
            vec![
                "tag pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
                "env PYTORCH_VERSION"
            ]
        );
    }

    #[test]
    fn nvidia_cuda_13_image_env() {
        let text = include_str!("../../tests/fixtures/h100-host/image_env_cuda13");
        let env: Vec<String> = text.lines().map(str::to_string).collect();
        let got = image_facts(&env, &BTreeMap::new(), &[]);
        assert_eq!(got.cuda.as_deref(), Some("13.0.2"));
        let require = got.require_cuda.unwrap_or_default();
        assert!(require.starts_with("cuda>=13.0 brand=unknown,driver>=535,driver<536"));
        assert_eq!(
            got.sources,
            vec!["env CUDA_VERSION", "env NVIDIA_REQUIRE_CUDA"]
        );
    }
}
