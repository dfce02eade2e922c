//! The compatibility tables (CUDA -> driver, GPU architectures, framework builds) as data, with user files layered over them.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::version::{ArchTarget, Version};
use crate::config::layer::{located, located_toml_error, position, user_toml_files};

/// The built-in table files (`assets/compat/*.toml`).
pub const BUILTIN_FILES: [(&str, &str); 3] = [
    ("cuda.toml", include_str!("../../assets/compat/cuda.toml")),
    ("gpus.toml", include_str!("../../assets/compat/gpus.toml")),
    (
        "frameworks.toml",
        include_str!("../../assets/compat/frameworks.toml"),
    ),
];

/// A driver version as the tables write it (`580.65.06`), kept as written for messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DriverReq {
    pub text: String,
    #[serde(skip)]
    pub version: Version,
}

/// One CUDA release and the oldest driver that runs it without compatibility layers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CudaRelease {
    pub cuda: Version,
    pub min_driver: DriverReq,
}

/// The driver floor of a major release's minor-version compatibility.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CudaMajor {
    pub major: u32,
    pub minor_compat_floor: DriverReq,
}

/// One GPU architecture by compute capability.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Arch {
    pub cc: Version,
    pub family: String,
    pub first_cuda: Version,
    pub last_cuda: Option<Version>,
    pub examples: String,
}

/// A TensorFlow release's build: CUDA, cuDNN, Python and the GPU code it carries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TensorflowBuild {
    pub version: Version,
    pub cuda: Version,
    pub cudnn: String,
    pub python: String,
    pub archs: Vec<String>,
    #[serde(skip)]
    pub targets: Vec<ArchTarget>,
}

/// The GPU code in PyTorch's wheels for one CUDA variant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PytorchBuild {
    pub cuda: Version,
    pub archs: Vec<String>,
    #[serde(skip)]
    pub targets: Vec<ArchTarget>,
}

/// Where a table file's facts come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableSource {
    pub origin: String,
    pub source: String,
    pub date: String,
}

