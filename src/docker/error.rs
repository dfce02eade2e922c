//! Why a Docker Engine call failed, classified into what the user can act on.

use std::error::Error as StdError;
use std::io;

use bollard::errors::Error as BollardError;
use thiserror::Error;

/// A Docker failure in the terms a user can act on; `title()` heads the view, `fix()` says what to do.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum DockerError {
    #[error("Docker is not reachable at {host}: {detail}")]
    Unreachable { host: String, detail: String },
    #[error("Docker is not reachable at {host}: permission denied")]
    PermissionDenied { host: String },
    #[error("the Docker Engine speaks API {server_api}; gpudeck needs API {min} or newer")]
    ApiTooOld { server_api: String, min: String },
    #[error("{what} was not found")]
    NotFound { what: String },
    #[error("Docker refused: {detail}")]
    Conflict { detail: String },
    #[error("GPUs were requested but Docker has no GPU runtime: {detail}")]
    NoGpuRuntime { detail: String },
    #[error("TLS to the Docker Engine failed: {detail}")]
    Tls { detail: String },
    #[error("cannot use Docker host {host:?}: {detail}")]
    InvalidHost { host: String, detail: String },
    #[error("Docker Engine error: {0}")]
    Other(String),
}

impl DockerError {
    /// A one-line heading for the containers view.
    pub fn title(&self) -> &'static str {
        match self {
            DockerError::Unreachable { .. } => "Docker Engine not reachable",
            DockerError::PermissionDenied { .. } => "No permission to use Docker",
            DockerError::ApiTooOld { .. } => "Docker Engine too old",
            DockerError::NotFound { .. } => "Not found",
            DockerError::Conflict { .. } => "Docker refused the change",
            DockerError::NoGpuRuntime { .. } => "No GPU support in Docker",
            DockerError::Tls { .. } => "Docker TLS failed",
            DockerError::InvalidHost { .. } => "Unsupported Docker host",
            DockerError::Other(_) => "Docker error",
        }
    }

    /// What to do about it, in concrete steps.
    pub fn fix(&self) -> &'static str {
        match self {
            DockerError::Unreachable { .. } => {
                "Start it: `sudo systemctl start docker` (or check DOCKER_HOST=... / --docker-host \
                 points at a running engine; `docker version` shows what the CLI reaches)."
            }
            DockerError::PermissionDenied { .. } => {
                "Add yourself to the docker group: `sudo usermod -aG docker $USER`, then log in again \
                 (or run gpudeck with sudo)."
            }
            DockerError::ApiTooOld { .. } => {
                "Upgrade Docker Engine to 19.03 or newer (API 1.40): \
                 https://docs.docker.com/engine/install/"
            }
            DockerError::NotFound { .. } => "It was removed meanwhile; refresh the list.",
            DockerError::Conflict { .. } => {
                "Stop or remove what is using it first (e.g. stop the container), or force the action."
            }
            DockerError::NoGpuRuntime { .. } => {
                "Install the NVIDIA Container Toolkit, then `sudo nvidia-ctk runtime configure \
                 --runtime=docker && sudo systemctl restart docker` (check with `docker info | grep -i runtime`)."
            }
            DockerError::Tls { .. } => {
                "Check that DOCKER_CERT_PATH (default ~/.docker) holds ca.pem, cert.pem and key.pem for \
                 this host (`docker --tlsverify version` should work), or unset DOCKER_TLS_VERIFY."
            }
            DockerError::InvalidHost { .. } => {
                "Use unix:///path/to/docker.sock or tcp://host:port in DOCKER_HOST or --docker-host; \
                 for a remote engine over SSH open a tunnel: \
                 `ssh -NL /tmp/docker.sock:/var/run/docker.sock HOST` and use unix:///tmp/docker.sock."
            }
            DockerError::Other(_) => {
                "Run `docker version` and `docker info` to see whether the engine works, and check \
                 `journalctl -u docker`."
            }
        }
    }
}

/// Classifies a bollard failure; `host` names the engine, `what` the object (for "not found").
pub(crate) fn classify(err: BollardError, host: &str, what: &str) -> DockerError {
    match &err {
        BollardError::DockerResponseServerError {
            status_code,
            message,
        } => return classify_response(*status_code, message, what),
        BollardError::SocketNotFoundError(path) => {
            return DockerError::Unreachable {
                host: host.to_string(),
                detail: format!("there is no socket at {path}; is the Docker daemon running?"),
            }
        }
        BollardError::RequestTimeoutError => {
            return DockerError::Unreachable {
                host: host.to_string(),
                detail: "the engine did not answer in time".to_string(),
            }
        }
        BollardError::CertPathError { .. }
        | BollardError::CertParseError { .. }
        | BollardError::CertMultipleKeys { .. }
        | BollardError::NoHomePathError
        | BollardError::NoNativeCertsError { .. }
        | BollardError::LoadNativeCertsErrors { .. } => {
            return DockerError::Tls {
                detail: err.to_string(),
            }
        }
        _ => {}
    }
    classify_chain(&err, host).unwrap_or_else(|| DockerError::Other(describe_chain(&err)))
}

