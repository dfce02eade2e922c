use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::doctor::testkit::{gpu, healthy, GIB};
use crate::gpu::{GpuProcess, ProcessKind};

/// Four GPUs of 80 GiB with 1 GiB in use; GPU 0 runs alice's training, GPU 3 has most of its
/// memory taken.
fn report() -> GpuReport {
    let mut report = healthy().gpu;
    report.gpus = (0..4).map(gpu).collect();
    report.gpu_count = 4;
    for g in &mut report.gpus {
        g.sample.memory_used_bytes = Some(GIB);
    }
    report.gpus[0].sample.processes.push(GpuProcess {
        gpu_index: 0,
        pid: 4242,
        kind: ProcessKind::Compute,
        used_memory_bytes: Some(10 * GIB),
        user: Some("alice".into()),
        command: Some("python train.py".into()),
        container: None,
        identity: None,
        gpu_util: None,
        cpu_pct: None,
        host_memory_bytes: None,
    });
    report.gpus[3].sample.memory_used_bytes = Some(70 * GIB);
    report
}

/// A directory with an executable `tool` and a plain `notes.txt`, used as PATH and work dir.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        Scratch { dir }
    }

    fn check(&self, spec: &RunSpec) -> Result<Checked, RunError> {
        let path = OsString::from(self.dir.path());
        preflight(&PreflightInput {
            spec,
            gpus: &report(),
            cwd: self.dir.path(),
            path: Some(&path),
            claimed: &[],
        })
    }
}

fn spec(gpus: &str, command: &[&str]) -> RunSpec {
    RunSpec {
        gpus: gpus.parse().unwrap(),
        command: command.iter().map(|s| s.to_string()).collect(),
        ..RunSpec::default()
    }
}

#[test]
fn indices_and_uuids_resolve_in_the_order_given() {
    let s = Scratch::new();
    let checked = s.check(&spec("2,1", &["tool"])).unwrap();
    let indices: Vec<u32> = checked.gpus.iter().map(|g| g.index).collect();
    assert_eq!(indices, [2, 1]);
    assert_eq!(checked.gpus[0].uuid, gpu(2).info.uuid);
    assert!(checked.warnings.is_empty(), "{:?}", checked.warnings);
    assert_eq!(checked.workdir, s.dir.path());

    let by_uuid = s
        .check(&spec(&gpu(1).info.uuid.to_lowercase(), &["tool"]))
        .unwrap();
    assert_eq!(by_uuid.gpus[0].index, 1);
}

#[test]
fn a_missing_gpu_names_the_gpus_there_are() {
    let s = Scratch::new();
    let err = s.check(&spec("1,7", &["tool"])).unwrap_err();
    let text = err.to_string();
    assert_eq!(
        text,
        "there is no GPU 7: this machine has GPUs 0-3 (4 × NVIDIA H100 80GB HBM3)"
    );
    let err = s.check(&spec("GPU-nope", &["tool"])).unwrap_err();
    assert!(
        err.to_string().starts_with("there is no GPU GPU-nope"),
        "{err}"
    );
}

#[test]
fn busy_gpus_are_warnings_naming_their_processes() {
    let s = Scratch::new();
    let checked = s.check(&spec("0,3", &["tool"])).unwrap();
    assert_eq!(checked.warnings.len(), 2, "{:?}", checked.warnings);
    assert!(
        checked.warnings[0].contains("GPU 0 is in use by python train.py (pid 4242, alice)"),
        "{:?}",
        checked.warnings
    );
    assert!(
        checked.warnings[1].contains("GPU 3"),
        "{:?}",
        checked.warnings
    );
}

