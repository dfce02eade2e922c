use super::*;
use crate::doctor::host_env::FakeEnv;
use crate::doctor::testkit::healthy;

const PROC: &str = include_str!("testdata/proc_driver_nvidia_version");
const SYS: &str = include_str!("testdata/sys_module_nvidia_version");
const NVCC_OUT: &str = include_str!("testdata/nvcc_version");
const CDI: &str = include_str!("testdata/cdi_nvidia.yaml");

fn gather_on(env: &FakeEnv, docker_host: Option<&str>) -> HostFacts {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(gather(healthy().gpu, docker_host, env))
}

#[test]
fn the_kernel_module_comes_from_proc_then_sys() {
    let both = FakeEnv::default()
        .file(PROC_VERSION, PROC)
        .file(SYS_VERSION, SYS);
    let km = kernel_module(&both).expect("found");
    assert_eq!(km.file, PROC_VERSION);
    assert_eq!(km.version.as_ref().map(|v| v.open), Some(Some(true)));
    let sys_only = FakeEnv::default().file(SYS_VERSION, SYS);
    let km = kernel_module(&sys_only).expect("found");
    assert_eq!(
        (km.file.as_str(), km.version.map(|v| v.version)),
        (SYS_VERSION, Some("580.159.04".into()))
    );
    let garbled = FakeEnv::default().file(PROC_VERSION, "NVRM version: ???\n");
    assert_eq!(kernel_module(&garbled).map(|k| k.version), Some(None));
    assert_eq!(kernel_module(&FakeEnv::default()), None);
}

