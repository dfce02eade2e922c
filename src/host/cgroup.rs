//! Which container, if any, a process runs in, read from its `/proc/PID/cgroup` lines.

use std::fmt;

use serde::Serialize;

/// The engine that created a container, as far as its cgroup path tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContainerRuntime {
    Docker,
    Podman,
    /// containerd, directly (nerdctl) or as a Kubernetes CRI.
    Containerd,
    CriO,
    /// A Kubernetes pod under the cgroupfs driver: the path names the pod but not the runtime.
    Kubernetes,
    /// A container of the simulation (`--demo`): no engine on this machine has it.
    Simulated,
}

impl fmt::Display for ContainerRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Docker => "docker",
            Self::Podman => "podman",
            Self::Containerd => "containerd",
            Self::CriO => "cri-o",
            Self::Kubernetes => "kubernetes",
            Self::Simulated => "simulated",
        })
    }
}

/// A container a process belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ContainerRef {
    pub runtime: ContainerRuntime,
    /// The full 64-hex-digit container id.
    pub id: String,
}

impl ContainerRef {
    /// The 12-character id that `docker ps` and friends show.
    pub fn short_id(&self) -> &str {
        self.id.get(..12).unwrap_or(&self.id)
    }

    /// A container of the simulation (`--demo`), which no Docker Engine lists.
    pub fn is_simulated(&self) -> bool {
        self.runtime == ContainerRuntime::Simulated
    }
}

impl fmt::Display for ContainerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.runtime, self.short_id())
    }
}

/// Scope-unit prefixes that systemd-managed runtimes give a container's cgroup
/// (`docker-<id>.scope`); the cgroupfs drivers use the same names without `.scope`.
const SCOPE_PREFIXES: [(&str, ContainerRuntime); 5] = [
    ("docker-", ContainerRuntime::Docker),
    ("libpod-", ContainerRuntime::Podman),
    ("cri-containerd-", ContainerRuntime::Containerd),
    ("nerdctl-", ContainerRuntime::Containerd),
    ("crio-", ContainerRuntime::CriO),
];

/// Finds the container a process runs in from the contents of `/proc/PID/cgroup`, in either
/// cgroup v1 (`12:memory:/docker/<id>`) or v2 (`0::/system.slice/docker-<id>.scope`) form.
///
/// Lines are tried in order and the first container found wins: in a v1 file every controller
/// names the same container, and in nested layouts the outermost container is the one the host's
/// engine knows about. Host processes, and cgroups of runtimes not listed here, give `None`.
pub fn container_from_cgroup(contents: &str) -> Option<ContainerRef> {
    contents.lines().find_map(container_from_line)
}

fn container_from_line(line: &str) -> Option<ContainerRef> {
    // `hierarchy-id:controllers:path`; the path itself may contain ':'.
    let path = line.splitn(3, ':').nth(2)?;
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let in_kubepods = segments.iter().any(|s| s.starts_with("kubepods"));
    segments.iter().enumerate().find_map(|(i, segment)| {
        let parent = i.checked_sub(1).and_then(|p| segments.get(p)).copied();
        container_from_segment(segment, parent, in_kubepods)
    })
}

fn container_from_segment(
    segment: &str,
    parent: Option<&str>,
    in_kubepods: bool,
) -> Option<ContainerRef> {
    let unit = segment.strip_suffix(".scope").unwrap_or(segment);
    for (prefix, runtime) in SCOPE_PREFIXES {
        // A conmon scope (`libpod-conmon-<id>`) fails the id check: conmon runs outside the
        // container it watches.
        if let Some(id) = unit.strip_prefix(prefix).filter(|id| is_container_id(id)) {
            return Some(container(runtime, id));
        }
    }
    if !is_container_id(segment) {
        return None;
    }
    match parent {
        // cgroupfs driver, v1 or v2: `/docker/<id>`.
        Some("docker") => Some(container(ContainerRuntime::Docker, segment)),
        // Kubernetes cgroupfs driver: `/kubepods/<qos>/pod<uid>/<id>`.
        Some(pod) if in_kubepods && pod.starts_with("pod") => {
            Some(container(ContainerRuntime::Kubernetes, segment))
        }
        _ => None,
    }
}

fn container(runtime: ContainerRuntime, id: &str) -> ContainerRef {
    ContainerRef {
        runtime,
        id: id.to_owned(),
    }
}

