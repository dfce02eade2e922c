use bollard::models::{HostConfig, ResourcesUlimits};

use super::*;

#[test]
fn start_failures_read_like_the_host_path() {
    let gpu = start_error(DockerError::NoGpuRuntime {
        detail: "could not select device driver \"\" with capabilities: [[gpu]]".into(),
    });
    let text = gpu.to_string();
    assert!(text.starts_with(crate::shell::TOOLKIT_MESSAGE), "{text}");
    assert!(text.contains("could not select device driver"), "{text}");
    assert!(text.contains("systemctl restart docker"), "{text}");
    let missing = start_error(DockerError::Other(
        "OCI runtime create failed: exec: \"nope\": executable file not found in $PATH".into(),
    ));
    assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    let denied = start_error(DockerError::Other(
        "OCI runtime create failed: exec: \"/x\": permission denied".into(),
    ));
    assert_eq!(denied.kind(), io::ErrorKind::PermissionDenied);
    let other = start_error(DockerError::Other("no space left on device".into()));
    assert_eq!(other.kind(), io::ErrorKind::Other);
}

#[test]
fn a_limit_the_engine_refuses_is_dropped_once() {
    let limit = |name: &str| ResourcesUlimits {
        name: Some(name.into()),
        soft: Some(-1),
        hard: Some(-1),
    };
    let mut body = ContainerCreateBody {
        host_config: Some(HostConfig {
            ulimits: Some(vec![limit("memlock"), limit("stack")]),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(drop_ulimit(&mut body, "memlock"));
    assert!(
        !drop_ulimit(&mut body, "memlock"),
        "already gone: no retry loop"
    );
    let left = body.host_config.unwrap().ulimits.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].name.as_deref(), Some("stack"));
}

#[test]
fn the_strongest_signal_needed_is_reported() {
    assert_eq!(strongest("none", "SIGINT"), "SIGINT");
    assert_eq!(strongest("SIGKILL", "SIGTERM"), "SIGKILL");
    assert_eq!(strongest("SIGINT", "none"), "SIGINT");
}
