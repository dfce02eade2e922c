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
#[path = "spec_tests.rs"]
mod tests;
