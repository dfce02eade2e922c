//! What a shell asks for (image, GPUs, workspace, user, limits) and the container body built from it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use bollard::models::{
    ContainerCreateBody, DeviceRequest, HostConfig, Mount, MountType, ResourcesUlimits,
};

use super::defaults::{check_network, ShellDefaults};
use super::error::ShellError;
use crate::config::UserMode;
use crate::launch_check::{refuse_dangerous_workdir, GpuPlumbing};

/// Every shell container carries this label (value "1"): `docker ps -a --filter label=gpudeck.shell`.
pub const LABEL_SHELL: &str = "gpudeck.shell";
/// The UUIDs of the GPUs the shell was given, comma-separated, or "none".
pub const LABEL_GPUS: &str = "gpudeck.shell.gpus";
/// The same GPUs by index, as `gpudeck shell --list` shows them.
pub const LABEL_GPU_INDICES: &str = "gpudeck.shell.gpu_indices";
/// The host directory mounted as the workspace.
pub const LABEL_WORKDIR: &str = "gpudeck.shell.workdir";

/// HOME for a host user: the image has no passwd entry (and no home) for an arbitrary UID, so
/// the shell gets a private tmpfs there that it owns.
pub const SHELL_HOME: &str = "/home/gpudeck";

/// The command when none is given: bash when the image has it, else sh. A fixed string, never
/// built from user input (user commands are passed as argv).
pub const DEFAULT_SHELL: [&str; 3] = [
    "/bin/sh",
    "-c",
    "if [ -x /bin/bash ]; then exec /bin/bash; fi; exec /bin/sh",
];

/// Which GPUs a shell gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellGpus {
    None,
    All,
    /// NVML indices, as `gpudeck gpus` and `nvidia-smi` number them; sorted, no duplicates.
    Indices(Vec<u32>),
}

impl FromStr for ShellGpus {
    type Err = ShellError;

    /// "none", "all" or comma-separated indices such as "2,3".
    fn from_str(text: &str) -> Result<Self, ShellError> {
        let bad = |why: &str| ShellError::BadGpuList {
            value: text.to_string(),
            why: why.to_string(),
        };
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => return Ok(ShellGpus::None),
            "all" => return Ok(ShellGpus::All),
            "" => return Err(bad("it is empty")),
            _ => {}
        }
        let mut indices = Vec::new();
        for part in text.split(',').map(str::trim) {
            let index = part
                .parse::<u32>()
                .map_err(|_| bad(&format!("`{part}` is not a GPU index")))?;
            indices.push(index);
        }
        indices.sort_unstable();
        indices.dedup();
        Ok(ShellGpus::Indices(indices))
    }
}

/// Everything one shell asks for; `None` fields take the [`ShellDefaults`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRequest {
    /// A local image: `repo:tag` or an id prefix.
    pub image: String,
    pub gpus: ShellGpus,
    /// The host directory to mount as the workspace; `None`: the current directory.
    pub workdir: Option<PathBuf>,
    /// argv to run; empty: [`DEFAULT_SHELL`] (bash when the image has it, else sh).
    pub command: Vec<String>,
    pub keep: bool,
    /// "bridge" or "none".
    pub network: Option<String>,
    /// The container's name; `None`: Docker picks one.
    pub name: Option<String>,
    pub user: Option<UserMode>,
    pub shm_bytes: Option<u64>,
    /// Start even when the compatibility verdict is "will not run".
    pub force: bool,
    /// Give the container a terminal (true when gpudeck's own stdin is one). Without it the
    /// output streams stay apart and piped input reaches the command with its end-of-file.
    pub tty: bool,
}

impl ShellRequest {
    /// A request for a shell in `image` with every other choice left to the defaults.
    pub fn new(image: impl Into<String>) -> ShellRequest {
        ShellRequest {
            image: image.into(),
            gpus: ShellGpus::None,
            workdir: None,
            command: Vec::new(),
            keep: false,
            network: None,
            name: None,
            user: None,
            shm_bytes: None,
            force: false,
            tty: true,
        }
    }
}

