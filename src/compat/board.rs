//! Every known image judged against this host: the best image per framework, and for each image that does not run, one that does.

use serde::Serialize;

use super::data::CompatData;
use super::engine::{judge, Level, Verdict};
use super::profile::{HostProfile, ImageProfile, ImageSource};
use super::version::Version;
use crate::pull::{CatalogEntry, Framework};

/// One image with its verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Assessment {
    pub image: ImageProfile,
    pub verdict: Verdict,
    /// The newest image of the same kind that runs here, when this one does not run cleanly.
    pub alternative: Option<String>,
}

/// The recommended image of one framework.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Best {
    pub framework: Framework,
    pub reference: String,
    pub level: Level,
    pub cuda: Option<Version>,
}

/// The whole picture for one host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Board {
    pub host: HostProfile,
    pub best: Vec<Best>,
    pub images: Vec<Assessment>,
}

/// Judges the given images (local ones first, then any others; an image whose own facts name
/// no CUDA version is judged by the one its tag names, if any), then every catalog entry not
/// already among them, and picks the best TensorFlow and PyTorch images.
pub fn assess(
    data: &CompatData,
    host: HostProfile,
    images: Vec<ImageProfile>,
    catalog: &[CatalogEntry],
) -> Board {
    let catalog_profiles: Vec<ImageProfile> =
        catalog.iter().map(ImageProfile::from_catalog).collect();
    let judged_catalog: Vec<(ImageProfile, Verdict)> = catalog_profiles
        .into_iter()
        .map(|p| {
            let v = judge(data, &host, &p);
            (p, v)
        })
        .collect();
    let mut rows: Vec<Assessment> = Vec::new();
    for mut image in images {
        image.infer_cuda_from_tag(data);
        let verdict = judge(data, &host, &image);
        rows.push(Assessment {
            alternative: None,
            image,
            verdict,
        });
    }
    for (image, verdict) in &judged_catalog {
        if !rows
            .iter()
            .any(|r| same_reference(&r.image.reference, &image.reference))
        {
            rows.push(Assessment {
                image: image.clone(),
                verdict: verdict.clone(),
                alternative: None,
            });
        }
    }
    for row in &mut rows {
        if row.verdict.image_level > Level::Runs {
            row.alternative = alternative(&row.image, &judged_catalog);
        }
    }
    let best = [Framework::Tensorflow, Framework::Pytorch]
        .into_iter()
        .filter_map(|f| best_of(f, &judged_catalog))
        .collect();
    Board {
        host,
        best,
        images: rows,
    }
}