/// Every table, built-in entries first, user entries replacing those with the same key.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompatData {
    pub releases: Vec<CudaRelease>,
    pub majors: Vec<CudaMajor>,
    pub archs: Vec<Arch>,
    pub tensorflow: Vec<TensorflowBuild>,
    pub pytorch: Vec<PytorchBuild>,
    pub sources: Vec<TableSource>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    source: String,
    date: String,
    #[serde(default)]
    major: Vec<RawMajor>,
    #[serde(default)]
    release: Vec<RawRelease>,
    #[serde(default)]
    arch: Vec<RawArch>,
    #[serde(default)]
    tensorflow: Vec<RawTensorflow>,
    #[serde(default)]
    pytorch: Vec<RawPytorch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMajor {
    major: u32,
    minor_compat_floor: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelease {
    cuda: Spanned<String>,
    min_driver: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArch {
    cc: Spanned<String>,
    family: String,
    first_cuda: Spanned<String>,
    last_cuda: Option<Spanned<String>>,
    #[serde(default)]
    examples: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTensorflow {
    version: Spanned<String>,
    cuda: Spanned<String>,
    cudnn: String,
    python: String,
    archs: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPytorch {
    cuda: Spanned<String>,
    archs: Vec<Spanned<String>>,
}

impl CompatData {
    /// The built-in tables with every `*.toml` in `user_dir` (normally `<config dir>/compat`)
    /// layered over them in name order. A user file that does not parse is skipped with a
    /// `path:line:col: reason` warning; a missing directory is no warning.
    pub fn load(user_dir: Option<&Path>) -> (CompatData, Vec<String>) {
        let mut data = CompatData::default();
        let mut warnings = Vec::new();
        for (name, text) in BUILTIN_FILES {
            if let Err(reason) = data.layer_text(text, name) {
                warnings.push(format!("built-in table {reason} (a bug in gpudeck)"));
            }
        }
        if let Some(dir) = user_dir {
            data.layer_user_dir(dir, &mut warnings);
        }
        data.sort();
        (data, warnings)
    }

    /// The built-in tables only.
    pub fn builtin() -> CompatData {
        Self::load(None).0
    }

    /// The release entry for `major.minor` of a CUDA version.
    pub fn release(&self, cuda: Version) -> Option<&CudaRelease> {
        let wanted = cuda.major_minor();
        self.releases.iter().find(|r| r.cuda == wanted)
    }

    /// The oldest driver for a CUDA version: its own release, else the next listed release above it.
    pub fn min_driver(&self, cuda: Version) -> Option<&DriverReq> {
        let wanted = cuda.major_minor();
        self.releases
            .iter()
            .filter(|r| r.cuda >= wanted)
            .min_by_key(|r| r.cuda)
            .map(|r| &r.min_driver)
    }

    pub fn major(&self, major: u32) -> Option<&CudaMajor> {
        self.majors.iter().find(|m| m.major == major)
    }

    pub fn arch(&self, cc: Version) -> Option<&Arch> {
        self.archs.iter().find(|a| a.cc == cc.major_minor())
    }

    /// The build of a TensorFlow release, matched on `major.minor`.
    pub fn tensorflow(&self, version: Version) -> Option<&TensorflowBuild> {
        let wanted = version.major_minor();
        self.tensorflow.iter().find(|t| t.version == wanted)
    }

    /// PyTorch's wheel targets for a CUDA variant, matched on `major.minor`.
    pub fn pytorch(&self, cuda: Version) -> Option<&PytorchBuild> {
        let wanted = cuda.major_minor();
        self.pytorch.iter().find(|p| p.cuda == wanted)
    }

    fn sort(&mut self) {
        self.releases.sort_by_key(|r| std::cmp::Reverse(r.cuda));
        self.majors.sort_by_key(|m| m.major);
        self.archs.sort_by_key(|a| a.cc);
        self.tensorflow
            .sort_by_key(|t| std::cmp::Reverse(t.version));
        self.pytorch.sort_by_key(|p| std::cmp::Reverse(p.cuda));
    }

    fn layer_user_dir(&mut self, dir: &Path, warnings: &mut Vec<String>) {
        for (shown, text) in user_toml_files(dir, warnings) {
            if let Err(warning) = self.layer_text(&text, &shown) {
                warnings.push(format!("{warning}; the file is skipped"));
            }
        }
    }

    /// Parses a whole file before changing anything, so a bad file leaves no half-layer.
    fn layer_text(&mut self, text: &str, origin: &str) -> Result<(), String> {
        let raw: RawFile =
            toml::from_str(text).map_err(|e| located_toml_error(origin, text, &e))?;
        let file = UserText { text, origin };
        let mut layer = CompatData::default();
        for m in raw.major {
            layer.majors.push(CudaMajor {
                major: m.major,
                minor_compat_floor: file.read(&m.minor_compat_floor, driver, DRIVER)?,
            });
        }
        for r in raw.release {
            layer.releases.push(CudaRelease {
                cuda: file.read(&r.cuda, version, CUDA)?,
                min_driver: file.read(&r.min_driver, driver, DRIVER)?,
            });
        }
        for a in raw.arch {
            layer.archs.push(Arch {
                cc: file.read(&a.cc, version, "a compute capability (like \"9.0\")")?,
                family: a.family,
                first_cuda: file.read(&a.first_cuda, version, CUDA)?,
                last_cuda: match a.last_cuda {
                    Some(text) => Some(file.read(&text, version, CUDA)?),
                    None => None,
                },
                examples: a.examples,
            });
        }
        for t in raw.tensorflow {
            layer.tensorflow.push(TensorflowBuild {
                version: file.read(&t.version, version, "a TensorFlow version (like \"2.17\")")?,
                cuda: file.read(&t.cuda, version, CUDA)?,
                cudnn: t.cudnn,
                python: t.python,
                targets: file.targets(&t.archs)?,
                archs: t.archs.into_iter().map(Spanned::into_inner).collect(),
            });
        }
        for p in raw.pytorch {
            layer.pytorch.push(PytorchBuild {
                cuda: file.read(&p.cuda, version, CUDA)?,
                targets: file.targets(&p.archs)?,
                archs: p.archs.into_iter().map(Spanned::into_inner).collect(),
            });
        }
        self.sources.push(TableSource {
            origin: origin.to_string(),
            source: raw.source,
            date: raw.date,
        });
        self.merge(layer);
        Ok(())
    }

    fn merge(&mut self, layer: CompatData) {
        replace_or_push(&mut self.majors, layer.majors, |a, b| a.major == b.major);
        replace_or_push(&mut self.releases, layer.releases, |a, b| a.cuda == b.cuda);
        replace_or_push(&mut self.archs, layer.archs, |a, b| a.cc == b.cc);
        replace_or_push(&mut self.tensorflow, layer.tensorflow, |a, b| {
            a.version == b.version
        });
        replace_or_push(&mut self.pytorch, layer.pytorch, |a, b| a.cuda == b.cuda);
    }
}

fn replace_or_push<T>(into: &mut Vec<T>, from: Vec<T>, same: impl Fn(&T, &T) -> bool) {
    for item in from {
        match into.iter().position(|existing| same(existing, &item)) {
            Some(i) => into[i] = item,
            None => into.push(item),
        }
    }
}

fn version(text: &str) -> Option<Version> {
    Version::parse(text)
}

fn driver(text: &str) -> Option<DriverReq> {
    Some(DriverReq {
        version: Version::parse(text)?,
        text: text.trim().to_string(),
    })
}

const CUDA: &str = "a CUDA version (like \"12.4\")";
const DRIVER: &str = "a driver version (like \"550.54.14\")";

/// A user's table file, to locate a value it got wrong at `origin:line:col`.
struct UserText<'a> {
    text: &'a str,
    origin: &'a str,
}

impl UserText<'_> {
    /// `value` read by `parse`, or why not, located where the file has it.
    fn read<T>(
        &self,
        value: &Spanned<String>,
        parse: impl Fn(&str) -> Option<T>,
        what: &str,
    ) -> Result<T, String> {
        parse(value.get_ref()).ok_or_else(|| self.bad(value, what))
    }

    fn targets(&self, archs: &[Spanned<String>]) -> Result<Vec<ArchTarget>, String> {
        let what = "an architecture (like \"sm_90\" or \"compute_90\")";
        archs
            .iter()
            .map(|arch| self.read(arch, ArchTarget::parse, what))
            .collect()
    }

    fn bad(&self, value: &Spanned<String>, what: &str) -> String {
        let reason = format!("`{}` is not {what}", value.get_ref());
        located(
            self.origin,
            Some(position(self.text, value.span().start)),
            &reason,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn the_builtin_tables_load_and_answer() {
        let (data, warnings) = CompatData::load(None);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(data.sources.len(), 3);
        assert_eq!(data.min_driver(v("12.4.1")).unwrap().text, "550.54.14");
        assert_eq!(data.min_driver(v("13.0.2")).unwrap().text, "580.65.06");
        // 12.7 was never released: the next release's driver is the answer.
        assert_eq!(data.min_driver(v("12.7")).unwrap().text, "570.26");
        assert_eq!(data.major(12).unwrap().minor_compat_floor.text, "525.60.13");
        assert_eq!(data.arch(v("9.0")).unwrap().family, "Hopper");
        assert_eq!(data.arch(v("7.0")).unwrap().last_cuda, Some(v("12.9")));
        let tf = data.tensorflow(v("2.17.0")).unwrap();
        assert_eq!((tf.cuda, tf.cudnn.as_str()), (v("12.3"), "8.9"));
        assert_eq!(data.pytorch(v("13.0")).unwrap().targets.len(), 6);
        assert_eq!(
            data.releases.first().unwrap().cuda,
            v("13.2"),
            "newest first"
        );
    }

    #[test]
    fn user_files_replace_and_add_entries_and_bad_ones_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
        dir.path().join("a-local.toml"),
        "source = \"my lab\"\ndate = \"2026-11-22\"\n\n[[release]]\ncuda = \"12.4\"\nmin_driver = \"550.99.99\"\n\n[[release]]\ncuda = \"13.3\"\nmin_driver = \"600.1\"\n",
    )
    .unwrap();
        std::fs::write(
            dir.path().join("b-broken.toml"),
            "source = \"x\"\ndate = \"y\"\n[[release]]\ncuda = \"12.4\"\nmin_driver = 5\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("c-bad-arch.toml"),
            "source = \"x\"\ndate = \"y\"\n[[pytorch]]\ncuda = \"12.4\"\narchs = [\"gfx90a\"]\n",
        )
        .unwrap();
        let (data, warnings) = CompatData::load(Some(dir.path()));
        assert_eq!(data.min_driver(v("12.4")).unwrap().text, "550.99.99");
        assert_eq!(data.min_driver(v("13.3")).unwrap().text, "600.1");
        assert_eq!(data.releases.first().unwrap().cuda, v("13.3"));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("b-broken.toml:5:"), "{}", warnings[0]);
        assert!(
            warnings[1].contains(
                "c-bad-arch.toml:5:10: `gfx90a` is not an architecture (like \"sm_90\" or \
             \"compute_90\")"
            ),
            "{}",
            warnings[1]
        );
        assert_eq!(
            data.pytorch(v("12.4")).unwrap().archs.len(),
            7,
            "the bad file changed nothing"
        );
    }

    #[test]
    fn a_missing_user_dir_is_no_warning() {
        let (_, warnings) = CompatData::load(Some(Path::new("/nonexistent/gpudeck/compat")));
        assert!(warnings.is_empty());
    }

    /// Property tests: any text as a user table file is layered or refused with a mistake at
    /// `file:line:col`, never a panic, and a refused file changes nothing.
    mod fuzz {
        use proptest::prelude::*;

        use super::*;
        use crate::fuzz::{self, assert_located};

        const TABLES: [&str; 3] = [BUILTIN_FILES[0].1, BUILTIN_FILES[1].1, BUILTIN_FILES[2].1];

        /// The built-in tables and their JSON, read once for all cases.
        fn builtin() -> &'static (CompatData, String) {
            static BUILTIN: std::sync::OnceLock<(CompatData, String)> = std::sync::OnceLock::new();
            BUILTIN.get_or_init(|| {
                let data = CompatData::builtin();
                let json = serde_json::to_string(&data).unwrap();
                (data, json)
            })
        }

        fn check(text: &str) {
            let (data, before) = builtin();
            let mut data = data.clone();
            if let Err(message) = data.layer_text(text, "mine.toml") {
                assert_located(&message, "mine.toml", text);
                assert_eq!(
                    &serde_json::to_string(&data).unwrap(),
                    before,
                    "half a layer"
                );
            }
        }

        proptest! {
            #![proptest_config(fuzz::config())]

            #[test]
            fn any_text_as_a_table(text in fuzz::any_text()) {
                check(&text);
            }

            #[test]
            fn a_table_with_mistakes(text in fuzz::near_miss(&TABLES)) {
                check(&text);
            }
        }
    }
}