#[test]
fn a_dead_socket_is_unreachable_and_cdi_falls_back_to_the_default_dirs() {
    let env = FakeEnv::default()
        .file("/etc/cdi/nvidia.yaml", CDI)
        .file("/etc/cdi/readme.txt", "kind: nvidia.com/gpu")
        .file(
            "/var/run/cdi/other.json",
            include_str!("testdata/cdi_other.json"),
        );
    let f = gather_on(&env, Some("unix:///nonexistent.sock"));
    match &f.docker {
        DockerFacts::Unreachable { host, problem } => {
            assert_eq!(host.as_deref(), Some("unix:///nonexistent.sock"));
            assert_eq!(problem.kind, DockerProblemKind::NotRunning);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(f.cdi_dirs, vec!["/etc/cdi", "/var/run/cdi"]);
    let nvidia: Vec<&str> = f
        .cdi_specs
        .iter()
        .filter(|s| s.is_nvidia_gpu())
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(nvidia, vec!["/etc/cdi/nvidia.yaml"]);
    assert_eq!(
        f.cdi_specs.len(),
        2,
        "only .yaml/.yml/.json files are specs"
    );
}

#[test]
fn signs_of_docker_are_its_programs_a_configured_host_or_the_default_socket() {
    let none = FakeEnv::default().var("PATH", "/usr/local/bin:/usr/bin");
    assert_eq!(docker_install(None, &none), DockerInstall::default());
    assert!(!docker_install(None, &none).is_installed());
    let cli = none.clone().program("/usr/bin/docker", "");
    let found = docker_install(None, &cli);
    assert_eq!(found.programs.len(), 1);
    assert_eq!(found.programs[0].path, "/usr/bin/docker");
    assert!(found.is_installed());
    let daemon = none.clone().program("/usr/local/bin/dockerd", "");
    assert_eq!(docker_install(None, &daemon).programs[0].name, "dockerd");
    let flag = docker_install(Some("tcp://gpubox:2375"), &none);
    assert_eq!(flag.configured_host.as_deref(), Some("tcp://gpubox:2375"));
    let env = none.clone().var("DOCKER_HOST", "unix:///srv/docker.sock");
    assert_eq!(
        docker_install(None, &env).configured_host.as_deref(),
        Some("unix:///srv/docker.sock")
    );
    let blank = none.clone().var("DOCKER_HOST", " ");
    assert!(!docker_install(None, &blank).is_installed());
    let socket = none.clone().file(DEFAULT_SOCKET, "");
    assert_eq!(
        docker_install(None, &socket).socket.as_deref(),
        Some(DEFAULT_SOCKET)
    );
    // gather() fills it in.
    let gathered = gather_on(&cli, Some("unix:///nonexistent.sock"));
    assert_eq!(gathered.docker_install.programs[0].name, "docker");
    assert_eq!(
        gathered.docker_install.configured_host.as_deref(),
        Some("unix:///nonexistent.sock")
    );
}

#[test]
fn docker_host_comes_from_the_environment_and_bad_hosts_are_explained() {
    let env = FakeEnv::default().var("DOCKER_HOST", "unix:///nonexistent-env.sock");
    match gather_on(&env, None).docker {
        DockerFacts::Unreachable { host, .. } => {
            assert_eq!(host.as_deref(), Some("unix:///nonexistent-env.sock"))
        }
        other => panic!("{other:?}"),
    }
    match gather_on(&FakeEnv::default(), Some("ftp://nowhere")).docker {
        DockerFacts::Unreachable { problem, .. } => {
            assert_eq!(problem.kind, DockerProblemKind::Other);
            assert_eq!(problem.title, "Unsupported Docker host");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn toolkit_nvcc_and_cuda_variables_are_found() {
    let env = FakeEnv::default()
        .var("PATH", "/usr/local/bin:/usr/bin")
        .program("/usr/bin/nvidia-ctk", "")
        .program("/usr/bin/nvidia-container-cli", "")
        .program("/usr/local/bin/nvcc", NVCC_OUT)
        .var("CUDA_VISIBLE_DEVICES", "1")
        .var("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    let f = gather_on(&env, Some("unix:///nonexistent.sock"));
    let names: Vec<&str> = f.toolkit.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["nvidia-ctk", "nvidia-container-cli"]);
    let nvcc = f.nvcc.expect("nvcc");
    assert_eq!(
        (nvcc.path.as_str(), nvcc.release),
        ("/usr/local/bin/nvcc", Some((13, 0)))
    );
    assert_eq!(f.cuda_visible_devices.as_deref(), Some("1"));
    assert_eq!(f.cuda_device_order.as_deref(), Some("PCI_BUS_ID"));
    assert_eq!(f.os, "linux");
}

#[test]
fn nvcc_off_path_is_found_in_usr_local_cuda_and_bad_output_is_kept() {
    let env = FakeEnv::default().program(DEFAULT_NVCC, "Segmentation fault\n");
    let nvcc = gather_on(&env, Some("unix:///nonexistent.sock"))
        .nvcc
        .expect("nvcc");
    assert_eq!(nvcc.path, DEFAULT_NVCC);
    assert_eq!(nvcc.release, None);
    assert_eq!(nvcc.note.as_deref(), Some("Segmentation fault"));
    assert_eq!(
        gather_on(&FakeEnv::default(), Some("unix:///nonexistent.sock")).nvcc,
        None
    );
}

#[test]
fn free_space_is_read_for_local_engines_only() {
    let env = FakeEnv {
        free: [(std::path::PathBuf::from("/data/docker"), 42)].into(),
        ..FakeEnv::default()
    };
    assert_eq!(
        root_free("unix:///var/run/docker.sock", "/data/docker", &env),
        FreeSpace::Known {
            path: "/data/docker".into(),
            bytes: 42
        }
    );
    assert!(matches!(
        root_free("unix:///var/run/docker.sock", "", &env),
        FreeSpace::Unreadable { path, .. } if path == "/var/lib/docker"
    ));
    assert_eq!(
        root_free("tcp://10.0.0.2:2375", "/data/docker", &env),
        FreeSpace::Remote
    );
}

#[test]
fn facts_serialise_for_bug_reports() {
    let v = serde_json::to_value(healthy()).expect("json");
    assert_eq!(v["docker"]["state"], "reachable");
    assert_eq!(v["docker"]["root_free"]["kind"], "known");
    assert_eq!(v["kernel_module"]["version"]["version"], "580.65.06");
}

#[test]
fn gathering_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let env = FakeEnv::default();
    let future = gather(healthy().gpu, None, &env);
    assert_send(&future);
}
