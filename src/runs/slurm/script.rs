//! A run spec as a Slurm batch script: the `#SBATCH` header, the environment every task shares,
//! and one `srun` line per launcher. Pure: nothing is read or written.
//!
//! Every value a user gives reaches shell code only as a word quoted by `shlex`; the command's
//! argv is handed to the small fixed wrappers as positional arguments, never spliced into them.

use std::path::{Path, PathBuf};

use super::validate::{
    env_name, extra_line, mount_source, quote, quote_all, sbatch_path, sbatch_word, time_limit,
};
use crate::config::{SlurmContainer, SlurmSettings};
use crate::runs::error::slurm::SlurmError;
use crate::runs::launch::torchrun::{torchrun_args, FileKind};
use crate::runs::recorded::sampler::METRICS_FILE;
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
            // The files are on the cluster: judged by their names (`train.py`, `./run.sh`).
            let args = torchrun_args(command, &|_| FileKind::Unknown).map_err(|r| {
                SlurmError::TorchrunCommand {
                    why: r.why,
                    instead: r.instead,
                }
            })?;
            [wrapper.to_vec(), count, prefix, args].concat()
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
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::*;

    fn spec(launcher: Launcher, gpus: &str) -> RunSpec {
        RunSpec {
            name: Some("train".into()),
            command: vec![
                "python".into(),
                "train.py".into(),
                "--lr".into(),
                "0.1".into(),
            ],
            gpus: gpus.parse().expect("gpus"),
            launcher,
            workdir: Some(PathBuf::from("/work/proj")),
            ..RunSpec::default()
        }
    }

    fn script(spec: &RunSpec, settings: &SlurmSettings) -> String {
        batch_script(spec, settings, "run-1", Path::new("/work/logs")).expect("script")
    }

    fn sbatch_lines(text: &str) -> Vec<&str> {
        text.lines().filter(|l| l.starts_with("#SBATCH")).collect()
    }

    fn last_line(text: &str) -> &str {
        text.lines().last().expect("a launch line")
    }

    fn with_image(mut spec: RunSpec, kind: SlurmContainer) -> (RunSpec, SlurmSettings) {
        spec.image = Some("nvcr.io/nvidia/pytorch:24.01-py3".into());
        let settings = SlurmSettings {
            container: Some(kind),
            ..SlurmSettings::default()
        };
        (spec, settings)
    }

    #[test]
    fn a_single_host_run_is_this_whole_script() {
        let mut run = spec(Launcher::Single, "count:1");
        run.env.insert("SEED".into(), "7".into());
        let settings = SlurmSettings {
            time: Some("02:00:00".into()),
            partition: Some("gpu".into()),
            account: Some("ml-team".into()),
            extra: vec!["--mem=64G".into()],
            ..SlurmSettings::default()
        };
        let expected = format!(
            "#!/bin/bash
#SBATCH --job-name=gpudeck-train
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --time=02:00:00
#SBATCH --partition=gpu
#SBATCH --account=ml-team
#SBATCH --output=/work/logs/gpudeck-train-%j.out
#SBATCH --error=/work/logs/gpudeck-train-%j.err
#SBATCH --mem=64G

set -euo pipefail
cd /work/proj
export SEED=7
export GPUDECK_RUN_ID=run-1
export GPUDECK_GPUS_PER_NODE=1
{RENDEZVOUS}

GPUDECK_METRICS=/work/logs/metrics.csv
GPUDECK_GPU_SAMPLER={sampler}
{START_SAMPLER}

srun --ntasks=1 python train.py --lr 0.1
",
            sampler = quote("sampler", GPU_SAMPLER).unwrap()
        );
        assert_eq!(script(&run, &settings), expected);
    }

    #[test]
    fn a_run_without_gpus_has_no_gpu_sampler() {
        let run = spec(Launcher::Single, "none");
        let text = script(&run, &SlurmSettings::default());
        assert!(!text.contains("nvidia-smi"), "{text}");
        assert!(!text.contains("GPUDECK_METRICS"), "{text}");
    }

    #[test]
    fn per_gpu_runs_one_task_per_gpu_with_its_place_from_slurm() {
        let settings = SlurmSettings {
            nodes: Some(2),
            ..SlurmSettings::default()
        };
        let text = script(&spec(Launcher::PerGpu, "count:4"), &settings);
        assert_eq!(
            sbatch_lines(&text)[1..4],
            [
                "#SBATCH --nodes=2",
                "#SBATCH --ntasks-per-node=4",
                "#SBATCH --gres=gpu:4"
            ]
        );
        assert!(text.contains(TF_WORKERS), "{text}");
        assert!(text.contains("MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))"));
        let wrapper = shlex::try_quote(PER_GPU_WRAPPER).expect("quotable");
        assert_eq!(
            last_line(&text),
            format!(
                "srun --ntasks-per-node=4 --gpu-bind=single:1 --distribution=block \
             '--output=/work/logs/gpudeck-train-%j-rank%t.out' \
             '--error=/work/logs/gpudeck-train-%j-rank%t.err' \
             bash -c {wrapper} gpudeck-rank python train.py --lr 0.1"
            )
        );
        for derived in [
            r#"RANK="$SLURM_PROCID""#,
            r#"LOCAL_RANK="$SLURM_LOCALID""#,
            r#"WORLD_SIZE="$SLURM_NTASKS""#,
            r#"LOCAL_WORLD_SIZE="$SLURM_NTASKS_PER_NODE""#,
            r#"TF_CONFIG="${GPUDECK_TF_HEAD}${SLURM_PROCID}}}""#,
        ] {
            assert!(PER_GPU_WRAPPER.contains(derived), "{derived}");
        }
    }

    #[test]
    fn torchrun_runs_one_task_per_node_meeting_on_the_first() {
        let settings = SlurmSettings {
            nodes: Some(2),
            gpus_per_node: Some(8),
            ..SlurmSettings::default()
        };
        let text = script(&spec(Launcher::Torchrun, "count:1"), &settings);
        assert_eq!(
            sbatch_lines(&text)[1..4],
            [
                "#SBATCH --nodes=2",
                "#SBATCH --ntasks-per-node=1",
                "#SBATCH --gres=gpu:8"
            ]
        );
        assert!(text.contains("export GPUDECK_GPUS_PER_NODE=8\n"));
        assert!(!text.contains("GPUDECK_TF_WORKERS"), "{text}");
        let wrapper = shlex::try_quote(TORCHRUN_WRAPPER).expect("quotable");
        assert_eq!(
            last_line(&text),
            format!(
                "srun --ntasks-per-node=1 '--output=/work/logs/gpudeck-train-%j-node%n.out' \
             '--error=/work/logs/gpudeck-train-%j-node%n.err' \
             bash -c {wrapper} gpudeck-torchrun 0 train.py --lr 0.1"
            )
        );
    }

    #[test]
    fn pyxis_runs_each_launcher_in_the_image_with_the_workdir_mounted() {
        let pyxis = "'--container-image=nvcr.io/nvidia/pytorch:24.01-py3' \
                 '--container-mounts=/work/proj:/workspace' --container-workdir=/workspace";
        for (launcher, before, command) in [
            (
                Launcher::Single,
                "srun --ntasks=1 ",
                " python train.py --lr 0.1",
            ),
            (
                Launcher::PerGpu,
                "rank%t.err' ",
                " python train.py --lr 0.1",
            ),
            (Launcher::Torchrun, "node%n.err' ", " 0 train.py --lr 0.1"),
        ] {
            let (run, settings) = with_image(spec(launcher, "count:2"), SlurmContainer::Pyxis);
            let text = script(&run, &settings);
            let line = last_line(&text);
            assert!(line.contains(&format!("{before}{pyxis} ")), "{line}");
            assert!(line.ends_with(command), "{line}");
            assert!(!line.contains("apptainer"), "{line}");
        }
    }

    #[test]
    fn apptainer_wraps_the_command_of_each_launcher() {
        let apptainer = "apptainer exec --nv --bind /work/proj:/workspace --pwd /workspace \
                     docker://nvcr.io/nvidia/pytorch:24.01-py3";
        for (launcher, before, command) in [
            (
                Launcher::Single,
                "srun --ntasks=1 ",
                "python train.py --lr 0.1",
            ),
            (
                Launcher::PerGpu,
                " gpudeck-rank ",
                "python train.py --lr 0.1",
            ),
            // torchrun brings its own python (torch/distributed/run.py).
            (
                Launcher::Torchrun,
                " gpudeck-torchrun 8 ",
                "train.py --lr 0.1",
            ),
        ] {
            let (run, settings) = with_image(spec(launcher, "count:2"), SlurmContainer::Apptainer);
            let text = script(&run, &settings);
            let line = last_line(&text);
            assert!(
                line.ends_with(&format!("{before}{apptainer} {command}")),
                "{line}"
            );
            assert!(!line.contains("--container-image"), "{line}");
        }
    }

    #[test]
    fn cpu_only_single_runs_ask_for_no_gres() {
        let text = script(&spec(Launcher::Single, "none"), &SlurmSettings::default());
        assert!(!text.contains("--gres"), "{text}");
        assert!(text.contains("export GPUDECK_GPUS_PER_NODE=0\n"));
    }

    fn refusal(run: &RunSpec, settings: &SlurmSettings) -> SlurmError {
        batch_script(run, settings, "run-1", Path::new("/work/logs")).expect_err("refused")
    }

    #[test]
    fn named_gpus_and_all_are_refused_since_the_scheduler_picks() {
        let settings = SlurmSettings {
            gpus_per_node: Some(2),
            ..SlurmSettings::default()
        };
        for gpus in ["0,1", "GPU-aaaa"] {
            let err = refusal(&spec(Launcher::Single, gpus), &settings);
            assert!(matches!(err, SlurmError::NamedGpus { .. }), "{err}");
            assert!(err.to_string().contains("scheduler picks"), "{err}");
        }
        let all = refusal(&spec(Launcher::Single, "all"), &SlurmSettings::default());
        assert_eq!(all, SlurmError::AllGpus);
    }

    #[test]
    fn unsafe_sbatch_values_are_refused() {
        let cases = [
            SlurmSettings {
                partition: Some("gpu;rm -rf ~".into()),
                ..SlurmSettings::default()
            },
            SlurmSettings {
                account: Some("a b".into()),
                ..SlurmSettings::default()
            },
            SlurmSettings {
                time: Some("2h".into()),
                ..SlurmSettings::default()
            },
        ];
        for settings in cases {
            let err = refusal(&spec(Launcher::Single, "count:1"), &settings);
            assert!(matches!(err, SlurmError::BadValue { .. }), "{err}");
        }
        let mut named = spec(Launcher::Single, "count:1");
        named.name = Some("my run".into());
        let err = refusal(&named, &SlurmSettings::default());
        assert!(err.to_string().contains("`my run`"), "{err}");
    }

    #[test]
    fn extra_lines_must_be_one_long_option() {
        for line in ["mem=64G", "-N 2", "--mem=1G\n#SBATCH --nodes=100", "--"] {
            let settings = SlurmSettings {
                extra: vec![line.into()],
                ..SlurmSettings::default()
            };
            let err = refusal(&spec(Launcher::Single, "count:1"), &settings);
            assert!(matches!(err, SlurmError::BadExtra { .. }), "{line}: {err}");
        }
    }

    #[test]
    fn launchers_that_need_gpus_and_nodes_are_refused_without_them() {
        let none = SlurmSettings::default();
        for launcher in [Launcher::PerGpu, Launcher::Torchrun] {
            let err = refusal(&spec(launcher, "none"), &none);
            assert!(matches!(err, SlurmError::NeedsGpus { .. }), "{err}");
        }
        let two = SlurmSettings {
            nodes: Some(2),
            ..SlurmSettings::default()
        };
        let err = refusal(&spec(Launcher::Single, "count:1"), &two);
        assert_eq!(err, SlurmError::SingleOnManyNodes { nodes: 2 });
        let zero = SlurmSettings {
            nodes: Some(0),
            ..SlurmSettings::default()
        };
        assert_eq!(
            refusal(&spec(Launcher::Single, "count:1"), &zero),
            SlurmError::NoNodes
        );
        let mut image = spec(Launcher::Single, "count:1");
        image.image = Some("pytorch:latest".into());
        assert_eq!(refusal(&image, &none), SlurmError::NoContainerSupport);
    }

    #[test]
    fn a_container_work_dir_that_would_split_the_mount_is_refused() {
        for kind in [SlurmContainer::Pyxis, SlurmContainer::Apptainer] {
            let (mut run, settings) = with_image(spec(Launcher::Single, "count:1"), kind);
            run.workdir = Some(PathBuf::from("/data/a,b:c"));
            let err = refusal(&run, &settings);
            assert!(err.to_string().contains("cannot hold `,` or `:`"), "{err}");
        }
        let mut host = spec(Launcher::Single, "count:1");
        host.workdir = Some(PathBuf::from("/data/a,b:c"));
        assert!(batch_script(&host, &SlurmSettings::default(), "r", Path::new("/l")).is_ok());
    }

    /// Arguments and env values a shell would otherwise expand, split or run.
    fn hostile() -> Vec<String> {
        [
            "a b",
            "it's",
            "\"q\"",
            "$(touch pwned)",
            "`touch pwned`",
            "x;touch pwned",
            "l1\nl2",
            "$HOME",
            "*",
        ]
        .map(String::from)
        .to_vec()
    }

    /// A directory with stub `srun`, `scontrol`, `torchrun` and `apptainer` on PATH: srun drops
    /// its own options and runs the task, the others print what they were given.
    fn stub_bin(dir: &Path) -> PathBuf {
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).expect("bin");
        let stubs = [
        ("srun", "while [[ \"$1\" == --* ]]; do shift; done\nexec \"$@\""),
        ("scontrol", "printf 'node1\\nnode2\\n'"),
        ("torchrun", "printf 'torchrun<%s>\\n' \"$@\""),
        ("apptainer", "printf 'apptainer<%s>\\n' \"${@:1:7}\"; shift 7; exec \"$@\""),
        ("show", "printf '<%s>\\n' \"$@\"; printf 'HOSTILE=<%s>\\nRANK=%s\\nTF_CONFIG=%s\\n' \"$HOSTILE\" \"$RANK\" \"$TF_CONFIG\""),
    ];
        for (name, body) in stubs {
            let path = bin.join(name);
            std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).expect("stub");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        bin
    }

    /// Runs the script with the stubs as task 1 on node 0 of job 42, and returns its stdout.
    fn execute(text: &str, dir: &Path, bin: &Path) -> String {
        let file = dir.join("job.sh");
        std::fs::write(&file, text).expect("script");
        let syntax = Command::new("bash")
            .arg("-n")
            .arg(&file)
            .status()
            .expect("bash -n");
        assert!(syntax.success(), "bash -n refused:\n{text}");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .arg(&file)
            .env("PATH", path)
            .envs([
                ("SLURM_JOB_ID", "42"),
                ("SLURM_JOB_NODELIST", "node[1-2]"),
                ("SLURM_PROCID", "1"),
                ("SLURM_LOCALID", "1"),
                ("SLURM_NTASKS", "4"),
                ("SLURM_NTASKS_PER_NODE", "2"),
                ("SLURM_NNODES", "2"),
                ("SLURM_NODEID", "0"),
            ])
            .output()
            .expect("bash runs the script");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!dir.join("pwned").exists(), "a hostile value was run");
        String::from_utf8(out.stdout).expect("utf-8")
    }

    fn hostile_spec(launcher: Launcher, dir: &Path) -> RunSpec {
        let mut run = spec(launcher, "count:2");
        run.command = [vec!["show".to_string()], hostile()].concat();
        run.env
            .insert("HOSTILE".into(), "$(touch pwned) 'x' \"y\"\nz".into());
        run.workdir = Some(dir.to_path_buf());
        run
    }

    fn expected_argv() -> String {
        hostile().iter().map(|a| format!("<{a}>\n")).collect()
    }

    #[test]
    fn hostile_args_and_env_arrive_literally_in_a_per_gpu_task() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = stub_bin(dir.path());
        let run = hostile_spec(Launcher::PerGpu, dir.path());
        let text =
            batch_script(&run, &SlurmSettings::default(), "r'1", dir.path()).expect("script");
        let out = execute(&text, dir.path(), &bin);
        let tf = r#"{"cluster":{"worker":["node1:20043","node1:20044","node2:20043","node2:20044"]},"task":{"type":"worker","index":1}}"#;
        let tail = format!("HOSTILE=<$(touch pwned) 'x' \"y\"\nz>\nRANK=1\nTF_CONFIG={tf}\n");
        assert_eq!(out, format!("{}{tail}", expected_argv()));
    }

    #[test]
    fn hostile_args_arrive_literally_through_torchrun_and_apptainer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = stub_bin(dir.path());
        let run = hostile_spec(Launcher::Torchrun, dir.path());
        let settings = SlurmSettings {
            nodes: Some(2),
            ..SlurmSettings::default()
        };
        let text = batch_script(&run, &settings, "r1", dir.path()).expect("script");
        let out = execute(&text, dir.path(), &bin);
        let options = "--nnodes=2\n--node-rank=0\n--nproc-per-node=2\n--rdzv-id=42\n\
                   --rdzv-backend=c10d\n--rdzv-endpoint=node1:20042\n--no-python\nshow\n";
        let mut expected = options
            .lines()
            .map(|o| format!("torchrun<{o}>\n"))
            .collect::<String>();
        expected += &hostile()
            .iter()
            .map(|a| format!("torchrun<{a}>\n"))
            .collect::<String>();
        assert_eq!(out, expected);

        let (mut run, settings) = with_image(
            hostile_spec(Launcher::Single, dir.path()),
            SlurmContainer::Apptainer,
        );
        run.image = Some("img:$(touch pwned)".into());
        let text = batch_script(&run, &settings, "r1", dir.path()).expect("script");
        let out = execute(&text, dir.path(), &bin);
        assert!(
            out.contains("apptainer<docker://img:$(touch pwned)>\n"),
            "{out}"
        );
        assert!(out.contains(&expected_argv()), "{out}");
    }
}