/// One GPU a shell gets, identified by UUID (indices can change between boots, UUIDs do not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedGpu {
    pub index: u32,
    pub uuid: String,
    pub name: String,
}

/// The GPUs pre-flight found for a request; empty for `--gpus none`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedGpus {
    pub gpus: Vec<ResolvedGpu>,
}

impl ResolvedGpus {
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// "uuid,uuid" or "none", for the label.
    pub fn uuids(&self) -> String {
        self.join(|g| g.uuid.clone())
    }

    /// "2,3" or "none".
    pub fn indices(&self) -> String {
        self.join(|g| g.index.to_string())
    }

    fn join(&self, part: impl Fn(&ResolvedGpu) -> String) -> String {
        if self.gpus.is_empty() {
            return "none".into();
        }
        self.gpus.iter().map(part).collect::<Vec<_>>().join(",")
    }
}

/// The container for one shell. Pure: every fact about the host comes in as an argument.
/// `cwd` is the directory used when the request names no workdir.
pub fn container_body(
    req: &ShellRequest,
    defaults: &ShellDefaults,
    gpus: &ResolvedGpus,
    plumbing: GpuPlumbing,
    host_user: (u32, u32),
    cwd: &Path,
) -> Result<ContainerCreateBody, ShellError> {
    let workdir = req
        .workdir
        .as_ref()
        .map_or_else(|| cwd.to_path_buf(), |w| cwd.join(w));
    refuse_dangerous_workdir(&workdir)?;
    let network = req
        .network
        .clone()
        .unwrap_or_else(|| defaults.network.clone());
    check_network(&network)?;
    let (device_requests, mut env) = gpu_parts(gpus, plumbing);
    let (user, user_env, tmpfs) = user_parts(req.user.unwrap_or(defaults.user), host_user);
    env.extend(user_env);
    let command = if req.command.is_empty() {
        DEFAULT_SHELL.map(str::to_string).to_vec()
    } else {
        req.command.clone()
    };
    let host_config = HostConfig {
        device_requests,
        tmpfs,
        network_mode: Some(network),
        ..isolated_host(req, defaults, &workdir)
    };
    Ok(ContainerCreateBody {
        image: Some(req.image.clone()),
        cmd: Some(command),
        env: Some(env).filter(|e| !e.is_empty()),
        user,
        working_dir: Some(defaults.mount_point.clone()),
        tty: Some(req.tty),
        open_stdin: Some(true),
        // A kept shell is re-entered by attaching again: closing stdin after the first session
        // would hand the next one an immediate end-of-file. Piped input needs its EOF passed on.
        stdin_once: Some(!req.tty),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        labels: Some(labels(gpus, &workdir)),
        host_config: Some(host_config),
        ..Default::default()
    })
}

/// The workspace mount, /dev/shm, limits and isolation every shell gets; never a Docker socket.
fn isolated_host(req: &ShellRequest, defaults: &ShellDefaults, workdir: &Path) -> HostConfig {
    HostConfig {
        mounts: Some(vec![Mount {
            target: Some(defaults.mount_point.clone()),
            source: Some(workdir.to_string_lossy().into_owned()),
            typ: Some(MountType::BIND),
            read_only: Some(false),
            ..Default::default()
        }]),
        shm_size: Some(
            i64::try_from(req.shm_bytes.unwrap_or(defaults.shm_bytes)).unwrap_or(i64::MAX),
        ),
        ulimits: ulimits(defaults),
        privileged: Some(false),
        security_opt: Some(vec!["no-new-privileges".into()]),
        cap_drop: Some(defaults.cap_drop.clone()).filter(|c| !c.is_empty()),
        // gpudeck removes the container itself, after reading its exit code.
        auto_remove: Some(false),
        ..Default::default()
    }
}

