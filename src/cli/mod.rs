//! Command-line interface: global options and one subcommand per non-interactive twin of a view.

pub mod run_target;
pub mod runs;
pub mod services;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::runs::Backend;
use crate::runs::Launcher;

/// A terminal home for every GPU on this machine.
#[derive(Debug, Parser)]
#[command(name = "gpudeck", version, about, long_about = None)]
pub struct Cli {
    /// Config file to use instead of the one in the config directory (an error in it is fatal).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Run on simulated GPUs (no NVIDIA driver needed). GPUDECK_SIM tunes the simulation.
    #[arg(long)]
    pub demo: bool,

    /// Dashboard: colour theme: dark, light, high-contrast, or a theme file's name in the config dir.
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,

    #[arg(long, help = read_only_help())]
    pub read_only: bool,

    /// Load this libnvidia-ml instead of the system's libnvidia-ml.so.1.
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,

    /// Docker Engine to use (unix:///path, tcp://host:port); overrides DOCKER_HOST.
    #[arg(long, value_name = "URI")]
    pub docker_host: Option<String>,

    /// Dashboard: refresh interval in milliseconds (minimum 100); overrides the config.
    #[arg(long, value_name = "MS")]
    pub refresh: Option<u64>,

    /// Dashboard: show the values of secret-looking environment variables instead of <redacted>.
    #[arg(long)]
    pub show_secrets: bool,

    #[command(subcommand)]
    pub command: Option<Commands>,
}

/// The subcommands that change the machine, in the order `--help` names them: read-only mode
/// refuses each (`read_only::what_it_changes` says what each would change, and its tests hold
/// the two together).
pub const CHANGES_THE_MACHINE: &[&str] = &[
    "run",
    "rerun",
    "stop",
    "pull",
    "shell",
    "notebook",
    "tensorboard",
    "triton",
];

/// `--read-only`'s help, naming every command it refuses.
fn read_only_help() -> String {
    let (last, rest) = CHANGES_THE_MACHINE
        .split_last()
        .expect("some commands change the machine");
    format!(
        "Disable every action that changes the machine: in the dashboard, and the {} and {last} \
         commands (refused with exit code 2)",
        rest.join(", ")
    )
}

/// Where the GPUs are read from, for the subcommands that read them.
#[derive(Debug, Clone, Default, Args)]
pub struct GpuFlags {
    /// Run on simulated GPUs (no NVIDIA driver needed). GPUDECK_SIM tunes the simulation.
    #[arg(long)]
    pub demo: bool,
    /// Load this libnvidia-ml instead of the system's libnvidia-ml.so.1.
    #[arg(long, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,
}

/// The Docker Engine, for the subcommands that talk to it.
#[derive(Debug, Clone, Default, Args)]
pub struct DockerFlags {
    /// Docker Engine to use (unix:///path, tcp://host:port); overrides DOCKER_HOST.
    #[arg(long, value_name = "URI")]
    pub docker_host: Option<String>,
}

/// `--read-only`, for the subcommands that change the machine.
#[derive(Debug, Clone, Default, Args)]
pub struct ReadOnlyFlag {
    /// Refuse to change the machine (exit code 2), as the config's `read_only = true` does.
    #[arg(long)]
    pub read_only: bool,
}

impl Cli {
    /// The command line with the flags given after the subcommand folded into those given
    /// before it (`gpudeck gpus --demo` as `gpudeck --demo gpus`), so the rest of the program
    /// reads them in one place.
    pub fn merged(mut self) -> Self {
        let Some(command) = &self.command else {
            return self;
        };
        let (gpu, docker, read_only, refresh) = command.flags();
        if let Some(gpu) = gpu {
            self.demo |= gpu.demo;
            self.nvml_lib = self.nvml_lib.or_else(|| gpu.nvml_lib.clone());
        }
        if let Some(docker) = docker {
            self.docker_host = self.docker_host.or_else(|| docker.docker_host.clone());
        }
        self.read_only |= read_only.is_some_and(|r| r.read_only);
        self.refresh = self.refresh.or(refresh);
        self
    }
}

/// What a subcommand's shared flags are: GPUs, Docker, read-only, refresh.
type SharedFlags<'a> = (
    Option<&'a GpuFlags>,
    Option<&'a DockerFlags>,
    Option<&'a ReadOnlyFlag>,
    Option<u64>,
);

