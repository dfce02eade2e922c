//! The catalog of GPU framework images (TensorFlow, PyTorch, NGC, CUDA bases) as data, with user files layered over it.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::layer::{located, located_toml_error, position, user_toml_files};
use crate::image::ImageRef;

/// The built-in catalog files, by name: data, not code (`assets/catalog/*.toml`).
pub const BUILTIN_FILES: [(&str, &str); 6] = [
    (
        "tensorflow.toml",
        include_str!("../../assets/catalog/tensorflow.toml"),
    ),
    (
        "pytorch.toml",
        include_str!("../../assets/catalog/pytorch.toml"),
    ),
    ("ngc.toml", include_str!("../../assets/catalog/ngc.toml")),
    ("cuda.toml", include_str!("../../assets/catalog/cuda.toml")),
    (
        "triton.toml",
        include_str!("../../assets/catalog/triton.toml"),
    ),
    ("nemo.toml", include_str!("../../assets/catalog/nemo.toml")),
];

/// What an image is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    Tensorflow,
    Pytorch,
    Cuda,
    /// NVIDIA's Triton Inference Server: a model server, not a training framework.
    Triton,
    /// NVIDIA's NeMo Framework containers (`nvcr.io/nvidia/nemo`): NeMo, Megatron-Bridge and
    /// their stack over an NGC PyTorch container; the version is the container release.
    Nemo,
}

impl Framework {
    /// The name as its makers write it.
    pub fn label(self) -> &'static str {
        match self {
            Framework::Tensorflow => "TensorFlow",
            Framework::Pytorch => "PyTorch",
            Framework::Cuda => "CUDA",
            Framework::Triton => "Triton Inference Server",
            Framework::Nemo => "NeMo Framework",
        }
    }
}

/// One known image and what it carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CatalogEntry {
    /// The reference as the catalog writes it.
    pub reference: String,
    /// The same, parsed and normalised.
    #[serde(skip)]
    pub image: ImageRef,
    pub framework: Framework,
    pub framework_version: String,
    /// The CUDA version the image is built with (`12.4.1`, or `12.5` where only that is known).
    pub cuda: String,
    pub cudnn: Option<String>,
    pub python: Option<String>,
    /// `gpu`, `gpu-jupyter`, `runtime`, `devel`, `base`, `cudnn-runtime`, `ngc`.
    pub variant: String,
    pub notes: String,
    /// The file the entry came from: a built-in name or a user path.
    pub origin: String,
}

/// A catalog file: where its facts come from, when they were read, and the images.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    source: String,
    date: String,
    #[serde(default)]
    image: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    reference: toml::Spanned<String>,
    framework: Framework,
    framework_version: String,
    cuda: String,
    cudnn: Option<String>,
    python: Option<String>,
    variant: String,
    #[serde(default)]
    notes: String,
}

/// Where one catalog file's facts come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CatalogSource {
    /// The file: a built-in name or a user path.
    pub origin: String,
    /// The documents the facts were read from.
    pub source: String,
    /// When they were read.
    pub date: String,
}

/// The images gpudeck knows, built-in entries first, each reference once.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    entries: Vec<CatalogEntry>,
    sources: Vec<CatalogSource>,
}

impl Catalog {
    /// The built-in catalog with every `*.toml` in `user_dir` (normally `<config_dir>/catalog`)
    /// layered over it in name order: a user entry replaces the entry with the same reference,
    /// or is added. A user file that does not parse is skipped with a `path:line:col: reason`
    /// warning; a missing `user_dir` is no warning.
    pub fn load(user_dir: Option<&Path>) -> (Catalog, Vec<String>) {
        let mut catalog = Catalog::default();
        let mut warnings = Vec::new();
        for (name, text) in BUILTIN_FILES {
            match parse_file(text, name) {
                Ok(parsed) => catalog.layer(parsed),
                Err(reason) => {
                    warnings.push(format!("built-in catalog {reason} (a bug in gpudeck)"))
                }
            }
        }
        if let Some(dir) = user_dir {
            catalog.layer_user_dir(dir, &mut warnings);
        }
        (catalog, warnings)
    }