fn gpu_parts(
    gpus: &ResolvedGpus,
    plumbing: GpuPlumbing,
) -> (Option<Vec<DeviceRequest>>, Vec<String>) {
    // NVIDIA's images set NVIDIA_VISIBLE_DEVICES=all; where nvidia is the default runtime that
    // alone would hand over every GPU, so the variable always says exactly what was chosen.
    let uuids: Vec<String> = gpus.gpus.iter().map(|g| g.uuid.clone()).collect();
    match plumbing {
        _ if uuids.is_empty() => (None, vec!["NVIDIA_VISIBLE_DEVICES=void".into()]),
        GpuPlumbing::None => (None, vec!["NVIDIA_VISIBLE_DEVICES=void".into()]),
        GpuPlumbing::DeviceRequest => {
            let request = DeviceRequest {
                driver: Some(String::new()),
                count: Some(0),
                device_ids: Some(uuids.clone()),
                capabilities: Some(vec![vec!["gpu".into()]]),
                options: Some(HashMap::new()),
            };
            let env = format!("NVIDIA_VISIBLE_DEVICES={}", uuids.join(","));
            (Some(vec![request]), vec![env])
        }
        GpuPlumbing::Cdi => {
            let request = DeviceRequest {
                driver: Some("cdi".into()),
                device_ids: Some(
                    uuids
                        .iter()
                        .map(|u| format!("nvidia.com/gpu={u}"))
                        .collect(),
                ),
                ..Default::default()
            };
            // CDI injects the devices; a legacy-mode nvidia runtime must not add more.
            (
                Some(vec![request]),
                vec!["NVIDIA_VISIBLE_DEVICES=void".into()],
            )
        }
    }
}

/// The container's user, extra env and tmpfs mounts for a user mode.
fn user_parts(
    mode: UserMode,
    (uid, gid): (u32, u32),
) -> (Option<String>, Vec<String>, Option<HashMap<String, String>>) {
    match mode {
        UserMode::Host => {
            let options = format!("rw,exec,nosuid,nodev,mode=0700,uid={uid},gid={gid}");
            let tmpfs = HashMap::from([(SHELL_HOME.to_string(), options)]);
            (
                Some(format!("{uid}:{gid}")),
                vec![format!("HOME={SHELL_HOME}")],
                Some(tmpfs),
            )
        }
        UserMode::Root => (Some("0:0".into()), Vec::new(), None),
        UserMode::Image => (None, Vec::new(), None),
    }
}

fn ulimits(defaults: &ShellDefaults) -> Option<Vec<ResourcesUlimits>> {
    let limits: Vec<ResourcesUlimits> = [("memlock", defaults.memlock), ("stack", defaults.stack)]
        .into_iter()
        .filter_map(|(name, value)| {
            Some(ResourcesUlimits {
                name: Some(name.into()),
                soft: Some(value?),
                hard: value,
            })
        })
        .collect();
    Some(limits).filter(|l| !l.is_empty())
}

fn labels(gpus: &ResolvedGpus, workdir: &Path) -> HashMap<String, String> {
    HashMap::from([
        (LABEL_SHELL.to_string(), "1".to_string()),
        (LABEL_GPUS.to_string(), gpus.uuids()),
        (LABEL_GPU_INDICES.to_string(), gpus.indices()),
        (
            LABEL_WORKDIR.to_string(),
            workdir.to_string_lossy().into_owned(),
        ),
    ])
}

#[cfg(test)]
mod tests {
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

    fn body_for(
        req: &ShellRequest,
        gpus: &ResolvedGpus,
        plumbing: GpuPlumbing,
    ) -> ContainerCreateBody {
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
        for path in crate::launch_check::SYSTEM_PATHS_FOR_TESTS {
            let mut req = ShellRequest::new("img");
            req.workdir = Some((*path).into());
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
}