impl Commands {
    fn flags(&self) -> SharedFlags<'_> {
        match self {
            Commands::Gpus { gpu, .. } => (Some(gpu), None, None, None),
            Commands::Containers { docker, .. } | Commands::Images { docker, .. } => {
                (None, Some(docker), None, None)
            }
            Commands::Compat { gpu, docker, .. } | Commands::Doctor { gpu, docker, .. } => {
                (Some(gpu), Some(docker), None, None)
            }
            Commands::Pull {
                docker, read_only, ..
            } => (None, Some(docker), Some(read_only), None),
            Commands::Shell(a) => (Some(&a.gpu), Some(&a.docker), Some(&a.read_only), None),
            Commands::Run(a) => (Some(&a.gpu), Some(&a.docker), Some(&a.read_only), None),
            Commands::Rerun(a) => (Some(&a.gpu), Some(&a.docker), Some(&a.read_only), None),
            Commands::Stop(a) => (None, None, Some(&a.read_only), None),
            Commands::Notebook(a) => a.service.flags(),
            Commands::Tensorboard(a) => a.service.flags(),
            Commands::Triton(a) => a.service.flags(),
            Commands::Serve { gpu, refresh, .. } => (Some(gpu), None, None, *refresh),
            Commands::Runs { .. }
            | Commands::Services { .. }
            | Commands::Logs(_)
            | Commands::Export(_)
            | Commands::Completions { .. }
            | Commands::Man
            | Commands::Supervise { .. } => (None, None, None, None),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Print every GPU's facts, live metrics, processes and topology once.
    Gpus {
        /// A stable JSON document instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        gpu: GpuFlags,
    },
    /// List every container with its state and the GPUs it was given.
    Containers {
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        docker: DockerFlags,
    },
    /// List local images with the CUDA, cuDNN and framework versions they carry.
    Images {
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        docker: DockerFlags,
    },
    /// Will these images run here? Verdicts with reasons and fixes for the named images, or for
    /// every local and catalog image (exit 0 all run, 1 some unknown, 2 some will not run).
    ///
    /// A verdict covers this driver, its CUDA and each GPU's architecture, and whether Docker can
    /// give containers GPUs at all (NVIDIA runtime, its hook, or CDI): an image that suits the
    /// GPUs on an engine that cannot hand them over will not run.
    ///
    /// Exit codes: 0 every image runs (directly or through compatibility); 1 some verdict is
    /// unknown and none will not run (e.g. the driver cannot be read); 2 some image will not run;
    /// 3 a named image cannot be found or is not an image reference; 4 gpudeck could not judge at
    /// all (its runtime did not start or the report could not be written). A mistake on the
    /// command line exits 2 too, with a usage message on stderr and nothing on stdout.
    Compat {
        /// Images to judge: local tags or ids, or catalog references (none: all of them).
        images: Vec<String>,
        /// A stable JSON document instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        gpu: GpuFlags,
        #[command(flatten)]
        docker: DockerFlags,
    },
    /// Diagnose the driver, GPUs, Docker and CUDA setup: PASS/WARN/FAIL with fixes.
    ///
    /// Exit code 0 when everything passed, 1 with warnings, 2 with failures.
    Doctor {
        /// A stable JSON document (schema gpudeck.doctor/v1) instead of text.
        #[arg(long)]
        json: bool,
        /// Read Xid errors from this saved kernel log (`sudo dmesg`, `dmesg -T`, `journalctl -k`,
        /// syslog or /dev/kmsg records; `-` for stdin) instead of this machine's live log.
        #[arg(long, value_name = "FILE")]
        kernel_log: Option<std::path::PathBuf>,
        #[command(flatten)]
        gpu: GpuFlags,
        #[command(flatten)]
        docker: DockerFlags,
    },
    /// Pull an image with a progress bar per layer (credentials from your docker config).
    Pull {
        /// The image, e.g. tensorflow/tensorflow:2.17.0-gpu or nvcr.io/nvidia/pytorch:24.05-py3.
        image: String,
        /// One JSON progress object per line instead of progress bars.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        docker: DockerFlags,
        #[command(flatten)]
        read_only: ReadOnlyFlag,
    },
    /// A shell in a container with chosen GPUs and this directory mounted at /workspace.
    ///
    /// Exit code: the shell's (or command's) own, or 125 when gpudeck could not run it.
    Shell(ShellArgs),
    /// Start a training run on chosen GPUs, detached from this terminal; prints its id.
    ///
    /// Exit code 0 when it started, 1 when it could not, 2 for a mistake in the flags or spec.
    Run(RunArgs),
    /// List the training runs: state, GPUs, launcher, start, duration, GPU utilisation, exit code.
    Runs {
        /// A stable JSON document (schema gpudeck.runs/v1, with each run's summary) instead of a table.
        #[arg(long)]
        json: bool,
        /// Show the values of secret-looking environment variables instead of <redacted>.
        #[arg(long)]
        show_secrets: bool,
    },
    /// Print a run's log (rank 0's stdout unless told otherwise).
    Logs(LogsArgs),
    /// Stop a run: SIGINT to its processes, SIGTERM after the grace period, then SIGKILL.
    Stop(StopArgs),
    /// Start JupyterLab on chosen GPUs, detached, on 127.0.0.1 with a token: in a container of
    /// a local image, or with --host from the `jupyter` on PATH. Prints its id, URL and the SSH
    /// line that reaches it; `gpudeck stop ID` ends it.
    Notebook(NotebookArgs),
    /// Start TensorBoard over a run's directory or a log directory, detached, on 127.0.0.1.
    Tensorboard(TensorboardArgs),
    /// Start NVIDIA Triton Inference Server over a model repository on chosen GPUs, detached,
    /// with its HTTP, gRPC and metrics ports on 127.0.0.1; waits until it is ready.
    Triton(TritonArgs),
    /// List the notebooks, TensorBoards and Triton servers: state, URL, GPUs, idle time.
    Services {
        /// A stable JSON document (schema gpudeck.services/v1) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Export a run: its per-second GPU metrics as CSV, or record, summary, metrics and
    /// training progress as one JSON document (schema gpudeck.export/v1).
    Export(ExportArgs),
    /// Start a run again from its spec (same command, GPU selection, launcher, env, work dir);
    /// prints the new run's id.
    Rerun(RerunArgs),
    /// Serve the GPUs' metrics in the Prometheus text format until SIGINT or SIGTERM.
    ///
    /// A scrape is answered from the latest sample; it never calls NVML itself.
    Serve {
        /// Where to listen, IP:PORT, e.g. 127.0.0.1:9400 (port 0: any free port, printed at start).
        #[arg(long, value_name = "ADDR")]
        metrics: std::net::SocketAddr,
        /// A Prometheus web configuration file (YAML, as node_exporter's --web.config.file):
        /// TLS certificate and key, client CA for mutual TLS, basic-auth users with bcrypt hashes.
        #[arg(long, value_name = "FILE")]
        web_config: Option<std::path::PathBuf>,
        /// Sampling interval in milliseconds (minimum 100); overrides the config.
        #[arg(long, value_name = "MS")]
        refresh: Option<u64>,
        #[command(flatten)]
        gpu: GpuFlags,
    },
    /// Print shell completions for bash, zsh or fish (docs/cli.md says where they go).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `gpudeck man > ~/.local/share/man/man1/gpudeck.1`.
    Man,
    /// The supervisor of a run (started by `gpudeck run`, not by people).
    #[command(name = "__supervise", hide = true)]
    Supervise {
        /// The run's directory.
        dir: PathBuf,
    },
}

/// `gpudeck run`: a spec file and/or flags; each flag given replaces the file's field.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A TOML run spec (see docs/runs.md), or a script to run (train.py runs as
    /// `python train.py`, train.sh as `bash train.sh`) with its arguments.
    #[arg(value_name = "SPEC.toml|SCRIPT")]
    pub target: Vec<String>,
    #[command(flatten)]
    pub gpu: GpuFlags,
    #[command(flatten)]
    pub docker: DockerFlags,
    #[command(flatten)]
    pub read_only: ReadOnlyFlag,
    /// A short name for the run (default: the program's name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// GPUs: indices (0,1), UUIDs (GPU-...), count:N for N free ones, all, or none (default count:1).
    #[arg(long, value_name = "0,1|UUIDS|count:N|all|none")]
    pub gpus: Option<String>,
    /// How the command is started on the GPUs (default single).
    #[arg(long, value_enum)]
    pub launcher: Option<LauncherArg>,
    /// torchrun and per-gpu with `--gpus none`: how many CPU workers to start (gloo); with GPUs
    /// there is one worker per GPU.
    #[arg(long, visible_alias = "nproc-per-node", value_name = "N")]
    pub workers: Option<usize>,
    /// Free memory each GPU must have, e.g. 20GiB; pre-flight refuses GPUs with less.
    #[arg(long, value_name = "SIZE")]
    pub gpu_memory: Option<String>,
    /// Run the ranks in containers of this local image (pull it first: `gpudeck pull IMAGE`).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Keep a container run's containers after it ends.
    #[arg(long)]
    pub keep: bool,
    /// An environment variable for every rank, NAME=VALUE (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// The directory the command runs in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Where the run runs: local (this machine) or slurm (a batch job); default: the spec's
    /// backend, else the config's [runs] backend, else local.
    #[arg(long = "on", value_enum, value_name = "BACKEND")]
    pub on: Option<BackendArg>,
    /// Slurm only: print the batch script instead of submitting it; touches no GPU or run store.
    #[arg(long)]
    pub dry_run: bool,
    /// Slurm: nodes to run on (default 1).
    #[arg(long, value_name = "N")]
    pub nodes: Option<u32>,
    /// Slurm: time limit as sbatch takes it, e.g. 02:00:00.
    #[arg(long, value_name = "TIME")]
    pub time: Option<String>,
    /// Slurm: the partition to submit to.
    #[arg(long, value_name = "PARTITION")]
    pub partition: Option<String>,
    /// Slurm: the account to charge.
    #[arg(long, value_name = "ACCOUNT")]
    pub account: Option<String>,
    /// The command, after `--` (argv, never a shell string).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `gpudeck run --launcher`: how the command is started on the chosen GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LauncherArg {
    /// One process that sees every chosen GPU (TensorFlow MirroredStrategy, plain scripts).
    Single,
    /// `torchrun --standalone --nproc-per-node=N` around the command.
    Torchrun,
    /// One process per GPU with RANK, WORLD_SIZE, MASTER_ADDR/PORT and TF_CONFIG set.
    PerGpu,
}

impl From<LauncherArg> for Launcher {
    fn from(arg: LauncherArg) -> Self {
        match arg {
            LauncherArg::Single => Launcher::Single,
            LauncherArg::Torchrun => Launcher::Torchrun,
            LauncherArg::PerGpu => Launcher::PerGpu,
        }
    }
}

/// `gpudeck run --on`: where a run's processes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendArg {
    /// On this machine, as processes or in containers.
    Local,
    /// As a Slurm batch job (`gpudeck run --on slurm --dry-run` prints its script).
    Slurm,
}

