//! The CUDA (and cuDNN) version an image's tag names (`pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime`, `…-cu124`, `nvidia/cuda:12.4.1-…`), for images whose own config cannot be read or names none.

use serde::Serialize;

use super::data::CompatData;
use super::version::Version;
use crate::image::ImageRef;
use crate::pull::Framework;

/// What a tag says about an image. A guess from a name, never as sure as the image's own
/// `CUDA_VERSION`: verdicts built on it say so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TagFacts {
    /// The CUDA release the tag names (`12.4`, `12.4.1`), one the CUDA tables know.
    pub cuda: Version,
    /// The piece of the tag that names it (`cuda12.4`, `cu124`, `12.4.1`).
    pub written: String,
    /// The cuDNN major (or version) when the tag says it (`cudnn9`).
    pub cudnn: Option<String>,
    /// `pytorch/pytorch` is PyTorch and `*/cuda` NVIDIA's CUDA image; other names say nothing.
    pub framework: Option<Framework>,
    pub framework_version: Option<String>,
}

/// Reads the CUDA version out of an image's tag, in these forms only:
/// - a tag piece `cuda12.4`, `cuda11.8.0` or `cuda-12.4` (pieces are split at `-` and `_`);
/// - a tag piece `cu124` (`cu` and three digits: major of two digits, then the minor), as
///   PyTorch's wheel indexes and many image builders write it;
/// - the leading version of a tag of a repository named `cuda` (`nvidia/cuda:12.4.1-…`).
///
/// A major alone (`cuda12`) says too little, and a version the CUDA tables do not list
/// (`cuda99`) is no CUDA release: both give `None`, as do tags that merely hold numbers
/// (`pytorch:2.4.0`, `cuda-python:12`).
pub fn read_tag(image: &ImageRef, data: &CompatData) -> Option<TagFacts> {
    let tag = image.tag()?;
    let pieces: Vec<&str> = tag.split(['-', '_']).collect();
    let repository = image.repository();
    let named_cuda = repository.rsplit('/').next() == Some("cuda");
    let (cuda, written) = if named_cuda {
        let first = pieces.first()?;
        (strict_version(first)?, first.to_string())
    } else {
        cuda_piece(&pieces)?
    };
    data.release(cuda)?;
    let cudnn = pieces.iter().find_map(|p| {
        p.strip_prefix("cudnn")
            .filter(|rest| strict_number(rest))
            .map(str::to_string)
    });
    let (framework, framework_version) = if named_cuda {
        (Some(Framework::Cuda), Some(written.clone()))
    } else if repository == "pytorch/pytorch" {
        let release = pieces
            .first()
            .filter(|p| strict_version(p).is_some())
            .map(|p| p.to_string());
        (Some(Framework::Pytorch), release)
    } else {
        (None, None)
    };
    Some(TagFacts {
        cuda,
        written,
        cudnn,
        framework,
        framework_version,
    })
}

/// The first piece naming a CUDA version, and how it is written.
fn cuda_piece(pieces: &[&str]) -> Option<(Version, String)> {
    pieces.iter().enumerate().find_map(|(i, piece)| {
        if let Some(rest) = piece.strip_prefix("cuda") {
            if rest.is_empty() {
                let next = pieces.get(i + 1)?;
                return strict_version(next).map(|v| (v, format!("cuda-{next}")));
            }
            return strict_version(rest).map(|v| (v, piece.to_string()));
        }
        let digits = piece.strip_prefix("cu")?;
        if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let major: u32 = digits[..2].parse().ok()?;
        let minor: u32 = digits[2..].parse().ok()?;
        Some((Version::new(major, minor), piece.to_string()))
    })
}

/// `12.4` or `12.4.1`: two or three dot-separated numbers and nothing else.
fn strict_version(text: &str) -> Option<Version> {
    let parts: Vec<&str> = text.split('.').collect();
    let numeric = parts.iter().all(|p| strict_number(p));
    ((2..=3).contains(&parts.len()) && numeric)
        .then(|| Version::parse(text))
        .flatten()
}