fn same_reference(a: &str, b: &str) -> bool {
    match (
        crate::image::ImageRef::parse(a),
        crate::image::ImageRef::parse(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Newest first: framework release, then CUDA; `latest` and other words last.
fn newest_first(a: &ImageProfile, b: &ImageProfile) -> std::cmp::Ordering {
    (b.framework_release(), b.cuda).cmp(&(a.framework_release(), a.cuda))
}

fn best_of(framework: Framework, judged: &[(ImageProfile, Verdict)]) -> Option<Best> {
    let mut candidates: Vec<&(ImageProfile, Verdict)> = judged
        .iter()
        .filter(|(p, _)| p.framework == Some(framework) && p.framework_release().is_some())
        .filter(|(p, _)| !p.reference.ends_with("-jupyter"))
        .collect();
    candidates
        .sort_by(|(a, va), (b, vb)| va.image_level.cmp(&vb.image_level).then(newest_first(a, b)));
    let (profile, verdict) = candidates.first()?;
    (verdict.image_level <= Level::Compat).then(|| Best {
        framework,
        reference: profile.reference.clone(),
        level: verdict.image_level,
        cuda: profile.cuda,
    })
}

/// The newest catalog image that runs cleanly here: from the same repository when one does,
/// else of the same framework.
fn alternative(image: &ImageProfile, judged: &[(ImageProfile, Verdict)]) -> Option<String> {
    let framework = image.framework?;
    let repository = |reference: &str| {
        reference
            .rsplit_once(':')
            .map_or(reference, |(r, _)| r)
            .to_string()
    };
    let own = repository(&image.reference);
    let jupyter = image.reference.ends_with("-jupyter");
    let mut runs: Vec<&ImageProfile> = judged
        .iter()
        .filter(|(p, v)| v.image_level == Level::Runs && p.framework == Some(framework))
        .filter(|(p, _)| p.framework_release().is_some() && p.reference != image.reference)
        .filter(|(p, _)| p.reference.ends_with("-jupyter") == jupyter)
        .map(|(p, _)| p)
        .collect();
    runs.sort_by(|a, b| {
        (repository(&b.reference) == own)
            .cmp(&(repository(&a.reference) == own))
            .then(newest_first(a, b))
    });
    runs.first().map(|p| p.reference.clone())
}

impl Board {
    /// How many images of each level (host problems included, as each row shows it), for a
    /// summary line.
    pub fn counts(&self) -> [(Level, usize); 4] {
        [Level::Runs, Level::Compat, Level::Unknown, Level::WontRun].map(|l| {
            (
                l,
                self.images.iter().filter(|a| a.verdict.level == l).count(),
            )
        })
    }

    /// Whether a host-wide problem (Docker cannot hand over GPUs) keeps every image from
    /// running, so "runs here" may only be said of this driver and these GPUs.
    pub fn host_blocks(&self) -> bool {
        self.images.first().is_some_and(|a| {
            a.verdict
                .reasons
                .iter()
                .any(|r| r.scope == super::engine::Scope::Host && r.level == Level::WontRun)
        })
    }

    /// How to say that an alternative runs: "here", or only on this driver and these GPUs when
    /// the host keeps every image from getting a GPU.
    pub fn runs_where(&self) -> &'static str {
        if self.host_blocks() {
            "suits this driver and these GPUs"
        } else {
            "runs here"
        }
    }

    /// Local images only.
    pub fn local(&self) -> impl Iterator<Item = &Assessment> {
        self.images
            .iter()
            .filter(|a| a.image.source == ImageSource::Local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::profile::{GpuRuntime, HostGpu};
    use crate::pull::Catalog;

    fn h100(driver: &str, cuda: &str) -> HostProfile {
        HostProfile {
            driver: Some(driver.into()),
            cuda: Version::parse(cuda),
            gpus: vec![HostGpu {
                index: 0,
                name: "NVIDIA H100 80GB HBM3".into(),
                compute_capability: Version::parse("9.0"),
            }],
            runtime: GpuRuntime::Nvidia,
            problem: None,
        }
    }

    fn best(board: &Board, framework: Framework) -> &str {
        &board
            .best
            .iter()
            .find(|b| b.framework == framework)
            .unwrap()
            .reference
    }

    #[test]
    fn the_best_image_follows_the_driver() {
        let data = CompatData::builtin();
        let (catalog, _) = Catalog::load(None);
        let board = assess(
            &data,
            h100("580.159.04", "13.0"),
            Vec::new(),
            catalog.entries(),
        );
        assert_eq!(
            best(&board, Framework::Tensorflow),
            "tensorflow/tensorflow:2.20.0-gpu"
        );
        assert_eq!(
            best(&board, Framework::Pytorch),
            "pytorch/pytorch:2.11.0-cuda13.0-cudnn9-runtime"
        );

        let board = assess(
            &data,
            h100("535.183.01", "12.2"),
            Vec::new(),
            catalog.entries(),
        );
        assert_eq!(
            best(&board, Framework::Tensorflow),
            "tensorflow/tensorflow:2.15.0-gpu"
        );
        let tf220 = board
            .images
            .iter()
            .find(|a| a.image.reference == "tensorflow/tensorflow:2.20.0-gpu")
            .unwrap();
        assert_eq!(tf220.verdict.image_level, Level::WontRun);
        assert_eq!(
            tf220.alternative.as_deref(),
            Some("tensorflow/tensorflow:2.15.0-gpu")
        );
        let jupyter = board
            .images
            .iter()
            .find(|a| a.image.reference == "tensorflow/tensorflow:2.20.0-gpu-jupyter")
            .unwrap();
        assert_eq!(
            jupyter.alternative.as_deref(),
            Some("tensorflow/tensorflow:2.15.0-gpu-jupyter")
        );
        let ngc = board
            .images
            .iter()
            .find(|a| a.image.reference == "nvcr.io/nvidia/pytorch:25.12-py3")
            .unwrap();
        assert_eq!(
            ngc.verdict.image_level,
            Level::WontRun,
            "NVIDIA's images enforce their CUDA"
        );
    }

    #[test]
    fn a_local_image_that_names_no_cuda_is_judged_by_its_tag_and_its_own_facts_win() {
        let data = CompatData::builtin();
        let (catalog, _) = Catalog::load(None);
        let bare = crate::docker::types::ImageFacts::default();
        let with_env = crate::docker::types::ImageFacts {
            cuda: Some("12.8.1".into()),
            ..Default::default()
        };
        let local =
            |reference: &str, facts| ImageProfile::from_facts(reference, facts, ImageSource::Local);
        let board = assess(
            &data,
            h100("580.65.06", "13.0"),
            vec![
                local("lab/trainer:torch2.4-cu124", &bare),
                local("lab/trainer:cu124-but-env-says-otherwise", &with_env),
                local("lab/trainer:2.4.0", &bare),
            ],
            catalog.entries(),
        );
        let by_tag = &board.images[0];
        assert_eq!(
            (by_tag.image.cuda, by_tag.image.cuda_from_tag.as_deref()),
            (Version::parse("12.4"), Some("cu124"))
        );
        assert_eq!(by_tag.image.source, ImageSource::Local);
        assert_eq!(by_tag.verdict.image_level, Level::Runs);
        assert!(by_tag.verdict.reasons[0].text.contains(
            "inferred from the tag (`cu124`), the image's own config names no CUDA version"
        ));
        let by_env = &board.images[1];
        assert_eq!(
            (by_env.image.cuda, by_env.image.cuda_from_tag.as_deref()),
            (Version::parse("12.8.1"), None)
        );
        let unknown = &board.images[2];
        assert_eq!(
            (unknown.image.cuda, unknown.verdict.image_level),
            (None, Level::Unknown)
        );
        // PyTorch's own images: the image's facts take the CUDA version from the tag, and say so.
        let torch = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime";
        let from_tag = crate::image::image_facts(&[], &Default::default(), &[torch.into()]);
        assert_eq!(
            local(torch, &from_tag).cuda_from_tag.as_deref(),
            Some("cuda12.4")
        );
        let env = ["CUDA_VERSION=12.4.1".to_string()];
        let from_env = crate::image::image_facts(&env, &Default::default(), &[torch.into()]);
        assert_eq!(local(torch, &from_env).cuda_from_tag, None);
    }

    #[test]
    fn local_images_come_first_and_are_not_repeated_from_the_catalog() {
        let data = CompatData::builtin();
        let (catalog, _) = Catalog::load(None);
        let facts = crate::docker::types::ImageFacts {
            cuda: Some("12.3".into()),
            tensorflow: Some("2.17.0".into()),
            ..Default::default()
        };
        let local = ImageProfile::from_facts(
            "tensorflow/tensorflow:2.17.0-gpu",
            &facts,
            ImageSource::Local,
        );
        let board = assess(
            &data,
            h100("580.159.04", "13.0"),
            vec![local],
            catalog.entries(),
        );
        assert_eq!(board.images[0].image.source, ImageSource::Local);
        let copies = board
            .images
            .iter()
            .filter(|a| a.image.reference.ends_with("tensorflow:2.17.0-gpu"))
            .count();
        assert_eq!(copies, 1);
        assert_eq!(
            board.counts().iter().map(|(_, n)| n).sum::<usize>(),
            board.images.len()
        );
    }
}