#[test]
fn a_count_picks_free_gpus_or_says_which_are_busy() {
    let s = Scratch::new();
    let checked = s.check(&spec("count:2", &["tool"])).unwrap();
    let indices: Vec<u32> = checked.gpus.iter().map(|g| g.index).collect();
    assert_eq!(indices, [1, 2]);
    let err = s.check(&spec("count:3", &["tool"])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("3 free GPUs wanted, but only 2 of 4 are free"),
        "{text}"
    );
    assert!(text.contains("GPU 0 (in use by python train.py"), "{text}");
}

#[test]
fn a_missing_or_unusable_command_is_refused() {
    let s = Scratch::new();
    let err = s.check(&spec("1", &["no-such-tool"])).unwrap_err();
    assert!(matches!(err, RunError::CommandNotFound { .. }), "{err}");
    assert!(err.to_string().contains("on no directory of PATH"), "{err}");
    let err = s.check(&spec("1", &["./notes.txt"])).unwrap_err();
    assert!(err.to_string().contains("is not executable"), "{err}");
    assert!(s.check(&spec("1", &["./tool"])).is_ok());
    let mut torch = spec("1", &["train.py"]);
    torch.launcher = Launcher::Torchrun;
    let err = s.check(&torch).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the command `torchrun` was not found"),
        "{err}"
    );
}

#[test]
fn a_missing_workdir_and_no_command_are_refused() {
    let s = Scratch::new();
    let mut missing = spec("1", &["tool"]);
    missing.workdir = Some("nowhere".into());
    assert!(matches!(
        s.check(&missing),
        Err(RunError::BadWorkdir { .. })
    ));
    assert!(matches!(s.check(&spec("1", &[])), Err(RunError::NoCommand)));
}

#[test]
fn in_a_container_only_a_relative_program_is_looked_for_here() {
    let s = Scratch::new();
    let in_image = |command: &[&str], launcher: Launcher| {
        let mut run = spec("1", command);
        run.image = Some("nvcr.io/nvidia/pytorch:24.05-py3".into());
        run.launcher = launcher;
        s.check(&run)
    };
    // PATH is the image's: a bare name or an absolute path can only be found when it runs.
    assert!(in_image(&["python", "train.py"], Launcher::Single).is_ok());
    assert!(in_image(&["/opt/conda/bin/python"], Launcher::Single).is_ok());
    assert!(
        in_image(&["train.py"], Launcher::Torchrun).is_ok(),
        "torchrun is the image's"
    );
    // A relative path is in the work dir, which is the container's /workspace.
    assert!(in_image(&["./tool"], Launcher::Single).is_ok());
    let err = in_image(&["./missing.sh"], Launcher::Single).unwrap_err();
    assert!(matches!(err, RunError::CommandNotFound { .. }), "{err}");
}

#[test]
fn no_gpus_needs_no_driver_and_only_the_single_launcher() {
    let s = Scratch::new();
    let failed = crate::gpu::report::failed("h".into(), &crate::gpu::GpuError::DriverNotLoaded);
    let path = OsString::from(s.dir.path());
    let check = |run: &RunSpec| {
        preflight(&PreflightInput {
            spec: run,
            gpus: &failed,
            cwd: s.dir.path(),
            path: Some(&path),
            claimed: &[],
        })
    };
    let checked = check(&spec("none", &["tool"])).unwrap();
    assert!(checked.gpus.is_empty());
    assert!(checked.warnings.is_empty());
    for launcher in [Launcher::Torchrun, Launcher::PerGpu] {
        let mut run = spec("none", &["tool"]);
        run.launcher = launcher;
        let err = check(&run).unwrap_err();
        assert!(matches!(err, RunError::NeedsGpus { .. }), "{err}");
        assert!(err.to_string().contains(launcher.as_str()), "{err}");
        assert!(err.fix().contains("--launcher single"), "{err}");
    }
}