impl From<BackendArg> for Backend {
    fn from(arg: BackendArg) -> Self {
        match arg {
            BackendArg::Local => Backend::Local,
            BackendArg::Slurm => Backend::Slurm,
        }
    }
}

/// `gpudeck export --format`: the formats it writes (the runs' own types know nothing of clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// The metrics rows: the header and every complete row of `metrics.csv`.
    Csv,
    /// One document: record, summary, metrics and training progress.
    Json,
}

/// `gpudeck logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The run: its id, a unique prefix of it, or a name (the newest run of that name).
    pub run: String,
    /// Keep printing what is appended until the run ends.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Which rank's log.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub rank: usize,
    /// The rank's stderr instead of its stdout.
    #[arg(long)]
    pub stderr: bool,
}

/// What every service command takes: GPUs, where it runs, its name and port.
#[derive(Debug, Args)]
pub struct ServiceFlags {
    /// GPUs: indices (0,1), UUIDs (GPU-...), count:N for N free ones, all, or none.
    #[arg(long, value_name = "0,1|UUIDS|count:N|all|none")]
    pub gpus: Option<String>,
    /// Run it on this machine (the program on PATH, e.g. your venv's or conda env's) instead
    /// of in a container.
    #[arg(long)]
    pub host: bool,
    /// A short name (default: the kind, e.g. notebook).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The port to listen on, on 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// An environment variable for it, NAME=VALUE (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    #[command(flatten)]
    pub gpu: GpuFlags,
    #[command(flatten)]
    pub docker: DockerFlags,
    #[command(flatten)]
    pub read_only: ReadOnlyFlag,
}

