//! What a run asks for (name, command, GPUs, launcher, env, work dir), from a TOML file and/or
//! `gpudeck run` flags.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::RunError;
use super::slurm::{Backend, SlurmSettings};
use crate::config::layer::located_toml_error;

/// Which GPUs a run gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum GpuSelection {
    /// No GPU at all: a CPU-only run (single launcher only).
    None,
    All,
    /// This many GPUs nobody uses, picked at launch.
    Count(usize),
    /// NVML indices, as `gpudeck gpus` numbers them, in the order given, no duplicates.
    Indices(Vec<u32>),
    /// GPU UUIDs (`GPU-...`), which survive reboots and re-cabling.
    Uuids(Vec<String>),
}

impl Default for GpuSelection {
    /// One free GPU: a run that names none should not grab a busy one.
    fn default() -> Self {
        GpuSelection::Count(1)
    }
}

impl FromStr for GpuSelection {
    type Err = RunError;

    /// "none", "all", "count:N", "0,1" or "GPU-uuid,GPU-uuid".
    fn from_str(text: &str) -> Result<Self, RunError> {
        let bad = |why: String| RunError::BadGpuList {
            value: text.to_string(),
            why,
        };
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(GpuSelection::All);
        }
        if trimmed.eq_ignore_ascii_case("none") {
            return Ok(GpuSelection::None);
        }
        if trimmed.is_empty() {
            return Err(bad("it is empty".into()));
        }
        if let Some(n) = trimmed.strip_prefix("count:") {
            return match n.trim().parse::<usize>() {
                Ok(0) => Err(bad("a run needs at least one GPU".into())),
                Ok(n) => Ok(GpuSelection::Count(n)),
                Err(_) => Err(bad(format!("`{n}` is not a number of GPUs"))),
            };
        }
        let parts: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        if parts.iter().all(|p| is_uuid(p)) {
            let mut uuids: Vec<String> = Vec::new();
            for p in parts {
                if !uuids.iter().any(|u| u.eq_ignore_ascii_case(p)) {
                    uuids.push(p.to_string());
                }
            }
            return Ok(GpuSelection::Uuids(uuids));
        }
        let mut indices = Vec::new();
        for part in parts {
            let index = part.parse::<u32>().map_err(|_| {
                bad(format!(
                    "`{part}` is neither a GPU index nor a GPU UUID (GPU-...)"
                ))
            })?;
            if !indices.contains(&index) {
                indices.push(index);
            }
        }
        Ok(GpuSelection::Indices(indices))
    }
}

fn is_uuid(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    (upper.starts_with("GPU-") || upper.starts_with("MIG-")) && text.len() > 4
}

impl fmt::Display for GpuSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuSelection::None => write!(f, "none"),
            GpuSelection::All => write!(f, "all"),
            GpuSelection::Count(n) => write!(f, "count:{n}"),
            GpuSelection::Indices(i) => {
                let list: Vec<String> = i.iter().map(u32::to_string).collect();
                write!(f, "{}", list.join(","))
            }
            GpuSelection::Uuids(u) => write!(f, "{}", u.join(",")),
        }
    }
}

impl TryFrom<String> for GpuSelection {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        text.parse().map_err(|e: RunError| e.to_string())
    }
}

impl From<GpuSelection> for String {
    fn from(selection: GpuSelection) -> String {
        selection.to_string()
    }
}

/// How the command is started on the chosen GPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launcher {
    /// One process that sees every chosen GPU (TensorFlow MirroredStrategy, plain scripts).
    #[default]
    Single,
    /// `torchrun --standalone --nproc-per-node=N` around the command.
    Torchrun,
    /// One process per GPU with RANK, WORLD_SIZE, MASTER_ADDR/PORT and TF_CONFIG set.
    PerGpu,
}

impl Launcher {
    pub fn as_str(self) -> &'static str {
        match self {
            Launcher::Single => "single",
            Launcher::Torchrun => "torchrun",
            Launcher::PerGpu => "per-gpu",
        }
    }
}