fn is_container_id(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContainerRuntime::*;

    const ID: &str = "3f4e8a1b2c3d4e5f6071829a3b4c5d6e7f80112233445566778899aabbccddee";
    const ID2: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn parse(contents: &str) -> Option<(ContainerRuntime, String)> {
        container_from_cgroup(contents).map(|c| (c.runtime, c.id))
    }

    #[test]
    fn recognises_container_cgroups() {
        let cases: Vec<(String, ContainerRuntime)> = vec![
            (format!("12:memory:/docker/{ID}"), Docker),
            (format!("4:cpu,cpuacct:/docker/{ID}/init.scope"), Docker),
            (format!("1:name=systemd:/docker/{ID}/system.slice/cron.service"), Docker),
            (format!("0::/docker/{ID}"), Docker),
            (format!("0::/system.slice/docker-{ID}.scope"), Docker),
            (format!("0::/system.slice/docker-{ID}.scope/init.scope"), Docker),
            (
                format!("0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{ID}.scope"),
                Docker,
            ),
            (format!("0::/machine.slice/libpod-{ID}.scope"), Podman),
            (format!("0::/machine.slice/libpod-{ID}.scope/container"), Podman),
            (
                format!("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope"),
                Podman,
            ),
            (format!("11:devices:/libpod_parent/libpod-{ID}"), Podman),
            (format!("0::/system.slice/nerdctl-{ID}.scope"), Containerd),
            (
                format!("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/cri-containerd-{ID}.scope"),
                Containerd,
            ),
            (
                format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12345678_90ab_cdef_1234_567890abcdef.slice/crio-{ID}.scope"),
                CriO,
            ),
            (
                format!("0::/kubepods.slice/kubepods-pod12345678_90ab_cdef_1234_567890abcdef.slice/docker-{ID}.scope"),
                Docker,
            ),
            (
                format!("10:memory:/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/{ID}"),
                Kubernetes,
            ),
            (
                format!("8:cpuset:/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/{ID}"),
                Kubernetes,
            ),
            (
                format!("3:pids:/kubepods/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/{ID}"),
                Kubernetes,
            ),
            (
                format!("9:blkio:/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/crio-{ID}"),
                CriO,
            ),
        ];
        for (line, runtime) in cases {
            assert_eq!(parse(&line), Some((runtime, ID.to_owned())), "line: {line}");
        }
    }

    #[test]
    fn host_and_unknown_cgroups_are_not_containers() {
        let cases = [
            // The real file from an H100 host (shared/fixtures/h100-host/proc_self_cgroup).
            include_str!("../../tests/fixtures/h100-host/proc_self_cgroup"),
            "0::/",
            "0::/init.scope",
            "0::/user.slice/user-1000.slice/session-3.scope",
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1b2c.scope",
            "0::/system.slice/docker.service",
            "0::/system.slice/containerd.service",
            "1:name=systemd:/system.slice/sshd.service",
            // conmon watches a podman container from outside it.
            &format!("0::/machine.slice/libpod-conmon-{ID}.scope"),
            &format!("0::/system.slice/crio-conmon-{ID}.scope"),
            // A 64-hex segment alone says nothing about the runtime.
            &format!("0::/some.slice/{ID}"),
            // Short or upper-case ids are not engine ids.
            "12:memory:/docker/3f4e8a1b2c3d",
            &format!("12:memory:/docker/{}", ID.to_uppercase()),
            &format!("0::/system.slice/docker-{ID}0.scope"),
            "",
            "garbage without colons",
        ];
        for contents in cases {
            assert_eq!(parse(contents), None, "contents: {contents:?}");
        }
    }

    #[test]
    fn v1_file_with_many_controllers() {
        let contents = format!(
            "12:hugetlb:/docker/{ID}\n11:memory:/docker/{ID}\n10:pids:/docker/{ID}\n\
             1:name=systemd:/docker/{ID}\n0::/system.slice/containerd.service\n"
        );
        assert_eq!(parse(&contents), Some((Docker, ID.to_owned())));
    }

    #[test]
    fn v1_file_with_container_only_on_some_controllers() {
        let contents =
            format!("9:name=systemd:/\n8:pids:/\n4:memory:/docker/{ID}\n3:cpuset:/\n0::/\n");
        assert_eq!(parse(&contents), Some((Docker, ID.to_owned())));
    }

    #[test]
    fn nested_containers_give_the_outermost() {
        let contents = format!("0::/docker/{ID}/docker/{ID2}");
        assert_eq!(parse(&contents), Some((Docker, ID.to_owned())));
    }

    #[test]
    fn short_id_and_display() {
        let container = ContainerRef {
            runtime: Podman,
            id: ID.to_owned(),
        };
        assert_eq!(container.short_id(), "3f4e8a1b2c3d");
        assert_eq!(container.to_string(), "podman 3f4e8a1b2c3d");
        let odd = ContainerRef {
            runtime: Docker,
            id: "abc".to_owned(),
        };
        assert_eq!(odd.short_id(), "abc");
    }

    #[test]
    fn runtime_names() {
        let names: Vec<String> = [Docker, Podman, Containerd, CriO, Kubernetes]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            names,
            ["docker", "podman", "containerd", "cri-o", "kubernetes"]
        );
    }
}