impl ServiceFlags {
    fn flags(&self) -> SharedFlags<'_> {
        (
            Some(&self.gpu),
            Some(&self.docker),
            Some(&self.read_only),
            None,
        )
    }
}

/// `gpudeck notebook`.
#[derive(Debug, Args)]
pub struct NotebookArgs {
    /// A local image with JupyterLab (e.g. a PyTorch or TensorFlow -jupyter image); leave it
    /// out with --host.
    #[arg(value_name = "IMAGE")]
    pub image: Option<String>,
    /// The notebook's root directory, mounted at /workspace in a container (default: the
    /// current directory).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    #[command(flatten)]
    pub service: ServiceFlags,
}

/// `gpudeck tensorboard`.
#[derive(Debug, Args)]
pub struct TensorboardArgs {
    /// A run (id, prefix or name: its work directory is read) or a directory of logs.
    #[arg(value_name = "RUN|DIR")]
    pub target: String,
    /// A local image with TensorBoard to run it in; leave it out with --host.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    #[command(flatten)]
    pub service: ServiceFlags,
}

/// `gpudeck triton`.
#[derive(Debug, Args)]
pub struct TritonArgs {
    /// The model repository: one directory per model (MODEL/config.pbtxt, MODEL/1/...).
    #[arg(value_name = "MODEL_REPOSITORY")]
    pub repository: PathBuf,
    /// A local Triton image (e.g. nvcr.io/nvidia/tritonserver:25.10-py3); leave it out with
    /// --host.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    #[command(flatten)]
    pub service: ServiceFlags,
}