    /// Every entry, built-in ones in file order, then user additions.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// The entries for one framework, in catalog order.
    pub fn by_framework(&self, framework: Framework) -> impl Iterator<Item = &CatalogEntry> {
        self.entries
            .iter()
            .filter(move |e| e.framework == framework)
    }

    /// The entry for a reference written any equivalent way (`ubuntu` = `docker.io/library/ubuntu:latest`).
    pub fn find(&self, reference: &str) -> Option<&CatalogEntry> {
        let image = ImageRef::parse(reference).ok()?;
        self.find_image(&image)
    }

    /// The entry for an already parsed reference.
    pub fn find_image(&self, image: &ImageRef) -> Option<&CatalogEntry> {
        self.entries.iter().find(|e| &e.image == image)
    }

    /// Where each loaded file's facts come from, in load order.
    pub fn sources(&self) -> &[CatalogSource] {
        &self.sources
    }

    fn layer(&mut self, (source, entries): (CatalogSource, Vec<CatalogEntry>)) {
        self.sources.push(source);
        let mut index: HashMap<ImageRef, usize> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.image.clone(), i))
            .collect();
        for entry in entries {
            match index.get(&entry.image) {
                Some(&i) => self.entries[i] = entry,
                None => {
                    index.insert(entry.image.clone(), self.entries.len());
                    self.entries.push(entry);
                }
            }
        }
    }

    fn layer_user_dir(&mut self, dir: &Path, warnings: &mut Vec<String>) {
        for (shown, text) in user_toml_files(dir, warnings) {
            match parse_file(&text, &shown) {
                Ok(parsed) => self.layer(parsed),
                Err(warning) => warnings.push(format!("{warning}; the file is skipped")),
            }
        }
    }
}

