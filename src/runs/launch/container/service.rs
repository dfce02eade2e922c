//! What a service's container (`gpudeck notebook`, `tensorboard`, `triton` with an image) has
//! beyond a run's: each of its ports published on the host's 127.0.0.1 only, to the same port
//! inside, a bridge network of its own to publish them from (made at the start, removed with
//! the container), and the `gpudeck.service` label. Everything else (user, workspace, shm,
//! isolation) is the run's, so the shell's.

use std::collections::HashMap;

use std::path::Path;

use bollard::models::{ContainerCreateBody, Mount, MountType, NetworkCreateRequest, PortBinding};

use crate::docker::{DockerError, Engine};
use crate::runs::error::RunError;
use crate::runs::spec::ServiceSpec;
use crate::runs::store::write_atomic;

/// A service's container carries this label with the service's kind beside the run's labels:
/// `docker ps --filter label=gpudeck.service` finds gpudeck's services.
pub const LABEL_SERVICE: &str = "gpudeck.service";
/// The only host address a service's ports are published on: a notebook runs code as its user
/// and a model server answers anyone who reaches it, so neither is offered to the network.
pub const PUBLISH_ADDRESS: &str = "127.0.0.1";
/// The kind of network a service's container gets, whatever `[shell] network` says: "none"
/// would leave nothing to publish the ports from, and the host's network cannot publish at all
/// (pre-flight refuses `host_network = true` for a service). It is a bridge of the service's
/// own ([`service_network`]), not Docker's default one: on the default bridge every container
/// of every user reaches the service at its address there, and TensorBoard and Triton ask for
/// no password. On its own bridge no other container can (Docker drops traffic between
/// bridges); the host can, at its address there as at its published 127.0.0.1 port. It reaches
/// out as a run on "bridge" would. (An `internal` network would cut it off from outside too,
/// but Docker 20.10 publishes no port from one.)
pub const SERVICE_NETWORK: &str = "bridge";

/// The network of its own a service's container is on: `gpudeck-<run id>-net`.
pub fn service_network(run_id: &str) -> String {
    format!("gpudeck-{run_id}-net")
}

/// The run's own network when it has one (a service started since services got one): `None`
/// for "bridge", "none", "host" and older services on Docker's default bridge.
pub(in crate::runs) fn own_network(run_id: &str, network: &str) -> Option<String> {
    (network == service_network(run_id)).then(|| network.to_string())
}

/// Makes the service's own network, labelled with its run; one already there (the same run's
/// kept container started again) is used as it is. Its ports default to the host's 127.0.0.1
/// too, should anything publish one without an address.
pub(in crate::runs) async fn create_network(
    engine: &Engine,
    name: &str,
    run_id: &str,
) -> Result<(), DockerError> {
    let docker = engine.client();
    if docker.inspect_network(name, None).await.is_ok() {
        return Ok(());
    }
    let request = NetworkCreateRequest {
        name: name.into(),
        driver: Some(SERVICE_NETWORK.into()),
        labels: Some(HashMap::from([(
            super::labels::LABEL_RUN.to_string(),
            run_id.to_string(),
        )])),
        options: Some(HashMap::from([(
            "com.docker.network.bridge.host_binding_ipv4".to_string(),
            PUBLISH_ADDRESS.to_string(),
        )])),
        ..Default::default()
    };
    match docker.create_network(request).await {
        Ok(_) => Ok(()),
        Err(e) => Err(no_room(engine.error(e, &format!("network {name}")))),
    }
}

/// Docker's address pools used up (about 30 bridge networks on a default engine) said with
/// what to do about it.
fn no_room(e: DockerError) -> DockerError {
    let text = e.to_string();
    if !text.contains("address pool") {
        return e;
    }
    DockerError::Other(format!(
        "{text}. Each service in a container gets a network of its own, and Docker has no address range left for another: remove networks nothing uses (`docker network prune`), or give Docker smaller ranges (`default-address-pools` in /etc/docker/daemon.json)"
    ))
}

