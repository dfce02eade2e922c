//! A run spec as a Slurm batch script: the `#SBATCH` header, the environment every task shares,
//! and one `srun` line per launcher. Pure: nothing is read or written.
//!
//! Every value a user gives reaches shell code only as a word quoted by `shlex`; the command's
//! argv is handed to the small fixed wrappers as positional arguments, never spliced into them.

use std::path::{Path, PathBuf};

use super::error::SlurmError;
use super::validate::{
    env_name, extra_line, mount_source, quote, quote_all, sbatch_path, sbatch_word, time_limit,
};
use crate::config::{SlurmContainer, SlurmSettings};
use crate::runs::local::sampler::METRICS_FILE;
use crate::runs::spec::{GpuSelection, Launcher, RunSpec};

/// Each per-gpu task's place in the job, from what Slurm sets for the task. Rank order follows
/// `--distribution=block`: node by node, so rank = node * tasks per node + local rank, which is
/// the worker order of `GPUDECK_TF_WORKERS`.
const PER_GPU_WRAPPER: &str = r#"export RANK="$SLURM_PROCID" LOCAL_RANK="$SLURM_LOCALID" WORLD_SIZE="$SLURM_NTASKS" LOCAL_WORLD_SIZE="$SLURM_NTASKS_PER_NODE" TF_CONFIG="${GPUDECK_TF_HEAD}${SLURM_PROCID}}}"; exec "$@""#;

/// The task's node and the job's node count are known only inside the task, so torchrun's
/// options are written there; `$1` says how many of the words after it are a container prefix.
const TORCHRUN_WRAPPER: &str = r#"n=$1; shift; exec "${@:1:n}" torchrun --nnodes="$SLURM_NNODES" --node-rank="$SLURM_NODEID" --nproc-per-node="$GPUDECK_GPUS_PER_NODE" --rdzv-id="$SLURM_JOB_ID" --rdzv-backend=c10d --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" "${@:n+1}""#;

/// Where the job's first node is reached; the port is derived from the job id, so two jobs
/// sharing a first node are unlikely to clash, and nothing has to be probed before submitting.
const RENDEZVOUS: &str = r#"GPUDECK_HOSTS="$(scontrol show hostnames "$SLURM_JOB_NODELIST")"
MASTER_ADDR="$(head -n1 <<< "$GPUDECK_HOSTS")"
MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))
export MASTER_ADDR MASTER_PORT"#;

/// TensorFlow's cluster: every task's host and port (`MASTER_PORT + 1 + local rank`), up to
/// where each task's index goes; the wrapper stays free of quotes and backslashes that way.
const TF_WORKERS: &str = r#"GPUDECK_TF_WORKERS=""
for host in $GPUDECK_HOSTS; do
  for ((i = 0; i < GPUDECK_GPUS_PER_NODE; i++)); do
    GPUDECK_TF_WORKERS+="${GPUDECK_TF_WORKERS:+,}\"$host:$((MASTER_PORT + 1 + i))\""
  done
done
export GPUDECK_TF_HEAD="{\"cluster\":{\"worker\":[$GPUDECK_TF_WORKERS]},\"task\":{\"type\":\"worker\",\"index\":""#;