fn classify_response(status: u16, message: &str, what: &str) -> DockerError {
    let message = message.trim().to_string();
    match status {
        404 => DockerError::NotFound {
            what: if what.is_empty() {
                message
            } else {
                what.to_string()
            },
        },
        409 => DockerError::Conflict { detail: message },
        _ if message.contains("could not select device driver") => {
            DockerError::NoGpuRuntime { detail: message }
        }
        _ => DockerError::Other(format!("{message} (HTTP {status})")),
    }
}

/// Looks through the error's sources for the OS or TLS failure underneath.
fn classify_chain(err: &(dyn StdError + 'static), host: &str) -> Option<DockerError> {
    let mut cause: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(current) = cause {
        if current.downcast_ref::<rustls::Error>().is_some() {
            return Some(DockerError::Tls {
                detail: current.to_string(),
            });
        }
        if let Some(io_err) = current.downcast_ref::<io::Error>() {
            if let Some(found) = classify_io(io_err, host) {
                return Some(found);
            }
        }
        cause = current.source();
    }
    None
}

fn classify_io(err: &io::Error, host: &str) -> Option<DockerError> {
    // hyper-rustls wraps tokio-rustls's io::Error (which wraps the rustls::Error) in another
    // io::Error, and io::Error::source() skips the wrapped error itself: look inside by hand.
    if let Some(inner) = err.get_ref() {
        if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
            return Some(DockerError::Tls {
                detail: tls.to_string(),
            });
        }
        if let Some(found) = inner
            .downcast_ref::<io::Error>()
            .and_then(|inner| classify_io(inner, host))
        {
            return Some(found);
        }
    }
    let host = host.to_string();
    match err.kind() {
        io::ErrorKind::PermissionDenied => Some(DockerError::PermissionDenied { host }),
        io::ErrorKind::NotFound => Some(DockerError::Unreachable {
            host,
            detail: "the socket does not exist; is the Docker daemon running?".to_string(),
        }),
        io::ErrorKind::ConnectionRefused => Some(DockerError::Unreachable {
            host,
            detail: "connection refused; is the Docker daemon running?".to_string(),
        }),
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::NotConnected
        | io::ErrorKind::TimedOut
        | io::ErrorKind::HostUnreachable
        | io::ErrorKind::NetworkUnreachable
        | io::ErrorKind::AddrNotAvailable => Some(DockerError::Unreachable {
            host,
            detail: err.to_string(),
        }),
        _ => None,
    }
}

/// The error and each of its sources, joined: hyper's own messages alone say little.
pub(crate) fn describe_chain(err: &(dyn StdError + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(current) = cause {
        let part = current.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = current.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_statuses_become_actionable_errors() {
        let not_found = classify_response(404, "No such container: abc", "container abc");
        assert_eq!(
            not_found,
            DockerError::NotFound {
                what: "container abc".into()
            }
        );
        let conflict = classify_response(409, "You cannot remove a running container", "x");
        assert!(matches!(conflict, DockerError::Conflict { .. }));
        let gpu = classify_response(
            500,
            "could not select device driver \"\" with capabilities: [[gpu]]",
            "",
        );
        assert!(matches!(gpu, DockerError::NoGpuRuntime { .. }));
        assert!(gpu.fix().contains("nvidia-ctk"));
    }

    #[test]
    fn io_kinds_map_to_unreachable_or_permission() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(
            classify_io(&denied, "unix:///s"),
            Some(DockerError::PermissionDenied {
                host: "unix:///s".into()
            })
        );
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert!(matches!(
            classify_io(&refused, "tcp://h:1"),
            Some(DockerError::Unreachable { .. })
        ));
        assert_eq!(
            classify_io(&io::Error::other("odd"), "h"),
            None,
            "unknown kinds fall through to Other"
        );
    }

    #[test]
    fn messages_name_the_host_and_the_fix() {
        let err = DockerError::PermissionDenied {
            host: "unix:///var/run/docker.sock".into(),
        };
        assert_eq!(
            err.to_string(),
            "Docker is not reachable at unix:///var/run/docker.sock: permission denied"
        );
        assert!(err.fix().contains("sudo usermod -aG docker $USER"));
    }
}