/// `gpudeck stop`.
#[derive(Debug, Args)]
pub struct StopArgs {
    /// The run: its id, a unique prefix of it, or a name (the newest run of that name).
    pub run: String,
    /// Seconds the processes get after SIGINT, and again after SIGTERM, before SIGKILL.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub grace: u64,
    #[command(flatten)]
    pub read_only: ReadOnlyFlag,
}

/// `gpudeck export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The run: its id, a unique prefix of it, or a name (the newest run of that name).
    pub run: String,
    /// csv: the metrics rows; json: record, summary, metrics and training progress.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Write to this file (0600; a file or link already there is replaced) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Show the values of secret-looking environment variables instead of <redacted>.
    #[arg(long)]
    pub show_secrets: bool,
}

/// `gpudeck rerun`.
#[derive(Debug, Args)]
pub struct RerunArgs {
    /// The run: its id, a unique prefix of it, or a name (the newest run of that name).
    pub run: String,
    /// A notebook keeps its token (by default it gets a new one, so the old URL, and anyone
    /// who saw it, no longer gets in).
    #[arg(long)]
    pub keep_token: bool,
    /// GPUs instead of those the run asked for: indices (0,1), UUIDs (GPU-...), count:N, all,
    /// or none (e.g. while the driver cannot be read).
    #[arg(long, value_name = "0,1|UUIDS|count:N|all|none")]
    pub gpus: Option<String>,
    #[command(flatten)]
    pub gpu: GpuFlags,
    #[command(flatten)]
    pub docker: DockerFlags,
    #[command(flatten)]
    pub read_only: ReadOnlyFlag,
}

/// `gpudeck shell`: the choices a shell container is made from; the rest comes from [shell] in
/// the config.
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// The local image, e.g. tensorflow/tensorflow:2.17.0-gpu (pull it first: `gpudeck pull IMAGE`).
    #[arg(required_unless_present_any = ["list", "attach"])]
    pub image: Option<String>,
    /// GPUs to give it: none, all, or indices such as 2,3 (as `gpudeck gpus` numbers them).
    #[arg(long, default_value = "none", value_name = "none|all|2,3")]
    pub gpus: String,
    /// The host directory mounted at /workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Keep the container after the shell exits (re-enter with --attach NAME).
    #[arg(long)]
    pub keep: bool,
    /// The container's network (default from the config: bridge).
    #[arg(long, value_parser = ["bridge", "none"])]
    pub network: Option<String>,
    /// A name for the container (default: Docker picks one).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Run as your own UID:GID (host), root, or the image's USER (default from the config: host).
    #[arg(long, value_parser = ["host", "root", "image"])]
    pub user: Option<String>,
    /// Size of /dev/shm, e.g. 16GiB (default from the config: 8GiB).
    #[arg(long, value_name = "SIZE")]
    pub shm: Option<String>,
    /// Start even when the compatibility verdict is "will not run".
    #[arg(long)]
    pub force: bool,
    /// List the kept shells instead.
    #[arg(long, conflicts_with_all = ["image", "attach"])]
    pub list: bool,
    /// Re-enter a kept shell by name (or id), starting it if it stopped.
    #[arg(long, value_name = "NAME", conflicts_with = "image")]
    pub attach: Option<String>,
    #[command(flatten)]
    pub gpu: GpuFlags,
    #[command(flatten)]
    pub docker: DockerFlags,
    #[command(flatten)]
    pub read_only: ReadOnlyFlag,
    /// The command to run instead of a shell, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}
