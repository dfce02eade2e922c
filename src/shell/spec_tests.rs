use super::*;
use crate::config::ShellConfig;
use crate::launch_check::LaunchError;

const UUID_2: &str = "GPU-2222";
const UUID_3: &str = "GPU-3333";

fn two_gpus() -> ResolvedGpus {
    ResolvedGpus {
        gpus: vec![
            ResolvedGpu {
                index: 2,
                uuid: UUID_2.into(),
                name: "H100".into(),
            },
            ResolvedGpu {
                index: 3,
                uuid: UUID_3.into(),
                name: "H100".into(),
            },
        ],
    }
}

fn body_for(req: &ShellRequest, gpus: &ResolvedGpus, plumbing: GpuPlumbing) -> ContainerCreateBody {
    container_body(
        req,
        &ShellDefaults::default(),
        gpus,
        plumbing,
        (1000, 1001),
        Path::new("/home/ada/project"),
    )
    .expect("a valid request")
}

fn host(body: &ContainerCreateBody) -> &HostConfig {
    body.host_config.as_ref().expect("host config")
}

fn env(body: &ContainerCreateBody) -> Vec<String> {
    body.env.clone().unwrap_or_default()
}

#[test]
fn gpu_lists_parse() {
    assert_eq!("none".parse::<ShellGpus>().ok(), Some(ShellGpus::None));
    assert_eq!("ALL".parse::<ShellGpus>().ok(), Some(ShellGpus::All));
    assert_eq!(
        "3, 2,3".parse::<ShellGpus>().ok(),
        Some(ShellGpus::Indices(vec![2, 3]))
    );
    assert_eq!(
        "0".parse::<ShellGpus>().ok(),
        Some(ShellGpus::Indices(vec![0]))
    );
    for bad in ["", "2,,3", "gpu0", "-1", "2;3"] {
        assert!(
            matches!(bad.parse::<ShellGpus>(), Err(ShellError::BadGpuList { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn no_gpus_means_no_device_request_and_no_visible_devices() {
    let body = body_for(
        &ShellRequest::new("img"),
        &ResolvedGpus::default(),
        GpuPlumbing::None,
    );
    assert_eq!(host(&body).device_requests, None);
    assert!(env(&body).contains(&"NVIDIA_VISIBLE_DEVICES=void".to_string()));
    let labels = body.labels.clone().unwrap();
    assert_eq!(labels[LABEL_GPUS], "none");
    assert_eq!(labels[LABEL_GPU_INDICES], "none");
}

#[test]
fn chosen_gpus_are_a_device_request_by_uuid_as_docker_run_gpus_sends_it() {
    let body = body_for(
        &ShellRequest::new("img"),
        &two_gpus(),
        GpuPlumbing::DeviceRequest,
    );
    let requests = host(&body).device_requests.clone().unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.driver.as_deref(), Some(""));
    assert_eq!(request.count, Some(0));
    assert_eq!(
        request.device_ids,
        Some(vec![UUID_2.to_string(), UUID_3.to_string()])
    );
    assert_eq!(request.capabilities, Some(vec![vec!["gpu".to_string()]]));
    assert!(env(&body).contains(&format!("NVIDIA_VISIBLE_DEVICES={UUID_2},{UUID_3}")));
    let labels = body.labels.clone().unwrap();
    assert_eq!(labels[LABEL_GPUS], format!("{UUID_2},{UUID_3}"));
    assert_eq!(labels[LABEL_GPU_INDICES], "2,3");
}

#[test]
fn cdi_engines_get_cdi_device_names() {
    let body = body_for(&ShellRequest::new("img"), &two_gpus(), GpuPlumbing::Cdi);
    let request = &host(&body).device_requests.clone().unwrap()[0];
    assert_eq!(request.driver.as_deref(), Some("cdi"));
    assert_eq!(
        request.device_ids,
        Some(vec![
            format!("nvidia.com/gpu={UUID_2}"),
            format!("nvidia.com/gpu={UUID_3}")
        ])
    );
    assert_eq!(request.capabilities, None);
    assert!(env(&body).contains(&"NVIDIA_VISIBLE_DEVICES=void".to_string()));
}

#[test]
fn the_workdir_is_bind_mounted_read_write_and_is_the_working_dir() {
    let mut req = ShellRequest::new("img");
    let body = body_for(&req, &ResolvedGpus::default(), GpuPlumbing::None);
    let mounts = host(&body).mounts.clone().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].source.as_deref(), Some("/home/ada/project"));
    assert_eq!(mounts[0].target.as_deref(), Some("/workspace"));
    assert_eq!(mounts[0].typ, Some(MountType::BIND));
    assert_eq!(mounts[0].read_only, Some(false));
    assert_eq!(body.working_dir.as_deref(), Some("/workspace"));
    assert_eq!(body.labels.unwrap()[LABEL_WORKDIR], "/home/ada/project");

    req.workdir = Some("data".into());
    let body = body_for(&req, &ResolvedGpus::default(), GpuPlumbing::None);
    let source = host(&body).mounts.clone().unwrap()[0].source.clone();
    assert_eq!(
        source.as_deref(),
        Some("/home/ada/project/data"),
        "relative to cwd"
    );
}

#[test]
fn the_host_user_gets_its_ids_and_a_private_writable_home() {
    let body = body_for(
        &ShellRequest::new("img"),
        &ResolvedGpus::default(),
        GpuPlumbing::None,
    );
    assert_eq!(body.user.as_deref(), Some("1000:1001"));
    assert!(env(&body).contains(&format!("HOME={SHELL_HOME}")));
    let tmpfs = host(&body).tmpfs.clone().unwrap();
    let options = &tmpfs[SHELL_HOME];
    for part in ["uid=1000", "gid=1001", "mode=0700", "exec", "rw"] {
        assert!(options.split(',').any(|o| o == part), "{part} in {options}");
    }
}

#[test]
fn root_and_image_users() {
    let mut req = ShellRequest::new("img");
    req.user = Some(UserMode::Root);
    let body = body_for(&req, &ResolvedGpus::default(), GpuPlumbing::None);
    assert_eq!(body.user.as_deref(), Some("0:0"));
    assert_eq!(host(&body).tmpfs, None);
    assert!(!env(&body).iter().any(|e| e.starts_with("HOME=")));

    req.user = Some(UserMode::Image);
    let body = body_for(&req, &ResolvedGpus::default(), GpuPlumbing::None);
    assert_eq!(body.user, None, "the image's USER applies");
    assert_eq!(host(&body).tmpfs, None);
}

#[test]
fn network_shm_and_ulimits() {
    let mut req = ShellRequest::new("img");
    let body = body_for(&req, &ResolvedGpus::default(), GpuPlumbing::None);
    assert_eq!(host(&body).network_mode.as_deref(), Some("bridge"));
    assert_eq!(host(&body).shm_size, Some(8 << 30));
    let ulimits = host(&body).ulimits.clone().unwrap();
    let find = |name: &str| {
        ulimits
            .iter()
            .find(|u| u.name.as_deref() == Some(name))
            .cloned()
    };
    let memlock = find("memlock").unwrap();
    assert_eq!((memlock.soft, memlock.hard), (Some(-1), Some(-1)));
    let stack = find("stack").unwrap();
    assert_eq!((stack.soft, stack.hard), (Some(64 << 20), Some(64 << 20)));

    req.network = Some("none".into());
    req.shm_bytes = Some(1 << 30);
    let body = body_for(&req, &ResolvedGpus::default(), GpuPlumbing::None);
    assert_eq!(host(&body).network_mode.as_deref(), Some("none"));
    assert_eq!(host(&body).shm_size, Some(1 << 30));

    req.network = Some("host".into());
    let refused = container_body(
        &req,
        &ShellDefaults::default(),
        &ResolvedGpus::default(),
        GpuPlumbing::None,
        (0, 0),
        Path::new("/p"),
    );
    assert!(matches!(
        refused,
        Err(ShellError::BadSetting { key: "network", .. })
    ));
}

#[test]
fn docker_default_limits_leave_ulimits_out() {
    let defaults = ShellDefaults {
        memlock: None,
        stack: None,
        ..ShellDefaults::default()
    };
    let body = container_body(
        &ShellRequest::new("img"),
        &defaults,
        &ResolvedGpus::default(),
        GpuPlumbing::None,
        (0, 0),
        Path::new("/p"),
    )
    .unwrap();
    assert_eq!(host(&body).ulimits, None);
}

#[test]
fn isolation_defaults() {
    let body = body_for(
        &ShellRequest::new("img"),
        &ResolvedGpus::default(),
        GpuPlumbing::None,
    );
    let h = host(&body);
    assert_eq!(h.privileged, Some(false));
    assert_eq!(h.security_opt, Some(vec!["no-new-privileges".to_string()]));
    assert_eq!(h.auto_remove, Some(false));
    let dropped = h.cap_drop.clone().unwrap();
    for cap in [
        "NET_RAW",
        "MKNOD",
        "AUDIT_WRITE",
        "SETFCAP",
        "SYS_CHROOT",
        "SETPCAP",
    ] {
        assert!(dropped.iter().any(|c| c == cap), "{cap} dropped");
    }
    for kept in ["CHOWN", "SETUID", "SETGID", "DAC_OVERRIDE"] {
        assert!(
            !dropped.iter().any(|c| c == kept),
            "{kept} kept for apt-get as root"
        );
    }
    let mounts = h.mounts.clone().unwrap();
    assert!(mounts
        .iter()
        .all(|m| !m.source.clone().unwrap().contains("docker.sock")));
    assert_eq!(h.binds, None);
    assert_eq!(body.labels.unwrap()[LABEL_SHELL], "1");
}

#[test]
fn terminal_and_stdin() {
    let body = body_for(
        &ShellRequest::new("img"),
        &ResolvedGpus::default(),
        GpuPlumbing::None,
    );
    assert_eq!(body.tty, Some(true));
    assert_eq!(body.open_stdin, Some(true));
    assert_eq!(
        body.stdin_once,
        Some(false),
        "a kept shell can be attached again"
    );
    assert_eq!(
        (body.attach_stdin, body.attach_stdout, body.attach_stderr),
        (Some(true), Some(true), Some(true))
    );
    let mut piped = ShellRequest::new("img");
    piped.tty = false;
    let body = body_for(&piped, &ResolvedGpus::default(), GpuPlumbing::None);
    assert_eq!((body.tty, body.stdin_once), (Some(false), Some(true)));
}

#[test]
fn commands_are_argv_and_the_default_is_a_shell() {
    let body = body_for(
        &ShellRequest::new("img"),
        &ResolvedGpus::default(),
        GpuPlumbing::None,
    );
    assert_eq!(body.cmd, Some(DEFAULT_SHELL.map(String::from).to_vec()));
    assert_eq!(body.entrypoint, None, "the image's entrypoint still runs");
    let mut req = ShellRequest::new("img");
    req.command = vec!["python".into(), "-c".into(), "print('a; rm -rf /')".into()];
    let body = body_for(&req, &ResolvedGpus::default(), GpuPlumbing::None);
    assert_eq!(
        body.cmd,
        Some(req.command.clone()),
        "passed through untouched"
    );
    assert_eq!(body.image.as_deref(), Some("img"));
}

#[test]
fn docker_socket_workdirs_are_refused() {
    for path in [
        "/",
        "/var",
        "/run",
        "/var/run",
        "/run/user/1000",
        "/var/run/docker.sock",
        "/home/ada/docker.sock",
        "/home/ada/../../var/run",
    ] {
        let mut req = ShellRequest::new("img");
        req.workdir = Some(path.into());
        let refused = container_body(
            &req,
            &ShellDefaults::default(),
            &ResolvedGpus::default(),
            GpuPlumbing::None,
            (0, 0),
            Path::new("/home/ada"),
        );
        match refused {
            Err(ShellError::Launch(e @ LaunchError::DangerousWorkdir { .. })) => {
                assert!(e.to_string().contains("refusing to mount"), "{e}");
                assert!(e.fix().contains("--workdir"));
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    for fine in ["/home/ada/project", "/srv/data", "/variable"] {
        assert!(refuse_dangerous_workdir(Path::new(fine)).is_ok(), "{fine}");
    }
}

/// `launch_check`'s workspace tests refuse the same paths in `check_workspace`.
#[test]
fn system_directories_and_their_children_are_refused_in_the_body_even_forced() {
    for path in [
        "/",
        "/etc",
        "/etc/ssl",
        "/proc",
        "/proc/1",
        "/sys",
        "/sys/fs/cgroup",
        "/dev",
        "/dev/shm",
        "/boot",
        "/usr",
        "/usr/local/src",
        "/var",
        "/var/lib/docker",
        "/run",
        "/run/user/1000",
        "/root",
        "/root/project",
    ] {
        let mut req = ShellRequest::new("img");
        req.workdir = Some(path.into());
        req.force = true;
        let body = container_body(
            &req,
            &ShellDefaults::default(),
            &ResolvedGpus::default(),
            GpuPlumbing::None,
            (0, 0),
            Path::new("/home/ada"),
        );
        assert!(
            matches!(
                body,
                Err(ShellError::Launch(LaunchError::DangerousWorkdir { .. }))
            ),
            "{path}"
        );
    }
}

#[test]
fn config_values_become_defaults_and_bad_ones_name_their_key() {
    let defaults = ShellDefaults::from_config(&ShellConfig::default()).unwrap();
    assert_eq!(defaults, ShellDefaults::default());
    let config = ShellConfig {
        shm_size: "lots".into(),
        ..ShellConfig::default()
    };
    let err = ShellDefaults::from_config(&config).unwrap_err();
    assert!(
        err.to_string().starts_with("shell.shm_size = \"lots\""),
        "{err}"
    );
    let config = ShellConfig {
        memlock: "default".into(),
        ..ShellConfig::default()
    };
    assert_eq!(ShellDefaults::from_config(&config).unwrap().memlock, None);
    let config = ShellConfig {
        mount_point: "workspace".into(),
        ..ShellConfig::default()
    };
    assert!(matches!(
        ShellDefaults::from_config(&config),
        Err(ShellError::BadSetting {
            key: "mount_point",
            ..
        })
    ));
    let config = ShellConfig {
        network: "host".into(),
        ..ShellConfig::default()
    };
    assert!(ShellDefaults::from_config(&config).is_err());
}