/// A run spec as written in a TOML file (and as stored in the run's `spec.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// A short name; runs are found by it and it is part of the run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// argv: the program and its arguments, never a shell string.
    #[serde(default)]
    pub command: Vec<String>,
    /// A local container image to run the ranks in; none: the ranks run on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Keep a container run's containers after it ends (they are removed by default).
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep: bool,
    /// Put a container run's containers on the host's network (by default they get the
    /// `[shell]` network, per-gpu ranks sharing rank 0's).
    #[serde(default, skip_serializing_if = "is_false")]
    pub host_network: bool,
    #[serde(default)]
    pub gpus: GpuSelection,
    #[serde(default)]
    pub launcher: Launcher,
    /// Free memory each chosen GPU must have ("20GiB"); pre-flight refuses GPUs with less.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// `local` (this machine) or `slurm` (a batch job; see `[slurm]`); unset: the config's
    /// `[runs] backend`, by default local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    /// Nodes, GPUs per node, time limit, partition, account, container support and extra
    /// `#SBATCH` options of a Slurm run; ignored by the local backend.
    #[serde(default, skip_serializing_if = "is_default")]
    pub slurm: SlurmSettings,
}

/// The `gpudeck run` flags; each one given replaces the spec file's field (env adds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecOverrides {
    pub name: Option<String>,
    pub image: Option<String>,
    /// `--keep`: only ever turns keeping on.
    pub keep: bool,
    pub gpus: Option<GpuSelection>,
    pub launcher: Option<Launcher>,
    pub gpu_memory: Option<String>,
    pub env: Vec<(String, String)>,
    pub workdir: Option<PathBuf>,
    pub command: Vec<String>,
    /// `--on local|slurm`.
    pub backend: Option<Backend>,
    /// `--nodes`, `--time`, `--partition`, `--account`.
    pub slurm: SlurmSettings,
}

impl RunSpec {
    /// Parses spec text; mistakes are reported as `origin:line:col: reason`.
    pub fn parse(origin: &str, text: &str) -> Result<RunSpec, RunError> {
        toml::from_str(text).map_err(|e| {
            let located = located_toml_error(origin, text, &e);
            let (location, reason) = split_location(&located, origin);
            RunError::BadSpec { location, reason }
        })
    }

    /// Reads a spec file; a relative `workdir` in it is relative to the file's directory.
    pub fn load(path: &Path) -> Result<RunSpec, RunError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| RunError::BadSpec {
            location: shown.clone(),
            reason: format!("cannot read the file: {e}"),
        })?;
        let mut spec = RunSpec::parse(&shown, &text)?;
        if let Some(workdir) = spec.workdir.take() {
            let base = path.parent().unwrap_or(Path::new("."));
            spec.workdir = Some(base.join(workdir));
        }
        Ok(spec)
    }

    /// The spec with the flags laid over it.
    pub fn apply(mut self, flags: SpecOverrides) -> RunSpec {
        if flags.name.is_some() {
            self.name = flags.name;
        }
        if flags.image.is_some() {
            self.image = flags.image;
        }
        self.keep |= flags.keep;
        if let Some(gpus) = flags.gpus {
            self.gpus = gpus;
        }
        if let Some(launcher) = flags.launcher {
            self.launcher = launcher;
        }
        if flags.gpu_memory.is_some() {
            self.gpu_memory = flags.gpu_memory;
        }
        self.env.extend(flags.env);
        if flags.workdir.is_some() {
            self.workdir = flags.workdir;
        }
        if !flags.command.is_empty() {
            self.command = flags.command;
        }
        if flags.backend.is_some() {
            self.backend = flags.backend;
        }
        self.slurm = self.slurm.overlaid(flags.slurm);
        self
    }

    /// The name given, else the program's file name.
    pub fn effective_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            self.command
                .first()
                .and_then(|p| Path::new(p).file_name())
                .map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned())
        })
    }

    /// The spec as TOML, for the run's `spec.toml`.
    pub fn to_toml(&self) -> String {
        // A spec is strings, lists and one string table: serializing it cannot fail.
        toml::to_string(self).unwrap_or_default()
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// `NAME=VALUE` from `--env`.
pub fn parse_env(text: &str) -> Result<(String, String), RunError> {
    let bad = |why: &str| RunError::BadEnv {
        value: text.to_string(),
        why: why.to_string(),
    };
    let (name, value) = text.split_once('=').ok_or_else(|| bad("there is no `=`"))?;
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(bad(
            "a name is letters, digits and `_`, not starting with a digit",
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Splits `origin:line:col: reason` back into its location and reason.
fn split_location(located: &str, origin: &str) -> (String, String) {
    let rest = located.strip_prefix(origin).unwrap_or(located);
    match rest.split_once(": ") {
        Some((position, reason)) => (format!("{origin}{position}"), reason.to_string()),
        None => (
            origin.to_string(),
            rest.trim_start_matches(": ").to_string(),
        ),
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