/// Removes the service's network once its container is gone; one already gone is no error.
pub(in crate::runs) async fn remove_network(
    engine: &Engine,
    name: &str,
) -> Result<(), DockerError> {
    match engine.client().remove_network(name).await {
        Ok(()) => Ok(()),
        Err(e) => match engine.error(e, &format!("network {name}")) {
            DockerError::NotFound { .. } => Ok(()),
            other => Err(other),
        },
    }
}

/// The environment variable jupyter_server takes its token from.
pub const TOKEN_ENV: &str = "JUPYTER_TOKEN";
/// The environment variable naming a file jupyter_server reads its token from instead
/// (jupyter_server's `IdentityProvider.token` default; the whole file is the token).
pub const TOKEN_FILE_ENV: &str = "JUPYTER_TOKEN_FILE";
/// A container notebook's token file in its run directory (0600, yours, like `run.json`).
pub const TOKEN_FILE: &str = "jupyter-token";
/// Where a container notebook sees its token file, mounted read-only.
pub const TOKEN_FILE_INSIDE: &str = "/run/gpudeck/jupyter-token";

/// Moves a container notebook's token out of its container's environment, which `docker
/// inspect` shows to every member of the docker group, into `dir`'s [`TOKEN_FILE`], mounted
/// read-only at [`TOKEN_FILE_INSIDE`] where [`TOKEN_FILE_ENV`] points JupyterLab. The container
/// runs as you (or as root), so it reads the 0600 file; nothing in the container's
/// configuration holds the token. Whether it did: only a notebook's container with a token
/// in its environment is changed.
pub(in crate::runs) fn token_by_file(
    body: &mut ContainerCreateBody,
    dir: &Path,
) -> Result<bool, RunError> {
    let notebook = body
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_SERVICE))
        .is_some_and(|kind| kind == "notebook");
    let env = body.env.get_or_insert_with(Vec::new);
    let prefix = format!("{TOKEN_ENV}=");
    let Some(at) = env
        .iter()
        .position(|e| e.starts_with(&prefix))
        .filter(|_| notebook)
    else {
        return Ok(false);
    };
    let token = env.remove(at).split_off(prefix.len());
    write_atomic(dir, TOKEN_FILE, token.as_bytes())?;
    env.push(format!("{TOKEN_FILE_ENV}={TOKEN_FILE_INSIDE}"));
    let host = body.host_config.get_or_insert_with(Default::default);
    host.mounts.get_or_insert_with(Vec::new).push(Mount {
        target: Some(TOKEN_FILE_INSIDE.into()),
        source: Some(dir.join(TOKEN_FILE).to_string_lossy().into_owned()),
        typ: Some(MountType::BIND),
        read_only: Some(true),
        ..Default::default()
    });
    Ok(true)
}

