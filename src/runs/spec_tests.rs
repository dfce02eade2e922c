use super::*;
use crate::runs::slurm::SlurmContainer;

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