#[test]
fn unreadable_gpus_are_refused_with_the_reason() {
    let s = Scratch::new();
    let failed = crate::gpu::report::failed("h".into(), &crate::gpu::GpuError::DriverNotLoaded);
    let path = OsString::from(s.dir.path());
    let err = preflight(&PreflightInput {
        spec: &spec("0", &["tool"]),
        gpus: &failed,
        cwd: s.dir.path(),
        path: Some(&path),
        claimed: &[],
    })
    .unwrap_err();
    assert!(
        matches!(err, RunError::Launch(LaunchError::GpusUnreadable { .. })),
        "{err}"
    );
    assert!(err.fix().contains("gpudeck doctor"));
}

#[test]
fn gpus_without_the_free_memory_asked_for_are_refused_naming_ones_that_have_it() {
    let scratch = Scratch::new();
    let mut wanted = spec("2,3", &["tool"]);
    wanted.gpu_memory = Some("40GiB".into());
    let err = scratch.check(&wanted).unwrap_err();
    let RunError::NotEnoughGpuMemory { short, roomy, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(
        short.starts_with("GPU 3 has ") && !short.contains("GPU 2"),
        "{short}"
    );
    assert_eq!(roomy, "0,1,2");
    assert!(
        err.to_string().contains("40.0GiB free on each GPU"),
        "{err}"
    );
    assert!(err.fix().contains("--gpus 0,1,2"), "{}", err.fix());
    wanted.gpus = "1,2".parse().unwrap();
    assert!(scratch.check(&wanted).is_ok());
    wanted.gpu_memory = Some("lots".into());
    let err = scratch.check(&wanted).unwrap_err();
    assert!(matches!(err, RunError::BadSpec { .. }), "{err:?}");
}

/// GPUs live runs and shells claim count as busy before their processes show: `count:N` takes
/// others, an explicit one warns naming the owner, and a refusal says who holds what.
#[test]
fn claimed_gpus_are_busy_and_their_owners_are_named() {
    use crate::claims::{Claim, Owner};
    let s = Scratch::new();
    let path = OsString::from(s.dir.path());
    let gpus = report();
    let uuid = |i: usize| gpus.gpus[i].info.uuid.clone();
    let claimed = [
        Claim {
            owner: Owner::Run {
                id: "20261125-093000-bert-0001".into(),
                dir: "/runs/x".into(),
            },
            gpus: vec![uuid(1)],
            holder: None,
            created_ms: 0,
        },
        Claim {
            owner: Owner::Shell {
                name: "dev".into(),
                container: None,
            },
            gpus: vec![uuid(2).to_lowercase()],
            holder: None,
            created_ms: 0,
        },
    ];
    let check = |run: &RunSpec| {
        preflight(&PreflightInput {
            spec: run,
            gpus: &gpus,
            cwd: s.dir.path(),
            path: Some(&path),
            claimed: &claimed,
        })
    };
    // GPU 1 and 2 look free to NVML, but are claimed: GPU 0 and 3 are busy anyway.
    let err = check(&spec("count:1", &["tool"])).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RunError::NotEnoughFreeGpus { .. }), "{err:?}");
    assert!(
        text.contains("GPU 1 (claimed by run 20261125-093000-bert-0001)"),
        "{text}"
    );
    assert!(text.contains("GPU 2 (claimed by shell dev)"), "{text}");
    let checked = check(&spec("2", &["tool"])).unwrap();
    assert_eq!(checked.warnings, ["GPU 2 is claimed by shell dev"]);
    // Without the claims, `count:1` gets GPU 1.
    let free = s.check(&spec("count:1", &["tool"])).unwrap();
    assert_eq!(free.gpus[0].index, 1);
}

#[test]
fn more_gpus_than_the_machine_has_says_how_many_it_has() {
    let s = Scratch::new();
    let err = s.check(&spec("count:9", &["tool"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "9 GPUs wanted, but this machine has only 4: GPUs 0-3 (4 × NVIDIA H100 80GB HBM3)"
    );
    assert_eq!(
        err.fix(),
        "Ask for at most count:4, or `--gpus all` for every GPU."
    );
}
