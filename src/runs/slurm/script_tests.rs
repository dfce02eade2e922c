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
             bash -c {wrapper} gpudeck-torchrun 0 python train.py --lr 0.1"
        )
    );
}

#[test]
fn pyxis_runs_each_launcher_in_the_image_with_the_workdir_mounted() {
    let pyxis = "'--container-image=nvcr.io/nvidia/pytorch:24.01-py3' \
                 '--container-mounts=/work/proj:/workspace' --container-workdir=/workspace";
    for (launcher, before) in [
        (Launcher::Single, "srun --ntasks=1 "),
        (Launcher::PerGpu, "rank%t.err' "),
        (Launcher::Torchrun, "node%n.err' "),
    ] {
        let (run, settings) = with_image(spec(launcher, "count:2"), SlurmContainer::Pyxis);
        let text = script(&run, &settings);
        let line = last_line(&text);
        assert!(line.contains(&format!("{before}{pyxis} ")), "{line}");
        assert!(line.ends_with("python train.py --lr 0.1"), "{line}");
        assert!(!line.contains("apptainer"), "{line}");
    }
}

#[test]
fn apptainer_wraps_the_command_of_each_launcher() {
    let apptainer = "apptainer exec --nv --bind /work/proj:/workspace --pwd /workspace \
                     docker://nvcr.io/nvidia/pytorch:24.01-py3 python train.py --lr 0.1";
    for (launcher, before) in [
        (Launcher::Single, "srun --ntasks=1 "),
        (Launcher::PerGpu, " gpudeck-rank "),
        (Launcher::Torchrun, " gpudeck-torchrun 8 "),
    ] {
        let (run, settings) = with_image(spec(launcher, "count:2"), SlurmContainer::Apptainer);
        let text = script(&run, &settings);
        let line = last_line(&text);
        assert!(line.ends_with(&format!("{before}{apptainer}")), "{line}");
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
    let text = batch_script(&run, &SlurmSettings::default(), "r'1", dir.path()).expect("script");
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
                   --rdzv-backend=c10d\n--rdzv-endpoint=node1:20042\nshow\n";
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
