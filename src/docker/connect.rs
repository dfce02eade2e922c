//! Which Docker Engine to talk to (the docker CLI's rules) and the checked connection to it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::{Docker, API_DEFAULT_VERSION};

use super::error::{classify, DockerError};

/// Where the docker CLI looks when nothing else is said.
pub const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// The oldest Engine API gpudeck speaks: 1.40 is Docker 19.03, the first with `--gpus`.
pub const MIN_API: (usize, usize) = (1, 40);

/// Seconds any one request may take before its answer starts (a stop waits out its own timeout).
const REQUEST_TIMEOUT_SECS: u64 = 120;

/// How long connecting may take: a firewalled TCP host would otherwise hang for minutes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The client certificate set for a TLS engine (`DOCKER_CERT_PATH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        }
    }
}

/// A resolved engine address: `unix:///path` or `tcp://host:port`, with TLS files for the latter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    pub uri: String,
    pub tls: Option<TlsFiles>,
}

/// Picks the engine like the docker CLI: `--docker-host`, else `DOCKER_HOST` (with
/// `DOCKER_TLS_VERIFY` / `DOCKER_CERT_PATH` for TLS), else the local socket.
pub fn resolve_host(
    override_host: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<HostSpec, DockerError> {
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let raw = override_host
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_string)
        .or_else(|| set("DOCKER_HOST"));
    let Some(raw) = raw else {
        return Ok(HostSpec {
            uri: DEFAULT_HOST.to_string(),
            tls: None,
        });
    };
    let invalid = |detail: &str| DockerError::InvalidHost {
        host: raw.clone(),
        detail: detail.to_string(),
    };
    let (scheme, rest) = raw
        .split_once("://")
        .ok_or_else(|| invalid("it has no scheme; write unix:///path or tcp://host:port"))?;
    match scheme.to_ascii_lowercase().as_str() {
        "unix" if rest.starts_with('/') => Ok(HostSpec {
            uri: format!("unix://{rest}"),
            tls: None,
        }),
        "unix" => Err(invalid("a unix socket needs an absolute path")),
        "tcp" => tcp_spec(&raw, rest, &set),
        "ssh" => Err(invalid("ssh:// engines are not supported yet")),
        "npipe" => Err(invalid("Windows named pipes are not supported")),
        "fd" => Err(invalid("fd:// is a daemon listener, not a client address")),
        "http" | "https" => Err(invalid(
            "the docker CLI writes tcp://host:port (TLS comes from DOCKER_TLS_VERIFY)",
        )),
        _ => Err(invalid("unknown scheme; use unix:// or tcp://")),
    }
}

/// A tcp:// host (`raw` as written, `rest` after the scheme), with TLS when `DOCKER_TLS_VERIFY` is set.
fn tcp_spec(
    raw: &str,
    rest: &str,
    set: &impl Fn(&str) -> Option<String>,
) -> Result<HostSpec, DockerError> {
    let tls = match set("DOCKER_TLS_VERIFY") {
        Some(_) => Some(TlsFiles::in_dir(&cert_dir(set)?)),
        None => None,
    };
    let default_port = if tls.is_some() { 2376 } else { 2375 };
    let address = tcp_address(rest, default_port).ok_or_else(|| DockerError::InvalidHost {
        host: raw.to_string(),
        detail: "a tcp host is tcp://host:port, without a path or credentials".to_string(),
    })?;
    Ok(HostSpec {
        uri: format!("tcp://{address}"),
        tls,
    })
}

fn cert_dir(set: &impl Fn(&str) -> Option<String>) -> Result<PathBuf, DockerError> {
    if let Some(dir) = set("DOCKER_CERT_PATH") {
        return Ok(PathBuf::from(dir));
    }
    set("HOME")
        .map(|home| Path::new(&home).join(".docker"))
        .ok_or_else(|| DockerError::Tls {
            detail: "DOCKER_TLS_VERIFY is set but neither DOCKER_CERT_PATH nor HOME is".to_string(),
        })
}

/// `host[:port][/]` with the port filled in; `None` for paths, credentials or an empty host.
fn tcp_address(rest: &str, default_port: u16) -> Option<String> {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest.contains(['/', '@', '?', '#']) {
        return None;
    }
    let has_port = match rest.rsplit_once(':') {
        // A bracketed IPv6 address has colons of its own.
        Some((host, port)) => !host.is_empty() && !port.contains(']'),
        None => false,
    };
    if has_port {
        let (_, port) = rest.rsplit_once(':')?;
        port.parse::<u16>().ok()?;
        Some(rest.to_string())
    } else {
        Some(format!("{rest}:{default_port}"))
    }
}

