//! The catalog of GPU framework images (TensorFlow, PyTorch, NGC, CUDA bases) as data, with user files layered over it.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::layer::{located, located_toml_error, position, user_toml_files};
use crate::image::ImageRef;

/// The built-in catalog files, by name: data, not code (`assets/catalog/*.toml`).
pub const BUILTIN_FILES: [(&str, &str); 4] = [
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
];

/// What an image is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framework {
    Tensorflow,
    Pytorch,
    Cuda,
}

impl Framework {
    /// The name as its makers write it.
    pub fn label(self) -> &'static str {
        match self {
            Framework::Tensorflow => "TensorFlow",
            Framework::Pytorch => "PyTorch",
            Framework::Cuda => "CUDA",
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
#[path = "catalog_tests.rs"]
mod tests;