/// The job's GPUs on its first node, sampled once a second by `nvidia-smi` (kept running with
/// `-lms`, so NVML is set up once) into gpudeck's `metrics.csv` ($1), as the supervisor of a local
/// run records them: time in ms, index, UUID, utilisation, memory in bytes, power, temperature,
/// SM clock; a value nvidia-smi cannot give ("[N/A]") is left empty. `SLURM_JOB_GPUS` names the
/// node's GPUs the job holds. Run in a session of its own, so the whole pipeline can be stopped.
const GPU_SAMPLER: &str = r#"out=$1; gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}
num() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]] && printf %s "$1"; }
[ -s "$out" ] || echo "t_unix_ms,gpu_index,gpu_uuid,util_pct,mem_used_bytes,mem_total_bytes,power_w,temp_c,sm_clock_mhz" >"$out"
nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm   --format=csv,noheader,nounits ${gpus:+-i "$gpus"} -lms 1000 2>/dev/null |
while IFS=, read -r idx uuid util used total power temp clock; do
  if [ -n "${EPOCHREALTIME:-}" ]; then t=${EPOCHREALTIME/[.,]/}; t=${t:0:${#t}-3}; else printf -v t '%(%s)T000' -1; fi
  used=$(num "${used// /}"); total=$(num "${total// /}")
  echo "$t,$(num "${idx// /}"),${uuid// /},$(num "${util// /}"),${used:+$((used * 1048576))},${total:+$((total * 1048576))},$(num "${power// /}"),$(num "${temp// /}"),$(num "${clock// /}")"
done >>"$out""#;

/// Starts the sampler where nvidia-smi exists, and stops it (its whole session) when the
/// script exits.
const START_SAMPLER: &str = r#"if command -v nvidia-smi >/dev/null; then
  setsid bash -c "$GPUDECK_GPU_SAMPLER" gpudeck-gpus "$GPUDECK_METRICS" & GPUDECK_SAMPLER_PID=$!
  trap 'kill -- -"$GPUDECK_SAMPLER_PID" 2>/dev/null || true' EXIT
fi"#;

/// What the header and the launch line are made from, checked.
struct Job<'a> {
    name: String,
    nodes: u32,
    gpus_per_node: u32,
    launcher: Launcher,
    workdir: &'a Path,
    log_dir: String,
    container: Option<(SlurmContainer, &'a str)>,
}

/// The batch script for `spec` (its `[slurm]` table already merged into `settings`). The run's
/// work dir is `spec.workdir`, else `log_dir`; logs go to per-job files under `log_dir`, which
/// must exist when the job starts (Slurm does not create it).
pub fn batch_script(
    spec: &RunSpec,
    settings: &SlurmSettings,
    run_id: &str,
    log_dir: &Path,
) -> Result<String, SlurmError> {
    if spec.command.is_empty() {
        return Err(SlurmError::NoCommand);
    }
    let job = job_of(spec, settings, log_dir)?;
    let mut lines = vec!["#!/bin/bash".to_string()];
    lines.extend(header(&job, settings)?);
    lines.push(String::new());
    lines.push("set -euo pipefail".into());
    lines.push(format!(
        "cd {}",
        quote("work dir", &path_text(job.workdir))?
    ));
    for (name, value) in &spec.env {
        lines.push(format!(
            "export {}={}",
            env_name(name)?,
            quote("env value", value)?
        ));
    }
    lines.push(format!(
        "export GPUDECK_RUN_ID={}",
        quote("run id", run_id)?
    ));
    lines.push(format!(
        "export GPUDECK_GPUS_PER_NODE={}",
        job.gpus_per_node
    ));
    lines.push(RENDEZVOUS.into());
    if job.launcher == Launcher::PerGpu {
        lines.push(TF_WORKERS.into());
    }
    if job.gpus_per_node > 0 {
        lines.push(String::new());
        lines.push(format!(
            "GPUDECK_METRICS={}",
            quote("log dir", &format!("{}/{METRICS_FILE}", job.log_dir))?
        ));
        lines.push(format!(
            "GPUDECK_GPU_SAMPLER={}",
            quote("sampler", GPU_SAMPLER)?
        ));
        lines.push(START_SAMPLER.into());
    }
    lines.push(String::new());
    lines.push(launch_line(&job, &spec.command)?);
    Ok(lines.join("\n") + "\n")
}

fn job_of<'a>(
    spec: &'a RunSpec,
    settings: &'a SlurmSettings,
    log_dir: &'a Path,
) -> Result<Job<'a>, SlurmError> {
    let nodes = settings.nodes.unwrap_or(1);
    if nodes == 0 {
        return Err(SlurmError::NoNodes);
    }
    let gpus_per_node = gpus_per_node(&spec.gpus, settings.gpus_per_node)?;
    match spec.launcher {
        Launcher::Single if nodes > 1 => return Err(SlurmError::SingleOnManyNodes { nodes }),
        Launcher::PerGpu | Launcher::Torchrun if gpus_per_node == 0 => {
            return Err(SlurmError::NeedsGpus {
                launcher: spec.launcher.as_str(),
            })
        }
        _ => {}
    }
    let workdir = spec.workdir.as_deref().unwrap_or(log_dir);
    let container = match (&spec.image, settings.container) {
        (None, _) => None,
        (Some(_), None) => return Err(SlurmError::NoContainerSupport),
        (Some(image), Some(kind)) => Some((kind, image.as_str())),
    };
    if container.is_some() {
        mount_source(workdir)?;
    }
    Ok(Job {
        name: sbatch_word("run name", &spec.effective_name())?,
        nodes,
        gpus_per_node,
        launcher: spec.launcher,
        workdir,
        log_dir: sbatch_path("log dir", &path_text(log_dir))?,
        container,
    })
}

/// GPUs per node: `[slurm] gpus_per_node`, else the count the selection asks for. Indices and
/// UUIDs are refused: the scheduler, not the spec, picks a node's GPUs.
fn gpus_per_node(selection: &GpuSelection, asked: Option<u32>) -> Result<u32, SlurmError> {
    match (selection, asked) {
        (GpuSelection::Indices(_) | GpuSelection::Uuids(_), _) => Err(SlurmError::NamedGpus {
            selection: selection.to_string(),
        }),
        (_, Some(n)) => Ok(n),
        (GpuSelection::None, None) => Ok(0),
        (GpuSelection::Count(n), None) => Ok(u32::try_from(*n).unwrap_or(u32::MAX)),
        (GpuSelection::All, None) => Err(SlurmError::AllGpus),
    }
}

fn header(job: &Job<'_>, settings: &SlurmSettings) -> Result<Vec<String>, SlurmError> {
    let tasks_per_node = match job.launcher {
        Launcher::PerGpu => job.gpus_per_node,
        Launcher::Single | Launcher::Torchrun => 1,
    };
    let stem = format!("{}/gpudeck-{}-%j", job.log_dir, job.name);
    let mut options = vec![
        format!("--job-name=gpudeck-{}", job.name),
        format!("--nodes={}", job.nodes),
        format!("--ntasks-per-node={tasks_per_node}"),
    ];
    if job.gpus_per_node > 0 {
        options.push(format!("--gres=gpu:{}", job.gpus_per_node));
    }
    if let Some(time) = &settings.time {
        options.push(format!("--time={}", time_limit(time)?));
    }
    if let Some(partition) = &settings.partition {
        options.push(format!(
            "--partition={}",
            sbatch_word("partition", partition)?
        ));
    }
    if let Some(account) = &settings.account {
        options.push(format!("--account={}", sbatch_word("account", account)?));
    }
    options.push(format!("--output={stem}.out"));
    options.push(format!("--error={stem}.err"));
    for extra in &settings.extra {
        options.push(extra_line(extra)?);
    }
    Ok(options
        .into_iter()
        .map(|o| format!("#SBATCH {o}"))
        .collect())
}

/// How many nodes the job asks for, and GPUs on each.
pub fn job_shape(
    spec: &RunSpec,
    settings: &SlurmSettings,
    log_dir: &Path,
) -> Result<(u32, u32), SlurmError> {
    let job = job_of(spec, settings, log_dir)?;
    Ok((job.nodes, job.gpus_per_node))
}

/// The files Slurm writes each rank's stdout and stderr to, once the job id is known, in rank
/// order: the job's own for the single launcher, each task's (per-gpu) or node's (torchrun).
pub fn log_files(
    spec: &RunSpec,
    settings: &SlurmSettings,
    job_id: &str,
    log_dir: &Path,
) -> Result<Vec<(PathBuf, PathBuf)>, SlurmError> {
    let job = job_of(spec, settings, log_dir)?;
    let file =
        |tag: &str, ext: &str| log_dir.join(format!("gpudeck-{}-{job_id}{tag}.{ext}", job.name));
    let tags: Vec<String> = match job.launcher {
        Launcher::Single => vec![String::new()],
        Launcher::PerGpu => (0..job.nodes * job.gpus_per_node)
            .map(|t| format!("-rank{t}"))
            .collect(),
        Launcher::Torchrun => (0..job.nodes).map(|n| format!("-node{n}")).collect(),
    };
    Ok(tags
        .into_iter()
        .map(|tag| (file(&tag, "out"), file(&tag, "err")))
        .collect())
}

/// The `srun` line that starts the tasks.
fn launch_line(job: &Job<'_>, command: &[String]) -> Result<String, SlurmError> {
    let mut srun = srun_options(job)?;
    if let Some((SlurmContainer::Pyxis, image)) = job.container {
        srun.extend(pyxis_options(image, job.workdir)?);
    }
    let prefix = match job.container {
        Some((SlurmContainer::Apptainer, image)) => apptainer_prefix(image, job.workdir),
        _ => Vec::new(),
    };
    let program = match job.launcher {
        Launcher::Single => [prefix, command.to_vec()].concat(),
        Launcher::PerGpu => {
            let wrapper = ["bash", "-c", PER_GPU_WRAPPER, "gpudeck-rank"].map(String::from);
            [wrapper.to_vec(), prefix, command.to_vec()].concat()
        }
        Launcher::Torchrun => {
            let wrapper = ["bash", "-c", TORCHRUN_WRAPPER, "gpudeck-torchrun"].map(String::from);
            let count = vec![prefix.len().to_string()];
            [wrapper.to_vec(), count, prefix, command.to_vec()].concat()
        }
    };
    Ok(format!(
        "{} {}",
        srun.join(" "),
        quote_all("command", &program)?
    ))
}

/// `srun` and its task layout: how many tasks, their GPU binding, their log files.
fn srun_options(job: &Job<'_>) -> Result<Vec<String>, SlurmError> {
    let task_log = |tag: &str| -> Result<Vec<String>, SlurmError> {
        let stem = format!("{}/gpudeck-{}-%j-{tag}", job.log_dir, job.name);
        Ok(vec![
            quote("log dir", &format!("--output={stem}.out"))?,
            quote("log dir", &format!("--error={stem}.err"))?,
        ])
    };
    let mut srun = vec!["srun".to_string()];
    match job.launcher {
        Launcher::Single => srun.push("--ntasks=1".into()),
        // The job's GPUs come from `--gres`; `single:1` binds each task to one of its node's
        // (Slurm sets the task's CUDA_VISIBLE_DEVICES), without mixing `--gpus-per-task` in.
        Launcher::PerGpu => {
            srun.push(format!("--ntasks-per-node={}", job.gpus_per_node));
            srun.push("--gpu-bind=single:1".into());
            srun.push("--distribution=block".into());
            srun.extend(task_log("rank%t")?);
        }
        Launcher::Torchrun => {
            srun.push("--ntasks-per-node=1".into());
            srun.extend(task_log("node%n")?);
        }
    }
    Ok(srun)
}

/// pyxis runs the task in the image, with the work dir mounted at /workspace.
fn pyxis_options(image: &str, workdir: &Path) -> Result<Vec<String>, SlurmError> {
    Ok(vec![
        quote("image", &format!("--container-image={image}"))?,
        quote(
            "work dir",
            &format!("--container-mounts={}:/workspace", path_text(workdir)),
        )?,
        "--container-workdir=/workspace".into(),
    ])
}

/// Apptainer runs the command in the image (pulled from a registry unless it names a scheme or
/// a `.sif` file), with the GPUs (`--nv`) and the work dir at /workspace.
fn apptainer_prefix(image: &str, workdir: &Path) -> Vec<String> {
    let source = match image.contains("://") || image.ends_with(".sif") {
        true => image.to_string(),
        false => format!("docker://{image}"),
    };
    vec![
        "apptainer".into(),
        "exec".into(),
        "--nv".into(),
        "--bind".into(),
        format!("{}:/workspace", path_text(workdir)),
        "--pwd".into(),
        "/workspace".into(),
        source,
    ]
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;
