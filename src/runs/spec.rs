//! What a run asks for (name, command, GPUs, launcher, env, work dir), from a TOML file and/or
//! `gpudeck run` flags.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::RunError;
use crate::config::layer::located_toml_error;
use crate::config::{Backend, SlurmSettings};

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
    /// How many workers a `torchrun` or `per-gpu` run without GPUs (`gpus = "none"`: CPU workers
    /// over gloo) starts; with GPUs there is one worker per GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
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
    /// Set when the run is a service (`gpudeck notebook`, `tensorboard`, `triton`): what it
    /// serves and on which loopback ports. A service is supervised, claimed, logged and stopped
    /// as any run; `gpudeck services` and the Services tab list it, `gpudeck runs` does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceSpec>,
}

/// What a service run serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceKind {
    /// JupyterLab.
    Notebook,
    /// TensorBoard over a log directory.
    Tensorboard,
    /// NVIDIA Triton Inference Server over a model repository.
    Triton,
}

impl ServiceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceKind::Notebook => "notebook",
            ServiceKind::Tensorboard => "tensorboard",
            ServiceKind::Triton => "triton",
        }
    }
}

impl fmt::Display for ServiceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One port a service listens on, on 127.0.0.1 (in a container: published on the host's
/// 127.0.0.1 to the same port inside).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServicePort {
    /// What it serves: `http` (the URL users open), `grpc`, `metrics`.
    pub name: String,
    pub port: u16,
}

/// The service part of a run spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    pub kind: ServiceKind,
    /// The first is the one users open.
    pub ports: Vec<ServicePort>,
    /// A notebook's kernels idle this many seconds are shut down by its supervisor (the
    /// config's `[notebook] idle_stop` when it started); absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_stop_secs: Option<u64>,
}

impl ServiceSpec {
    /// The port named `name`, if the service has one.
    pub fn port(&self, name: &str) -> Option<u16> {
        self.ports.iter().find(|p| p.name == name).map(|p| p.port)
    }
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
    /// `--workers N` (`--nproc-per-node N`).
    pub workers: Option<usize>,
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
        if flags.workers.is_some() {
            self.workers = flags.workers;
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
        self.name
            .clone()
            .or_else(|| name_of_command(&self.command))
            .unwrap_or_else(|| "run".into())
    }

    /// The spec as TOML, for the run's `spec.toml`.
    pub fn to_toml(&self) -> String {
        // A spec is strings, lists and one string table: serializing it cannot fail.
        toml::to_string(self).unwrap_or_default()
    }
}

/// What a run of `command` is called: the script or module an interpreter runs (`python -u
/// train.py` is `train.py`, `python -m pkg.train` is `pkg.train`, `bash run.sh` is `run.sh`),
/// else the program's file name.
fn name_of_command(command: &[String]) -> Option<String> {
    let file_name = |p: &str| {
        Path::new(p)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    };
    let (program, rest) = command.split_first()?;
    let base = file_name(program)?;
    let python = base
        .strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    let shell = matches!(base.as_str(), "sh" | "bash" | "dash" | "zsh");
    if !python && !shell {
        return Some(base);
    }
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-m" if python => return args.next().cloned().or(Some(base)),
            a if python && a.starts_with("-m") => return Some(a[2..].to_string()),
            // Code on the command line has no name of its own.
            "-c" => break,
            a if a.starts_with("-c") => break,
            "-W" | "-X" if python => {
                args.next();
            }
            a if a.starts_with('-') => {}
            script => return file_name(script).or(Some(base)),
        }
    }
    Some(base)
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

/// What the config gives runs that do not say: the backend, and the Slurm settings a spec's
/// `[slurm]` table is laid over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmDefaults {
    pub backend: Backend,
    pub settings: SlurmSettings,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SlurmContainer;

    const GOOD: &str = r#"
name = "resnet"
command = ["python", "train.py", "--epochs", "3"]
gpus = "0,1"
launcher = "per-gpu"
workdir = "project"