/// Publishes the service's ports on the host's 127.0.0.1 (same port inside, TCP) and labels the
/// container with the service's kind.
pub(super) fn add_service(body: &mut ContainerCreateBody, service: &ServiceSpec) {
    let ports: Vec<String> = service
        .ports
        .iter()
        .map(|p| format!("{}/tcp", p.port))
        .collect();
    let bindings = service
        .ports
        .iter()
        .zip(&ports)
        .map(|(p, inside)| {
            let binding = PortBinding {
                host_ip: Some(PUBLISH_ADDRESS.into()),
                host_port: Some(p.port.to_string()),
            };
            (inside.clone(), Some(vec![binding]))
        })
        .collect::<HashMap<_, _>>();
    body.exposed_ports = Some(ports);
    let host = body.host_config.get_or_insert_with(Default::default);
    host.port_bindings = Some(bindings);
    host.publish_all_ports = Some(false);
    body.labels
        .get_or_insert_with(HashMap::new)
        .insert(LABEL_SERVICE.into(), service.kind.as_str().into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::spec::{ServiceKind, ServicePort};

    fn triton() -> ServiceSpec {
        let port = |name: &str, port| ServicePort {
            name: name.into(),
            port,
        };
        ServiceSpec {
            kind: ServiceKind::Triton,
            ports: vec![
                port("http", 8000),
                port("grpc", 8001),
                port("metrics", 8002),
            ],
            idle_stop_secs: None,
        }
    }

    #[test]
    fn every_port_is_published_on_the_hosts_loopback_only_to_the_same_port() {
        let mut body = ContainerCreateBody {
            labels: Some(HashMap::from([("gpudeck.run".into(), "r".into())])),
            ..Default::default()
        };
        add_service(&mut body, &triton());
        assert_eq!(
            body.exposed_ports,
            Some(vec![
                "8000/tcp".into(),
                "8001/tcp".into(),
                "8002/tcp".into()
            ])
        );
        let host = body.host_config.unwrap();
        let bindings = host.port_bindings.unwrap();
        assert_eq!(bindings.len(), 3);
        for port in [8000, 8001, 8002] {
            assert_eq!(
                bindings[&format!("{port}/tcp")],
                Some(vec![PortBinding {
                    host_ip: Some("127.0.0.1".into()),
                    host_port: Some(port.to_string()),
                }])
            );
        }
        assert_eq!(host.publish_all_ports, Some(false));
        let labels = body.labels.unwrap();
        assert_eq!(labels[LABEL_SERVICE], "triton");
        assert_eq!(labels["gpudeck.run"], "r", "the run's labels stay");
    }

    fn notebook_body(env: &[&str]) -> ContainerCreateBody {
        let mut body = ContainerCreateBody {
            env: Some(env.iter().map(|e| e.to_string()).collect()),
            ..Default::default()
        };
        let mut notebook = triton();
        notebook.kind = crate::runs::spec::ServiceKind::Notebook;
        add_service(&mut body, &notebook);
        body
    }

    #[test]
    fn a_notebooks_token_leaves_the_environment_for_a_private_file_mounted_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut body = notebook_body(&["PATH=/bin", "JUPYTER_TOKEN=s3cr3t", "A=b"]);
        assert!(token_by_file(&mut body, dir.path()).unwrap());
        let env = body.env.clone().unwrap();
        assert!(env.iter().all(|e| !e.contains("s3cr3t")), "{env:?}");
        assert!(env.contains(&"JUPYTER_TOKEN_FILE=/run/gpudeck/jupyter-token".to_string()));
        assert!(env.contains(&"A=b".to_string()) && env.contains(&"PATH=/bin".to_string()));
        let file = dir.path().join(TOKEN_FILE);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "s3cr3t");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let mounts = body.host_config.unwrap().mounts.unwrap();
        assert_eq!(
            mounts,
            [Mount {
                target: Some("/run/gpudeck/jupyter-token".into()),
                source: Some(file.to_string_lossy().into_owned()),
                typ: Some(MountType::BIND),
                read_only: Some(true),
                ..Default::default()
            }]
        );
    }

    #[test]
    fn other_services_and_a_notebook_without_a_token_are_left_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let mut tb = ContainerCreateBody {
            env: Some(vec!["JUPYTER_TOKEN=t".into()]),
            ..Default::default()
        };
        add_service(&mut tb, &triton());
        let before = tb.clone();
        assert!(!token_by_file(&mut tb, dir.path()).unwrap());
        assert_eq!(tb, before);
        let mut bare = notebook_body(&["PATH=/bin"]);
        let before = bare.clone();
        assert!(!token_by_file(&mut bare, dir.path()).unwrap());
        assert_eq!(bare, before);
        assert!(!dir.path().join(TOKEN_FILE).exists());
    }

    #[test]
    fn a_service_network_is_named_after_its_run_and_only_that_one_is_its_own() {
        let run = "20260101-000000-notebook-abcd";
        assert_eq!(
            service_network(run),
            "gpudeck-20260101-000000-notebook-abcd-net"
        );
        assert_eq!(
            own_network(run, &service_network(run)),
            Some(service_network(run))
        );
        for other in ["bridge", "none", "host", "gpudeck-other-net"] {
            assert_eq!(own_network(run, other), None, "{other}");
        }
    }
}