/// A connected, version-checked Docker Engine.
#[derive(Debug, Clone)]
pub struct Engine {
    pub(crate) docker: Docker,
    pub(crate) host: String,
}

impl Engine {
    /// Connects, negotiates the API version down to the engine's, pings it and refuses an engine
    /// older than [`MIN_API`].
    pub async fn connect(spec: &HostSpec) -> Result<Engine, DockerError> {
        let host = spec.uri.clone();
        let docker = open(spec)?;
        let handshake = async {
            let docker = docker.negotiate_version().await?;
            docker.ping().await?;
            Ok::<_, bollard::errors::Error>(docker)
        };
        let docker = tokio::time::timeout(CONNECT_TIMEOUT, handshake)
            .await
            .map_err(|_| DockerError::Unreachable {
                host: host.clone(),
                detail: format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
            })?
            .map_err(|e| connect_error(e, &host))?;
        let version = docker.client_version();
        if (version.major_version, version.minor_version) < MIN_API {
            return Err(DockerError::ApiTooOld {
                server_api: format!("{}.{}", version.major_version, version.minor_version),
                min: format!("{}.{}", MIN_API.0, MIN_API.1),
            });
        }
        tracing::debug!(%host, api = ?version, "connected to the Docker Engine");
        Ok(Engine { docker, host })
    }

    /// The engine's address as resolved, e.g. `unix:///var/run/docker.sock`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The API version in use after negotiation, e.g. "1.41".
    pub fn api_version(&self) -> String {
        let v = self.docker.client_version();
        format!("{}.{}", v.major_version, v.minor_version)
    }

    /// The bollard client, for calls this module does not wrap (pulls, exec).
    pub fn client(&self) -> &Docker {
        &self.docker
    }

    /// Classifies a failure of a call about `what` (e.g. "container abc").
    pub(crate) fn error(&self, err: bollard::errors::Error, what: &str) -> DockerError {
        classify(err, &self.host, what)
    }
}

fn open(spec: &HostSpec) -> Result<Docker, DockerError> {
    let opened = if spec.uri.starts_with("unix://") {
        Docker::connect_with_unix(&spec.uri, REQUEST_TIMEOUT_SECS, API_DEFAULT_VERSION)
    } else if !spec.uri.starts_with("tcp://") {
        return Err(DockerError::InvalidHost {
            host: spec.uri.clone(),
            detail: "unknown scheme; use unix:// or tcp://".to_string(),
        });
    } else if let Some(tls) = &spec.tls {
        open_tls(&spec.uri, tls)
    } else {
        Docker::connect_with_http(&spec.uri, REQUEST_TIMEOUT_SECS, API_DEFAULT_VERSION)
    };
    opened.map_err(|e| connect_error(e, &spec.uri))
}

fn open_tls(uri: &str, tls: &TlsFiles) -> Result<Docker, bollard::errors::Error> {
    // bollard's rustls needs a process-wide provider; ring builds without cmake. Another part of
    // the program may have installed one already, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    for file in [&tls.ca, &tls.cert, &tls.key] {
        if !file.is_file() {
            return Err(bollard::errors::Error::CertPathError { path: file.clone() });
        }
    }
    Docker::connect_with_ssl(
        uri,
        &tls.key,
        &tls.cert,
        &tls.ca,
        REQUEST_TIMEOUT_SECS,
        API_DEFAULT_VERSION,
    )
}

/// While connecting, an HTTP answer that is not the Docker API means something else listens there.
fn connect_error(err: bollard::errors::Error, host: &str) -> DockerError {
    match classify(err, host, "the Docker API") {
        DockerError::NotFound { .. } => DockerError::Unreachable {
            host: host.to_string(),
            detail: "something answers there, but it is not a Docker Engine".to_string(),
        },
        DockerError::Other(detail) | DockerError::Conflict { detail } => DockerError::Unreachable {
            host: host.to_string(),
            detail: format!("something answers there, but not as a Docker Engine ({detail})"),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_addresses_get_the_cli_default_port() {
        let cases = [
            ("h", Some("h:2375")),
            ("h:1234", Some("h:1234")),
            ("h:1234/", Some("h:1234")),
            ("[::1]", Some("[::1]:2375")),
            ("[::1]:9", Some("[::1]:9")),
            ("h:port", None),
            ("h/path", None),
            ("u:p@h", None),
            ("", None),
        ];
        for (rest, want) in cases {
            assert_eq!(tcp_address(rest, 2375).as_deref(), want, "{rest}");
        }
    }
}
