//! `gpudeck run --on slurm`: `--dry-run` prints the batch script and touches neither the run
//! store nor the GPUs; without sbatch, a refusal that says what to install; the refusals of
//! specs a cluster cannot run, and `--dry-run` on the local backend. Submitting to a real
//! cluster is tested in `runs_slurm_cluster.rs`.

use crate::support;

use support::runs::output;
use support::{stderr, stdout, Dirs};

fn runs_dir(dirs: &Dirs) -> std::path::PathBuf {
    dirs.root.path().join("data").join("runs")
}

#[test]
fn dry_run_prints_the_batch_script_and_creates_no_run() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let work = dirs.root.path().join("proj");
    std::fs::create_dir(&work).expect("work dir");
    let workdir = work.to_str().expect("utf-8");
    let out = output(
        &dirs,
        &[
            "run",
            "--on",
            "slurm",
            "--dry-run",
            "--name",
            "resnet",
            "--gpus",
            "count:4",
            "--launcher",
            "torchrun",
            "--nodes",
            "2",
            "--time",
            "02:00:00",
            "--partition",
            "gpu",
            "--account",
            "ml",
            "--workdir",
            workdir,
            "--",
            "python",
            "train.py",
            "--note",
            "a b",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    assert!(script.starts_with("#!/bin/bash\n"), "{script}");
    for line in [
        "#SBATCH --job-name=gpudeck-resnet",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --time=02:00:00",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=ml",
        &format!("#SBATCH --output={workdir}/gpudeck-resnet-%j.out"),
        &format!("cd {workdir}"),
    ] {
        assert!(
            script.lines().any(|l| l == line),
            "no `{line}` in:\n{script}"
        );
    }
    let launch = script.lines().last().expect("launch line");
    assert!(launch.starts_with("srun --ntasks-per-node=1 "), "{launch}");
    assert!(
        // torchrun brings its own python: the script is its first argument.
        launch.ends_with("gpudeck-torchrun 0 train.py --note 'a b'"),
        "{launch}"
    );
    assert!(!runs_dir(&dirs).exists(), "a dry run created the run store");
}

#[test]
fn a_spec_file_with_backend_slurm_needs_no_gpu_driver_for_a_dry_run() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let spec = dirs.root.path().join("job.toml");
    let text = "name = \"bert\"\ncommand = [\"python\", \"t.py\"]\nbackend = \"slurm\"\n\
                launcher = \"per-gpu\"\nimage = \"pytorch:24.01\"\n\
                [slurm]\ngpus_per_node = 8\ncontainer = \"pyxis\"\nextra = [\"--mem=0\"]\n";
    std::fs::write(&spec, text).expect("spec");
    // No --demo: the GPUs are never opened, so no NVML is needed.
    let out = dirs
        .gpudeck("gpus=0")
        .args(["run", spec.to_str().expect("utf-8"), "--dry-run"])
        .output()
        .expect("gpudeck runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    assert!(script.contains("#SBATCH --ntasks-per-node=8\n"), "{script}");
    assert!(script.contains("#SBATCH --mem=0\n"), "{script}");
    assert!(
        script.contains("'--container-image=pytorch:24.01'"),
        "{script}"
    );
    assert!(!runs_dir(&dirs).exists());
}

#[test]
fn a_controller_nobody_answers_is_unreachable_and_the_run_is_kept_as_failed() {
    let _gate = crate::support::gate::gate(module_path!());
    let sbatch = std::process::Command::new("sbatch")
        .arg("--version")
        .output()
        .is_ok();
    let test = "a_controller_nobody_answers_is_unreachable_and_the_run_is_kept_as_failed";
    let part = crate::support::real::Part::Slurm;
    if !crate::support::real::have(part, test, sbatch, "sbatch is not installed") {
        return;
    }
    let dirs = Dirs::new();
    let conf_dir = tempfile::tempdir().expect("tempdir");
    let host = std::process::Command::new("hostname")
        .arg("-s")
        .output()
        .expect("hostname");
    let host = stdout(&host).trim().to_string();
    // Port 1: nothing listens, so sbatch's connection is refused.
    let conf = format!(
        "ClusterName=nowhere\nSlurmctldHost={host}(127.0.0.1)\nSlurmctldPort=1\n\
         AuthType=auth/munge\nNodeName={host} CPUs=1\nPartitionName=debug Nodes={host} Default=YES\n"
    );
    std::fs::write(conf_dir.path().join("slurm.conf"), conf).unwrap();
    let out = support::runs::gpudeck(
        &dirs,
        &["run", "--on", "slurm", "--gpus", "none", "--", "true"],
    )
    .env("SLURM_CONF", conf_dir.path().join("slurm.conf"))
    .output()
    .expect("gpudeck runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("could not be reached"), "{err}");
    assert!(err.contains("Unable to contact slurm controller"), "{err}");
    assert!(err.contains("slurmctld") && err.contains("sinfo"), "{err}");
    // The refused submission is in the store, failed with the reason.
    let list = support::runs::gpudeck(&dirs, &["runs", "--json"])
        .output()
        .expect("gpudeck runs");
    let doc: serde_json::Value = serde_json::from_str(&stdout(&list)).unwrap();
    let run = &doc["runs"][0];
    assert_eq!(run["state"], "failed", "{doc}");
    assert!(
        run["error"]
            .as_str()
            .is_some_and(|e| e.contains("sbatch refused the job")),
        "{doc}"
    );
}

#[test]
fn without_sbatch_submitting_fails_and_says_what_to_install() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let empty = tempfile::tempdir().expect("tempdir");
    let out = support::runs::gpudeck(&dirs, &["run", "--on", "slurm", "--", "python", "train.py"])
        .env("PATH", empty.path())
        .output()
        .expect("gpudeck runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("sbatch is not installed"), "{err}");
    assert!(
        err.contains("Install Slurm's client tools") && err.contains("--dry-run"),
        "{err}"
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn specs_a_cluster_cannot_run_are_usage_errors() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    for (args, says) in [
        (vec!["--gpus", "0,1"], "the scheduler picks"),
        (vec!["--partition", "gpu;reboot"], "`gpu;reboot`"),
        (
            vec!["--gpus", "none", "--launcher", "per-gpu"],
            "at least one GPU",
        ),
    ] {
        let mut all = vec!["run", "--on", "slurm", "--dry-run"];
        all.extend(args);
        all.extend(["--", "python", "train.py"]);
        let out = output(&dirs, &all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{all:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{all:?} printed a script");
    }
}

#[test]
fn slurm_flags_on_the_local_backend_are_usage_errors() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let out = output(&dirs, &["run", "--dry-run", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("only applies to the slurm backend"),
        "{}",
        stderr(&out)
    );
    assert!(!runs_dir(&dirs).exists());
}

#[test]
fn the_config_slurm_section_fills_what_the_spec_and_flags_leave_out() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    std::fs::create_dir_all(dirs.config()).expect("config dir");
    let config = "[slurm]\npartition = \"gpu\"\naccount = \"ml\"\ncontainer = \"apptainer\"\n";
    std::fs::write(dirs.config().join("config.toml"), config).expect("config");
    let out = output(
        &dirs,
        &[
            "run",
            "--on",
            "slurm",
            "--dry-run",
            "--partition",
            "debug",
            "--image",
            "pytorch:24",
            "--",
            "python",
            "train.py",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    assert!(script.contains("#SBATCH --partition=debug\n"), "{script}");
    assert!(script.contains("#SBATCH --account=ml\n"), "{script}");
    assert!(
        script.contains(" docker://pytorch:24 python train.py\n"),
        "{script}"
    );
}

#[test]
fn the_config_can_make_slurm_the_backend_and_on_local_wins_over_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    std::fs::create_dir_all(dirs.config()).expect("config dir");
    let config = "[runs]\nbackend = \"slurm\"\n";
    std::fs::write(dirs.config().join("config.toml"), config).expect("config");
    let out = output(&dirs, &["run", "--dry-run", "--", "python", "train.py"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("\nsrun --ntasks=1 python train.py\n"));
    let local = output(&dirs, &["run", "--on", "local", "--dry-run", "--", "true"]);
    assert_eq!(local.status.code(), Some(2), "{}", stderr(&local));
    assert!(!runs_dir(&dirs).exists());
}