[env]
NCCL_DEBUG = "INFO"
"#;

    #[test]
    fn a_full_spec_parses() {
        let spec = RunSpec::parse("run.toml", GOOD).unwrap();
        assert_eq!(spec.name.as_deref(), Some("resnet"));
        assert_eq!(spec.command, ["python", "train.py", "--epochs", "3"]);
        assert_eq!(spec.gpus, GpuSelection::Indices(vec![0, 1]));
        assert_eq!(spec.launcher, Launcher::PerGpu);
        assert_eq!(spec.workdir.as_deref(), Some(Path::new("project")));
        assert_eq!(spec.env.get("NCCL_DEBUG").map(String::as_str), Some("INFO"));
        assert_eq!(spec.image, None);
    }

    #[test]
    fn defaults_are_one_free_gpu_and_a_single_process() {
        let spec = RunSpec::parse("run.toml", "command = [\"true\"]\n").unwrap();
        assert_eq!(spec.gpus, GpuSelection::Count(1));
        assert_eq!(spec.launcher, Launcher::Single);
        assert_eq!(spec.effective_name(), "true");
    }

    #[test]
    fn a_run_is_named_after_the_script_or_module_an_interpreter_runs() {
        let name = |command: &str| {
            let words: Vec<String> = command.split(' ').map(String::from).collect();
            RunSpec {
                command: words,
                ..RunSpec::parse("run.toml", "command = [\"true\"]\n").unwrap()
            }
            .effective_name()
        };
        assert_eq!(name("python train.py --epochs 3"), "train.py");
        assert_eq!(
            name("python3 -u -X faulthandler scripts/train.py"),
            "train.py"
        );
        assert_eq!(
            name("/opt/venv/bin/python3.12 -m pkg.train --lr 1"),
            "pkg.train"
        );
        assert_eq!(name("python -mpkg"), "pkg");
        assert_eq!(name("bash -x jobs/run.sh"), "run.sh");
        assert_eq!(name("python -c print(1)"), "python");
        assert_eq!(name("python"), "python");
        assert_eq!(name("./train.sh --fast"), "train.sh");
        assert_eq!(name("pythonista train.py"), "pythonista");
    }

    #[test]
    fn an_unknown_field_is_located() {
        let text = "command = [\"true\"]\ngpu = \"0\"\n";
        let err = RunSpec::parse("run.toml", text).unwrap_err();
        let shown = err.to_string();
        assert!(
            shown.starts_with("run.toml:2:1: unknown field `gpu`"),
            "{shown}"
        );
        assert!(matches!(err, RunError::BadSpec { .. }));
    }

    #[test]
    fn a_bad_gpu_list_is_located_and_explained() {
        let text = "command = [\"true\"]\ngpus = \"0,x\"\n";
        let shown = RunSpec::parse("run.toml", text).unwrap_err().to_string();
        assert!(shown.starts_with("run.toml:2:8:"), "{shown}");
        assert!(
            shown.contains("`x` is neither a GPU index nor a GPU UUID"),
            "{shown}"
        );
        let launcher = "command = [\"true\"]\nlauncher = \"mpirun\"\n";
        let shown = RunSpec::parse("run.toml", launcher)
            .unwrap_err()
            .to_string();
        assert!(shown.starts_with("run.toml:2:12:"), "{shown}");
        assert!(shown.contains("per-gpu"), "{shown}");
    }

    #[test]
    fn gpu_selections_parse() {
        let parse = |t: &str| t.parse::<GpuSelection>();
        assert_eq!(parse("all").unwrap(), GpuSelection::All);
        assert_eq!(parse("count:2").unwrap(), GpuSelection::Count(2));
        assert_eq!(parse("3, 1,3").unwrap(), GpuSelection::Indices(vec![3, 1]));
        assert_eq!(
            parse("GPU-aaa,gpu-bbb").unwrap(),
            GpuSelection::Uuids(vec!["GPU-aaa".into(), "gpu-bbb".into()])
        );
        assert_eq!(parse(" None ").unwrap(), GpuSelection::None);
        for bad in ["", "count:0", "count:x", "0,GPU-a", "-1", "none,0"] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(parse("count:2").unwrap().to_string(), "count:2");
        assert_eq!(GpuSelection::None.to_string(), "none");
    }

    #[test]
    fn a_container_run_names_its_image_and_may_keep_its_containers() {
        let text = "command = [\"python\", \"train.py\"]\nimage = \"pytorch:24.05\"\ngpus = \"none\"\nkeep = true\n";
        let spec = RunSpec::parse("run.toml", text).unwrap();
        assert_eq!(spec.image.as_deref(), Some("pytorch:24.05"));
        assert_eq!(spec.gpus, GpuSelection::None);
        assert!(spec.keep);
        assert_eq!(RunSpec::parse("spec.toml", &spec.to_toml()).unwrap(), spec);

        let host = RunSpec::parse("run.toml", GOOD).unwrap();
        assert!(!host.to_toml().contains("keep"), "keep = false is left out");
        let flagged = host.apply(SpecOverrides {
            image: Some("tf:2.17".into()),
            keep: true,
            ..SpecOverrides::default()
        });
        assert_eq!(flagged.image.as_deref(), Some("tf:2.17"));
        assert!(flagged.keep);
        let kept = flagged.apply(SpecOverrides::default());
        assert!(kept.keep, "no --keep flag leaves the file's keep alone");
    }

    #[test]
    fn flags_override_the_file_and_env_adds() {
        let spec = RunSpec::parse("run.toml", GOOD)
            .unwrap()
            .apply(SpecOverrides {
                gpus: Some(GpuSelection::All),
                env: vec![("SEED".into(), "1".into())],
                command: vec!["./other".into()],
                ..SpecOverrides::default()
            });
        assert_eq!(spec.gpus, GpuSelection::All);
        assert_eq!(spec.launcher, Launcher::PerGpu);
        assert_eq!(spec.command, ["./other"]);
        assert_eq!(spec.env.len(), 2);
        assert_eq!(spec.effective_name(), "resnet");
    }

    #[test]
    fn the_stored_spec_reads_back_the_same() {
        let spec = RunSpec::parse("run.toml", GOOD).unwrap();
        let again = RunSpec::parse("spec.toml", &spec.to_toml()).unwrap();
        assert_eq!(again, spec);
    }

    #[test]
    fn a_workdir_in_a_file_is_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.toml");
        std::fs::write(&path, GOOD).unwrap();
        let spec = RunSpec::load(&path).unwrap();
        assert_eq!(spec.workdir, Some(dir.path().join("project")));
        let missing = RunSpec::load(&dir.path().join("nope.toml")).unwrap_err();
        assert!(
            missing.to_string().contains("cannot read the file"),
            "{missing}"
        );
    }

    #[test]
    fn env_assignments_parse() {
        assert_eq!(parse_env("A_1=x=y").unwrap(), ("A_1".into(), "x=y".into()));
        assert_eq!(
            parse_env("EMPTY=").unwrap(),
            ("EMPTY".into(), String::new())
        );
        for bad in ["NOEQUALS", "=x", "1A=x", "A-B=x"] {
            assert!(parse_env(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_slurm_spec_reads_its_backend_and_table_and_flags_replace_them() {
        let text = r#"
command = ["python", "train.py"]
backend = "slurm"
gpus = "count:4"
[slurm]
nodes = 2
time = "02:00:00"
partition = "gpu"
container = "pyxis"
extra = ["--mem=64G"]
"#;
        let spec = RunSpec::parse("spec.toml", text).expect("parses");
        assert_eq!(spec.backend, Some(Backend::Slurm));
        assert_eq!(spec.slurm.nodes, Some(2));
        assert_eq!(spec.slurm.container, Some(SlurmContainer::Pyxis));
        let flagged = spec.apply(SpecOverrides {
            slurm: SlurmSettings {
                nodes: Some(4),
                account: Some("ml".into()),
                ..SlurmSettings::default()
            },
            ..SpecOverrides::default()
        });
        assert_eq!(flagged.slurm.nodes, Some(4));
        assert_eq!(flagged.slurm.partition.as_deref(), Some("gpu"));
        assert_eq!(flagged.slurm.account.as_deref(), Some("ml"));
        assert_eq!(
            RunSpec::parse("s", &flagged.to_toml()).expect("round trip"),
            flagged
        );
        let local = RunSpec::parse("s", "command = [\"x\"]").expect("parses");
        assert_eq!(local.backend, None, "unset: the config decides");
        assert!(
            !local.to_toml().contains("slurm"),
            "a local spec stores no slurm fields"
        );
    }

    #[test]
    fn an_unknown_slurm_field_is_refused_with_its_place() {
        let err = RunSpec::parse("spec.toml", "[slurm]\nnode = 2\n").expect_err("refused");
        assert!(err.to_string().starts_with("spec.toml:2:"), "{err}");
    }

    /// Property tests: any text as a spec file gives a spec or a mistake at `file:line:col`, never
    /// a panic; a spec that parses survives its own `spec.toml` (what `rerun` reads back).
    mod fuzz {
        use proptest::prelude::*;

        use super::*;
        use crate::fuzz::{self, assert_located};

        const FULL: &str = r#"name = "resnet"
command = ["python", "train.py", "--epochs", "3"]
image = "pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime"
keep = true
gpus = "0,1"
launcher = "torchrun"
gpu_memory = "20GiB"
workdir = "project"
backend = "slurm"

[env]
NCCL_DEBUG = "INFO"
OMP_NUM_THREADS = "4"

[slurm]
nodes = 2
gpus_per_node = 4
time = "02:00:00"
partition = "gpu"
account = "ml"
container = "pyxis"
extra = ["--exclusive"]
"#;

        fn check(text: &str) {
            match RunSpec::parse("run.toml", text) {
                Ok(spec) => {
                    let stored = spec.to_toml();
                    let again = RunSpec::parse("spec.toml", &stored);
                    assert_eq!(again.ok().as_ref(), Some(&spec), "{stored}");
                }
                Err(error) => assert_located(&error.to_string(), "run.toml", text),
            }
        }

        #[test]
        fn the_full_spec_parses() {
            let spec = RunSpec::parse("run.toml", FULL).unwrap();
            assert_eq!(spec.slurm.nodes, Some(2));
            assert_eq!(spec.env.len(), 2);
        }

        proptest! {
            #![proptest_config(fuzz::config())]

            #[test]
            fn any_text_as_a_spec(text in fuzz::any_text()) {
                check(&text);
            }

            #[test]
            fn a_spec_with_mistakes(text in fuzz::near_miss(&[FULL])) {
                check(&text);
            }
        }
    }
}
