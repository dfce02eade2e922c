//! Which GPU source an invocation uses (`--demo`, `--nvml-lib`), as a value that can be recorded
//! (a run's `run.json`) and opened again later by another process (the run's supervisor).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::nvml::NvmlSource;
use super::sim::SimSource;
use super::source::{GpuError, GpuSource};

/// The GPU source chosen on the command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum GpuSourceChoice {
    /// NVML, from `library` when given (`--nvml-lib`), else the system's libnvidia-ml.so.1.
    Nvml { library: Option<PathBuf> },
    /// The simulated GPUs of `--demo`, configured by the GPUDECK_SIM environment variable.
    Demo,
}

impl GpuSourceChoice {
    /// The choice the flags make. A library path is made absolute, so that a process started
    /// in another directory opens the same file.
    pub fn from_flags(demo: bool, nvml_lib: Option<PathBuf>) -> Self {
        if demo {
            return GpuSourceChoice::Demo;
        }
        GpuSourceChoice::Nvml {
            library: nvml_lib.map(|p| std::path::absolute(&p).unwrap_or(p)),
        }
    }

    /// Opens the source. For the demo this reads GPUDECK_SIM from this process's environment.
    pub fn open(&self) -> Result<Box<dyn GpuSource>, GpuError> {
        match self {
            GpuSourceChoice::Nvml { library } => {
                NvmlSource::open(library.as_deref().map(|p| p.as_os_str()))
                    .map(|s| Box::new(s) as Box<dyn GpuSource>)
            }
            GpuSourceChoice::Demo => {
                SimSource::from_env().map(|s| Box::new(s) as Box<dyn GpuSource>)
            }
        }
    }
}

impl std::fmt::Display for GpuSourceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuSourceChoice::Nvml { library: None } => {
                write!(f, "NVML ({})", super::nvml::DEFAULT_LIBRARY)
            }
            GpuSourceChoice::Nvml { library: Some(lib) } => write!(f, "NVML ({})", lib.display()),
            GpuSourceChoice::Demo => f.write_str("the demo's simulated GPUs"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_recorded_as_tagged_json() {
        let demo = serde_json::to_value(GpuSourceChoice::from_flags(true, None)).unwrap();
        assert_eq!(demo, serde_json::json!({"kind": "demo"}));
        let nvml = serde_json::to_value(GpuSourceChoice::from_flags(false, None)).unwrap();
        assert_eq!(nvml, serde_json::json!({"kind": "nvml", "library": null}));
        let back: GpuSourceChoice =
            serde_json::from_value(serde_json::json!({"kind": "nvml", "library": "/x/lib.so"}))
                .unwrap();
        assert_eq!(
            back,
            GpuSourceChoice::Nvml {
                library: Some("/x/lib.so".into())
            }
        );
    }

    #[test]
    fn a_relative_library_is_made_absolute() {
        let choice = GpuSourceChoice::from_flags(false, Some("lib/libnvml.so".into()));
        let GpuSourceChoice::Nvml { library: Some(lib) } = choice else {
            panic!("not an NVML choice: {choice:?}");
        };
        assert!(lib.is_absolute(), "{}", lib.display());
        assert!(lib.ends_with("lib/libnvml.so"));
    }

    #[test]
    fn a_missing_library_fails_to_open_with_its_path() {
        let choice = GpuSourceChoice::from_flags(false, Some("/nonexistent/libnvml.so".into()));
        let Err(e) = choice.open() else {
            panic!("opened a library that does not exist");
        };
        assert!(
            matches!(&e, GpuError::LibraryNotFound { library, .. } if library.contains("/nonexistent/libnvml.so")),
            "{e:?}"
        );
    }
}