/// Parses one catalog file; the error is `origin:line:col: reason`.
fn parse_file(text: &str, origin: &str) -> Result<(CatalogSource, Vec<CatalogEntry>), String> {
    let file: CatalogFile =
        toml::from_str(text).map_err(|e| located_toml_error(origin, text, &e))?;
    let source = CatalogSource {
        origin: origin.to_string(),
        source: file.source,
        date: file.date,
    };
    let entries = file
        .image
        .into_iter()
        .map(|raw| {
            let image = ImageRef::parse(raw.reference.get_ref()).map_err(|e| {
                let position = position(text, raw.reference.span().start);
                located(origin, Some(position), &format!("invalid reference: {e}"))
            })?;
            Ok(CatalogEntry {
                reference: raw.reference.into_inner(),
                image,
                framework: raw.framework,
                framework_version: raw.framework_version,
                cuda: raw.cuda,
                cudnn: raw.cudnn,
                python: raw.python,
                variant: raw.variant,
                notes: raw.notes,
                origin: origin.to_string(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((source, entries))
}

#[cfg(test)]
mod tests {
    //! The built-in catalog's data, and user files layered over it.

    use super::*;

    fn builtin() -> Catalog {
        let (catalog, warnings) = Catalog::load(None);
        assert!(warnings.is_empty(), "{warnings:?}");
        catalog
    }

    fn user_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    const HEADER: &str = "source = \"mine\"\ndate = \"2026-11-22\"\n";

    #[test]
    fn every_builtin_file_loads_with_its_source_and_date() {
        let catalog = builtin();
        assert_eq!(catalog.sources().len(), BUILTIN_FILES.len());
        for source in catalog.sources() {
            assert!(
                !source.source.is_empty() && source.date.len() == 10,
                "{source:?}"
            );
        }
        for (name, text) in BUILTIN_FILES {
            let first = text.lines().next().unwrap_or_default();
            assert!(
                first.starts_with("# "),
                "{name} starts with a comment saying what it holds"
            );
            assert!(
                text.contains("# Source:") && text.contains("# Date:"),
                "{name} names its source and date at the top"
            );
        }
    }

    #[test]
    fn references_are_unique_and_canonical_forms_differ() {
        let catalog = builtin();
        let mut seen = std::collections::HashSet::new();
        for entry in catalog.entries() {
            assert!(
                seen.insert(entry.image.to_string()),
                "{} is listed twice",
                entry.reference
            );
            assert_eq!(catalog.find(&entry.reference), Some(entry));
        }
    }

    #[test]
    fn tensorflow_covers_2_4_to_2_20_with_tested_cuda() {
        let catalog = builtin();
        let cuda_of = |tag: &str| {
            let entry = catalog
                .find(&format!("tensorflow/tensorflow:{tag}"))
                .unwrap_or_else(|| panic!("tensorflow {tag} missing"));
            (entry.cuda.clone(), entry.cudnn.clone().unwrap_or_default())
        };
        assert_eq!(cuda_of("2.4.0-gpu"), ("11.0".into(), "8.0".into()));
        assert_eq!(cuda_of("2.11.0-gpu-jupyter"), ("11.2".into(), "8.1".into()));
        assert_eq!(cuda_of("2.13.0-gpu"), ("11.8".into(), "8.6".into()));
        assert_eq!(cuda_of("2.14.0-gpu"), ("11.8".into(), "8.7".into()));
        assert_eq!(cuda_of("2.15.0-gpu"), ("12.2".into(), "8.9".into()));
        assert_eq!(cuda_of("2.17.0-gpu"), ("12.3".into(), "8.9".into()));
        assert_eq!(cuda_of("2.20.0-gpu"), ("12.5".into(), "9.3".into()));
        assert!(catalog.find("tensorflow/tensorflow:latest-gpu").is_some());
        for minor in 4..=20 {
            let has_minor = catalog.by_framework(Framework::Tensorflow).any(|e| {
                e.framework_version.starts_with(&format!("2.{minor}.")) && e.variant == "gpu"
            });
            assert!(has_minor, "no TensorFlow 2.{minor} gpu image");
        }
        // Every versioned `-gpu` tag has its `-gpu-jupyter` twin, with the same CUDA and cuDNN.
        for gpu in catalog
            .by_framework(Framework::Tensorflow)
            .filter(|e| e.variant == "gpu" && e.framework_version != "latest")
        {
            let jupyter = catalog
                .find(&format!("{}-jupyter", gpu.reference))
                .unwrap_or_else(|| panic!("no -gpu-jupyter tag for {}", gpu.reference));
            assert_eq!(
                (jupyter.variant.as_str(), &jupyter.cuda, &jupyter.cudnn),
                ("gpu-jupyter", &gpu.cuda, &gpu.cudnn)
            );
        }
    }

    #[test]
    fn ngc_entries() {
        let catalog = builtin();
        let ngc = catalog.find("nvcr.io/nvidia/pytorch:24.05-py3").unwrap();
        assert_eq!(
            (ngc.framework, ngc.cuda.as_str()),
            (Framework::Pytorch, "12.4.1")
        );
        assert_eq!(
            catalog
                .find("nvcr.io/nvidia/pytorch:25.01-py3")
                .unwrap()
                .cuda,
            "12.8.0"
        );
        assert_eq!(
            catalog
                .find("nvcr.io/nvidia/pytorch:25.12-py3")
                .unwrap()
                .cuda,
            "13.1.0"
        );
        let newest_tf_ngc = catalog
            .by_framework(Framework::Tensorflow)
            .filter(|e| e.image.registry() == Some("nvcr.io"))
            .filter_map(|e| e.image.tag().map(str::to_string))
            .max();
        assert!(
            newest_tf_ngc.is_some_and(|t| t.as_str() <= "25.02"),
            "NGC TensorFlow ended at 25.02"
        );
    }

    /// The `YY.MM` months on ngc.toml's header line starting `# Not found, {name}:` and the
    /// `#   ` lines that continue it.
    fn ngc_months_left_out(name: &str) -> Vec<String> {
        let text = BUILTIN_FILES
            .iter()
            .find(|(file, _)| *file == "ngc.toml")
            .map(|(_, text)| *text)
            .unwrap();
        let marker = format!("# Not found, {name}:");
        let mut lines = text.lines().skip_while(|l| !l.starts_with(&marker));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("ngc.toml's header has no `{marker}` line"));
        std::iter::once(&first[marker.len()..])
            .chain(lines.map_while(|l| l.strip_prefix("#   ")))
            .flat_map(str::split_whitespace)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn ngc_header_names_every_month_it_leaves_out() {
        // From 23.01 on, each monthly NGC PyTorch and TensorFlow release is either in the
        // catalog (its notes were read) or named in the header as not found, never both.
        let catalog = builtin();
        for (name, repository, suffix, last) in [
            ("PyTorch", "pytorch", "py3", (25, 12)),
            ("TensorFlow", "tensorflow", "tf2-py3", (25, 2)),
        ] {
            let left_out = ngc_months_left_out(name);
            let mut months = Vec::new();
            for year in 23..=last.0 {
                let end = if year == last.0 { last.1 } else { 12 };
                months.extend((1..=end).map(|month| format!("{year}.{month:02}")));
            }
            for month in &months {
                let reference = format!("nvcr.io/nvidia/{repository}:{month}-{suffix}");
                let listed = catalog.find(&reference).is_some();
                let named = left_out.contains(month);
                assert!(
                    listed != named,
                    "{reference}: in the catalog {listed}, named as not found {named}"
                );
            }
            for month in &left_out {
                assert!(
                    months.contains(month),
                    "{name} {month} is not a release month"
                );
            }
        }
        assert!(ngc_months_left_out("PyTorch").contains(&"23.05".to_string()));
        assert!(ngc_months_left_out("TensorFlow").contains(&"25.02".to_string()));
    }

    #[test]
    fn triton_entries_carry_the_cuda_of_their_release_notes() {
        let catalog = builtin();
        let cuda_of = |release: &str| {
            let entry = catalog
                .find(&format!("nvcr.io/nvidia/tritonserver:{release}-py3"))
                .unwrap_or_else(|| panic!("Triton {release} missing"));
            assert_eq!(
                (entry.framework, entry.framework_version.as_str()),
                (Framework::Triton, release)
            );
            assert_eq!(entry.origin, "triton.toml");
            entry.cuda.clone()
        };
        assert_eq!(cuda_of("26.02"), "13.1.1");
        assert_eq!(cuda_of("25.10"), "13.0.2");
        assert_eq!(cuda_of("25.08"), "13.0.0");
        assert_eq!(cuda_of("25.06"), "12.9.1");
        assert_eq!(cuda_of("25.04"), "12.9.0");
        assert_eq!(cuda_of("25.03"), "12.8.1");
        assert_eq!(cuda_of("25.01"), "12.8.0");
        assert_eq!(cuda_of("24.12"), "12.6.3");
        assert_eq!(cuda_of("24.10"), "12.6.2");
        assert_eq!(cuda_of("24.08"), "12.6");
        assert_eq!(cuda_of("24.07"), "12.5.1");
        assert_eq!(cuda_of("24.05"), "12.4");
        assert_eq!(cuda_of("24.04"), "12.4");
        assert_eq!(cuda_of("24.03"), "12.4.0");
        assert_eq!(cuda_of("24.01"), "12.3.2");
        assert_eq!(cuda_of("23.12"), "12.3.2");
        assert_eq!(cuda_of("23.10"), "12.2.2");
        assert_eq!(cuda_of("23.09"), "12.2.1");
        assert_eq!(cuda_of("23.08"), "12.2.1");
        for release in ["23.07", "23.06", "23.05"] {
            assert_eq!(cuda_of(release), "12.1.1", "{release}");
        }
        assert_eq!(cuda_of("23.04"), "12.1.0");
        assert_eq!(cuda_of("23.03"), "12.1.0");
        assert_eq!(catalog.by_framework(Framework::Triton).count(), 24);
        // Releases whose notes were not read stay out: a gap, not a guess.
        for release in ["23.01", "23.02", "23.11", "24.06", "25.05", "26.08"] {
            let reference = format!("nvcr.io/nvidia/tritonserver:{release}-py3");
            assert!(catalog.find(&reference).is_none(), "{reference}");
        }
        assert_eq!(Framework::Triton.label(), "Triton Inference Server");
    }

    #[test]
    fn nemo_entries_carry_the_cuda_of_their_component_tables() {
        let catalog = builtin();
        let cuda_of = |release: &str| {
            let entry = catalog
                .find(&format!("nvcr.io/nvidia/nemo:{release}"))
                .unwrap_or_else(|| panic!("NeMo Framework {release} missing"));
            assert_eq!(
                (entry.framework, entry.framework_version.as_str()),
                (Framework::Nemo, release)
            );
            assert_eq!(
                (entry.origin.as_str(), entry.variant.as_str()),
                ("nemo.toml", "ngc")
            );
            (entry.cuda.clone(), entry.cudnn.clone().unwrap_or_default())
        };
        assert_eq!(cuda_of("26.06"), ("13.2.1".into(), "9.21.1.3".into()));
        assert_eq!(cuda_of("26.04"), ("13.1.1".into(), "9.20.0.48".into()));
        assert_eq!(cuda_of("26.02"), ("13.0.2".into(), "9.18.0.50".into()));
        assert_eq!(cuda_of("25.11"), ("13.0.1".into(), "9.13.1.26".into()));
        assert_eq!(cuda_of("25.09"), ("12.9.1".into(), "9.11.0.98".into()));
        assert_eq!(catalog.by_framework(Framework::Nemo).count(), 5);
        assert_eq!(Framework::Nemo.label(), "NeMo Framework");
        // Tags the component tables do not cover stay out: a gap, not a guess.
        assert!(catalog.find("nvcr.io/nvidia/nemo:26.06.01").is_none());
        assert!(catalog.find("nvcr.io/nvidia/nemo:25.07").is_none());
        let text = BUILTIN_FILES
            .iter()
            .find(|(name, _)| *name == "triton.toml")
            .unwrap()
            .1;
        assert!(
            !text.contains("NeMo"),
            "triton.toml no longer speaks for NeMo"
        );
    }

    #[test]
    fn pytorch_and_cuda_base_entries() {
        let catalog = builtin();
        let pt = catalog
            .find("pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime")
            .unwrap();
        assert_eq!((pt.cuda.as_str(), pt.cudnn.as_deref()), ("12.8", Some("9")));
        assert!(catalog
            .find("pytorch/pytorch:2.11.0-cuda13.0-cudnn9-devel")
            .is_some());
        assert!(catalog
            .find("pytorch/pytorch:2.8.0-cuda11.8-cudnn9-runtime")
            .is_none());

        let cuda = catalog
            .find("docker.io/nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04")
            .unwrap();
        assert_eq!(
            (cuda.framework, cuda.variant.as_str()),
            (Framework::Cuda, "cudnn-runtime")
        );
        for variant in ["base", "runtime", "cudnn-runtime", "devel"] {
            assert!(
                catalog
                    .by_framework(Framework::Cuda)
                    .any(|e| e.variant == variant && e.reference.ends_with("ubuntu24.04")),
                "no {variant} image on Ubuntu 24.04"
            );
        }
    }

    #[test]
    fn user_files_replace_and_add_entries() {
        let replace = format!(
        "{HEADER}[[image]]\nreference = \"docker.io/tensorflow/tensorflow:2.17.0-gpu\"\nframework = \"tensorflow\"\n\
         framework_version = \"2.17.0\"\ncuda = \"12.3.2\"\nvariant = \"gpu\"\nnotes = \"site mirror\"\n\n\
         [[image]]\nreference = \"registry.lab:5000/team/train:v3\"\nframework = \"pytorch\"\n\
         framework_version = \"2.9.0\"\ncuda = \"12.8\"\npython = \"3.12\"\nvariant = \"runtime\"\n"
    );
        let dir = user_dir(&[("site.toml", &replace), ("ignored.txt", "not toml")]);
        let (catalog, warnings) = Catalog::load(Some(dir.path()));
        assert!(warnings.is_empty(), "{warnings:?}");
        let builtin_count = builtin().entries().len();
        assert_eq!(catalog.entries().len(), builtin_count + 1);
        let replaced = catalog.find("tensorflow/tensorflow:2.17.0-gpu").unwrap();
        assert_eq!(
            (replaced.cuda.as_str(), replaced.notes.as_str()),
            ("12.3.2", "site mirror")
        );
        assert!(replaced.origin.ends_with("site.toml"));
        let added = catalog.find("registry.lab:5000/team/train:v3").unwrap();
        assert_eq!(added.python.as_deref(), Some("3.12"));
        assert_eq!(catalog.entries().last(), Some(added));
    }

    #[test]
    fn a_bad_user_file_is_a_located_warning_and_the_rest_still_loads() {
        let unknown_field = format!("{HEADER}[[image]]\nreference = \"a/b:1\"\nframework = \"pytorch\"\nframework_version = \"1\"\ncuda = \"12.8\"\nvariant = \"x\"\ncolour = \"red\"\n");
        let bad_reference = format!("{HEADER}[[image]]\nreference = \"UPPER/case\"\nframework = \"cuda\"\nframework_version = \"1\"\ncuda = \"12.8\"\nvariant = \"x\"\n");
        let bad_framework = format!("{HEADER}[[image]]\nreference = \"a/b:2\"\nframework = \"jax\"\nframework_version = \"1\"\ncuda = \"12.8\"\nvariant = \"x\"\n");
        let good = format!("{HEADER}[[image]]\nreference = \"a/b:3\"\nframework = \"cuda\"\nframework_version = \"1\"\ncuda = \"12.8\"\nvariant = \"x\"\n");
        let dir = user_dir(&[
            ("1-field.toml", &unknown_field),
            ("2-ref.toml", &bad_reference),
            ("3-framework.toml", &bad_framework),
            ("4-syntax.toml", "source = \"x\"\ndate = \n"),
            ("5-good.toml", &good),
        ]);
        let (catalog, warnings) = Catalog::load(Some(dir.path()));
        assert_eq!(warnings.len(), 4, "{warnings:#?}");
        let expect = [
            ("1-field.toml:9:1:", "unknown field `colour`"),
            ("2-ref.toml:4:13:", "uppercase letters are not allowed"),
            ("3-framework.toml:5:13:", "unknown variant `jax`"),
            ("4-syntax.toml:2:", ""),
        ];
        for (warning, (location, reason)) in warnings.iter().zip(expect) {
            assert!(
                warning.contains(location),
                "{warning} should contain {location}"
            );
            assert!(
                warning.contains(reason),
                "{warning} should contain {reason}"
            );
            assert!(warning.ends_with("the file is skipped"), "{warning}");
        }
        assert!(catalog.find("a/b:3").is_some());
        assert!(catalog.find("a/b:1").is_none());
        assert!(
            catalog.find("tensorflow/tensorflow:2.17.0-gpu").is_some(),
            "built-ins stay"
        );
    }

    #[test]
    fn a_missing_user_dir_is_silent() {
        let (catalog, warnings) = Catalog::load(Some(Path::new("/nonexistent/gpudeck/catalog")));
        assert!(warnings.is_empty());
        assert_eq!(catalog.entries().len(), builtin().entries().len());
    }

    /// Property tests: any text as a user catalog file gives entries or a mistake at
    /// `file:line:col`, never a panic.
    mod fuzz {
        use proptest::prelude::*;

        use super::*;
        use crate::fuzz::{self, assert_located};

        const FILES: [&str; 6] = [
            BUILTIN_FILES[0].1,
            BUILTIN_FILES[1].1,
            BUILTIN_FILES[2].1,
            BUILTIN_FILES[3].1,
            BUILTIN_FILES[4].1,
            BUILTIN_FILES[5].1,
        ];

        fn check(text: &str) {
            match parse_file(text, "mine.toml") {
                Ok((source, entries)) => {
                    assert_eq!(source.origin, "mine.toml");
                    assert!(entries.iter().all(|e| e.origin == "mine.toml"));
                }
                Err(message) => assert_located(&message, "mine.toml", text),
            }
        }

        proptest! {
            #![proptest_config(fuzz::config())]

            #[test]
            fn any_text_as_a_catalog(text in fuzz::any_text()) {
                check(&text);
            }

            #[test]
            fn a_catalog_with_mistakes(text in fuzz::near_miss(&FILES)) {
                check(&text);
            }
        }
    }
}
