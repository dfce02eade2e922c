//! What a service's container (`gpudeck notebook`, `tensorboard`, `triton` with an image) has
//! beyond a run's: each of its ports published on the host's 127.0.0.1 only, to the same port
//! inside, a network that can publish them, and the `gpudeck.service` label. Everything else
//! (user, workspace, shm, isolation) is the run's, so the shell's. Pure.

use std::collections::HashMap;

use bollard::models::{ContainerCreateBody, PortBinding};

use crate::runs::spec::ServiceSpec;

/// A service's container carries this label with the service's kind beside the run's labels:
/// `docker ps --filter label=gpudeck.service` finds gpudeck's services.
pub const LABEL_SERVICE: &str = "gpudeck.service";
/// The only host address a service's ports are published on: a notebook runs code as its user
/// and a model server answers anyone who reaches it, so neither is offered to the network.
pub const PUBLISH_ADDRESS: &str = "127.0.0.1";
/// The network of a service's container, whatever `[shell] network` says. "none" would leave
/// nothing to publish the ports from, and the host's network cannot publish at all (pre-flight
/// refuses `host_network = true` for a service), so a service gets Docker's default bridge even
/// where shells and runs get "none": it is reached only through its ports on the host's
/// 127.0.0.1, and reaches out as a run on "bridge" would.
pub const SERVICE_NETWORK: &str = "bridge";

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
}
