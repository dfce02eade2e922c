//! The metrics endpoint: a minimal HTTP/1.1 server answering GET /metrics from the latest sample
//! it was handed. A scrape only reads memory; it never calls NVML.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::render::{render, CONTENT_TYPE};
use super::runs::RunInfo;
use crate::gpu::{GpuSample, Inventory};

/// A request head larger than this is refused: scrapers send a few hundred bytes.
const MAX_HEAD: usize = 8 * 1024;
/// A client that has not sent its request head by then is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the endpoint could not start, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("cannot serve metrics on {addr}: the address is already in use (another `gpudeck serve` or exporter listens there; dcgm-exporter uses 9400). Pick another port: --metrics 127.0.0.1:PORT")]
    AddressInUse { addr: SocketAddr },
    #[error("cannot serve metrics on {addr}: permission denied (ports below 1024 need root). Use a port above 1024, e.g. --metrics 127.0.0.1:9400")]
    PermissionDenied { addr: SocketAddr },
    #[error("cannot serve metrics on {addr}: no network interface of this machine has that address. Use 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)")]
    AddressNotAvailable { addr: SocketAddr },
    #[error("cannot serve metrics on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
}

/// Listens on `addr`, explaining the usual failures.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, MetricsError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| match source.kind() {
            io::ErrorKind::AddrInUse => MetricsError::AddressInUse { addr },
            io::ErrorKind::PermissionDenied => MetricsError::PermissionDenied { addr },
            io::ErrorKind::AddrNotAvailable => MetricsError::AddressNotAvailable { addr },
            _ => MetricsError::Bind { addr, source },
        })
}

/// What a scrape is rendered from: the inventory, the collector's latest samples and the runs.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub inventory: Arc<Inventory>,
    pub samples: Vec<GpuSample>,
    pub runs: Vec<RunInfo>,
}

/// The latest snapshot, written by whoever receives the collector's samples, read by scrapes.
#[derive(Debug, Clone, Default)]
pub struct Latest(Arc<RwLock<Option<Arc<Snapshot>>>>);

impl Latest {
    pub fn set(&self, snapshot: Snapshot) {
        let mut slot = self.0.write().unwrap_or_else(|e| e.into_inner());
        *slot = Some(Arc::new(snapshot));
    }

    pub fn get(&self) -> Option<Arc<Snapshot>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// An HTTP response before it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: &'static str,
    pub content_type: &'static str,
    pub body: String,
}

const INDEX: &str = "<html><head><title>gpudeck</title></head><body><h1>gpudeck</h1>\
<p>Prometheus metrics of this machine's GPUs: <a href=\"/metrics\">/metrics</a>.</p></body></html>\n";

/// The answer to one request line, from the latest snapshot (none before the first sample).
pub fn respond(method: &str, target: &str, latest: Option<&Snapshot>) -> Response {
    let path = target.split('?').next().unwrap_or(target);
    let text = "text/plain; charset=utf-8";
    if method != "GET" && method != "HEAD" {
        return Response {
            status: "405 Method Not Allowed",
            content_type: text,
            body: "only GET\n".into(),
        };
    }
    match (path, latest) {
        ("/metrics", Some(s)) => Response {
            status: "200 OK",
            content_type: CONTENT_TYPE,
            body: render(&s.inventory, &s.samples, &s.runs),
        },
        ("/metrics", None) => Response {
            status: "503 Service Unavailable",
            content_type: text,
            body: "no GPU sample yet\n".into(),
        },
        ("/", _) => Response {
            status: "200 OK",
            content_type: "text/html; charset=utf-8",
            body: INDEX.into(),
        },
        _ => Response {
            status: "404 Not Found",
            content_type: text,
            body: "not found; try /metrics\n".into(),
        },
    }
}

/// Accepts connections until `stop` is cancelled; each is answered on a task of its own.
pub async fn serve(listener: TcpListener, latest: Latest, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                tokio::spawn(answer(stream, latest.clone()));
            }
            Err(e) => {
                // Out of file descriptors, say: back off rather than spin on the error.
                tracing::warn!(error = %e, "accepting a metrics connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn answer(mut stream: TcpStream, latest: Latest) {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(e)) => return tracing::debug!(error = %e, "bad metrics request"),
        Err(_) => return tracing::debug!("metrics client sent no request in time"),
    };
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let snapshot = latest.get();
    let response = respond(method, target, snapshot.as_deref());
    let mut bytes = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len()
    );
    if method != "HEAD" {
        bytes.push_str(&response.body);
    }
    if let Err(e) = stream.write_all(bytes.as_bytes()).await {
        tracing::debug!(error = %e, "writing a metrics response failed");
    }
    let _ = stream.shutdown().await;
}

/// Reads up to the blank line that ends the request head.
async fn read_head(stream: &mut TcpStream) -> io::Result<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{SourceKind, SystemInfo, Topology};

    fn snapshot() -> Snapshot {
        Snapshot {
            inventory: Arc::new(Inventory {
                system: SystemInfo {
                    source: SourceKind::Demo,
                    driver_version: None,
                    nvml_version: None,
                    cuda_driver_version: None,
                },
                gpus: Vec::new(),
                topology: Topology::default(),
            }),
            samples: Vec::new(),
            runs: Vec::new(),
        }
    }

    #[test]
    fn metrics_are_served_only_once_there_is_a_sample() {
        let before = respond("GET", "/metrics", None);
        assert!(before.status.starts_with("503"), "{before:?}");
        let s = snapshot();
        let after = respond("GET", "/metrics?x=1", Some(&s));
        assert_eq!(after.status, "200 OK");
        assert_eq!(after.content_type, CONTENT_TYPE);
        assert!(after.body.contains("# TYPE gpudeck_gpu_info gauge"));
    }

    #[test]
    fn other_paths_and_methods_are_refused() {
        assert!(respond("GET", "/", None).body.contains("/metrics"));
        assert!(respond("GET", "/nope", None).status.starts_with("404"));
        assert!(respond("POST", "/metrics", None).status.starts_with("405"));
    }

    #[tokio::test]
    async fn a_taken_address_is_explained() {
        let first = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let taken = first.local_addr().unwrap();
        let err = bind(taken).await.unwrap_err();
        assert!(matches!(err, MetricsError::AddressInUse { .. }), "{err:?}");
        assert!(err.to_string().contains("already in use"), "{err}");
    }
}