/// Digits, dotted at most between them (`9`, `8.9`): a cuDNN piece's version, or one version part.
fn strict_number(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && !text.starts_with('.')
        && !text.ends_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(reference: &str) -> Option<TagFacts> {
        let data = CompatData::builtin();
        read_tag(&ImageRef::parse(reference).unwrap(), &data)
    }

    /// (CUDA as read, how the tag wrote it, cuDNN).
    fn cuda_of(reference: &str) -> Option<(String, String, Option<String>)> {
        read(reference).map(|t| (t.cuda.to_string(), t.written, t.cudnn))
    }

    fn some(
        cuda: &str,
        written: &str,
        cudnn: Option<&str>,
    ) -> Option<(String, String, Option<String>)> {
        Some((cuda.into(), written.into(), cudnn.map(str::to_string)))
    }

    #[test]
    fn the_tag_forms_people_use_name_their_cuda() {
        assert_eq!(
            cuda_of("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"),
            some("12.4", "cuda12.4", Some("9"))
        );
        assert_eq!(
            cuda_of("pytorch/pytorch:1.13.1-cuda11.6-cudnn8-devel"),
            some("11.6", "cuda11.6", Some("8"))
        );
        assert_eq!(
            cuda_of("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04"),
            some("12.4.1", "12.4.1", None)
        );
        assert_eq!(
            cuda_of("nvcr.io/nvidia/cuda:11.8.0-devel-ubuntu22.04"),
            some("11.8.0", "11.8.0", None)
        );
        assert_eq!(
            cuda_of("lab.example:5000/team/trainer:torch2.4-cu124-py310"),
            some("12.4", "cu124", None)
        );
        assert_eq!(
            cuda_of("ghcr.io/someone/llm:cuda11.8.0-ubuntu22.04"),
            some("11.8.0", "cuda11.8.0", None)
        );
        assert_eq!(
            cuda_of("someone/image:cuda-12.8-runtime"),
            some("12.8", "cuda-12.8", None)
        );
        assert_eq!(
            cuda_of("someone/image:v0.9.2_cu128"),
            some("12.8", "cu128", None)
        );
        assert_eq!(cuda_of("someone/image:cu130"), some("13.0", "cu130", None));
    }

    #[test]
    fn the_framework_is_named_only_where_the_repository_says_it() {
        let torch = read("pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime").unwrap();
        assert_eq!(
            (torch.framework, torch.framework_version.as_deref()),
            (Some(Framework::Pytorch), Some("2.5.1"))
        );
        let cuda = read("nvidia/cuda:12.6.3-base-ubuntu24.04").unwrap();
        assert_eq!(
            (cuda.framework, cuda.framework_version.as_deref()),
            (Some(Framework::Cuda), Some("12.6.3"))
        );
        let other = read("vllm/vllm-openai:v0.9.2-cu128").unwrap();
        assert_eq!((other.framework, other.framework_version), (None, None));
    }

    #[test]
    fn tags_that_merely_hold_numbers_are_not_misread() {
        for reference in [
            // A framework's own version is no CUDA version.
            "pytorch/pytorch:2.4.0",
            "pytorch/pytorch:latest",
            "tensorflow/tensorflow:2.17.0-gpu",
            "nvcr.io/nvidia/pytorch:24.05-py3",
            "nvcr.io/nvidia/nemo:24.07",
            // A repository whose name holds `cuda` but is not NVIDIA's CUDA image.
            "nvidia/cuda-python:12.4",
            "someone/cuda-python:latest",
            "someone/image:cuda-python",
            // A major alone, a made-up release, and lookalike pieces.
            "someone/image:cuda12",
            "someone/image:cuda99.1",
            "someone/image:cu99",
            "someone/image:cu1241",
            "someone/image:cuda12.4rc1",
            "someone/image:cudnn9-runtime",
            "someone/image:cuda12..4",
            "nvidia/cuda:latest",
            "nvidia/cuda:12",
            // No tag at all: a digest.
            "nvidia/cuda@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(read(reference), None, "{reference}");
        }
    }
}
