//! The metrics endpoint: hyper's HTTP/1.1 server (over rustls when a web configuration asks for
//! TLS) answering GET /metrics from the latest sample it was handed. A scrape only reads memory;
//! it never calls NVML.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::auth::Verdict;
use super::conns::{Limits, Slot, Tracker};
use super::health::XidCounts;
use super::render::{render_services, render_with, CONTENT_TYPE};
use super::runs::RunInfo;
use super::web_config::WebConfig;
use crate::gpu::{GpuSample, Inventory};
use crate::services::ServiceRow;

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
    #[error(
        "{0}. Fix the file (see docs/metrics.md, \"The metrics endpoint\"), or serve without it"
    )]
    WebConfig(#[from] super::web_config::WebConfigError),
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
    /// The Xids seen since serving began.
    pub xids: XidCounts,
    /// The services as last looked at (every `SERVICE_LOOK`).
    pub services: Vec<ServiceRow>,
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

impl Response {
    /// The status code of `status` ("404 Not Found" -> 404).
    pub fn code(&self) -> u16 {
        self.status
            .split_whitespace()
            .next()
            .and_then(|c| c.parse().ok())
            .unwrap_or(500)
    }
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
            body: render_with(&s.inventory, &s.samples, &s.runs, &s.xids)
                + &render_services(&s.services),
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

/// How a bound endpoint serves: over TLS and with users when a web configuration says so, within
/// the connection limits.
#[derive(Debug, Clone)]
pub struct Serving {
    pub web: Option<WebConfig>,
    pub limits: Limits,
}

/// Accepts connections until `stop` is cancelled; each is answered on a task of its own, within
/// the limits. A changed web configuration (a renewed certificate, say) is read again; a broken
/// one is reported and the last good one kept.
pub async fn serve(
    listener: TcpListener,
    latest: Latest,
    serving: Serving,
    stop: CancellationToken,
) {
    let tracker = Tracker::new(serving.limits);
    let mut web = serving.web.map(Arc::new);
    // What every connection reads per request (and per handshake): a configuration read again
    // reaches connections already open, so a user removed or a password changed is refused on
    // a kept-alive connection too.
    let shared: CurrentWeb = Arc::new(RwLock::new(web.clone()));
    let mut checked = Instant::now();
    let mut warned: Option<Instant> = None;
    let mut unwarned = 0u64;
    let bucket = web
        .as_ref()
        .and_then(|w| w.rate_limit)
        .map(|(interval, burst)| Arc::new(Bucket::new(interval, burst)));
    // The configuration is looked at on a clock too, not only when a connection comes: a
    // scraper keeping one connection alive would otherwise never see a change.
    let mut recheck = tokio::time::interval(RECHECK_WEB_CONFIG);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => Some(accepted),
            _ = recheck.tick() => None,
        };
        if checked.elapsed() >= RECHECK_WEB_CONFIG {
            checked = Instant::now();
            if let Some(current) = web.as_ref().filter(|w| w.changed()) {
                match WebConfig::load(&current.path) {
                    Ok(fresh) => {
                        tracing::info!(path = %fresh.path.display(), "the metrics web configuration was read again");
                        web = Some(Arc::new(fresh));
                        *shared.write().unwrap_or_else(|e| e.into_inner()) = web.clone();
                    }
                    Err(e) => tracing::warn!("{e}; the endpoint keeps the configuration it had"),
                }
            }
        }
        let Some(accepted) = accepted else {
            continue;
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, say: back off rather than spin, and say so at most
                // every ten seconds.
                if warned.is_none_or(|at| at.elapsed() >= ACCEPT_WARN_EVERY) {
                    tracing::warn!(error = %e, suppressed = unwarned, "accepting a metrics connection failed");
                    warned = Some(Instant::now());
                    unwarned = 0;
                } else {
                    unwarned += 1;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some(slot) = tracker.admit(peer.ip()) else {
            tracing::debug!(%peer, "metrics endpoint full of busy connections; turned one away");
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            (stream, peer.ip()),
            slot,
            latest.clone(),
            Arc::clone(&shared),
            bucket.clone(),
        ));
        // Let the connection closed for this one drop its socket before accepting the next: a
        // flood of connects must not pile up sockets waiting to be closed.
        tokio::task::yield_now().await;
    }
}

/// The web configuration as last read, shared by the accept loop (which replaces it) and the
/// connections (which read it per request).
type CurrentWeb = Arc<RwLock<Option<Arc<WebConfig>>>>;

fn web_now(current: &CurrentWeb) -> Option<Arc<WebConfig>> {
    current.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// How often the accept loop looks whether the web configuration's files changed.
const RECHECK_WEB_CONFIG: Duration = Duration::from_secs(1);
/// Failing accepts (out of file descriptors) are logged at most this often.
const ACCEPT_WARN_EVERY: Duration = Duration::from_secs(10);

/// One connection: the TLS handshake if any, then HTTP/1.1 requests until the client goes, the
/// connection idles too long, or it must give way to a new one.
async fn connection(
    (stream, peer): (TcpStream, IpAddr),
    slot: Slot,
    latest: Latest,
    web: CurrentWeb,
    bucket: Option<Arc<Bucket>>,
) {
    let limits = slot.limits();
    let slot = Arc::new(slot);
    let closed = slot.conn().closed().clone();
    let tls = web_now(&web).and_then(|w| w.tls.clone());
    match tls {
        Some(config) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            let handshake = tokio::select! {
                () = closed.cancelled() => return,
                done = tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream)) => done,
            };
            match handshake {
                Ok(Ok(tls)) => {
                    http(
                        TimedIo::new(tls, limits.write_timeout, Arc::clone(&slot)),
                        slot,
                        latest,
                        (web, peer),
                        bucket,
                    )
                    .await
                }
                Ok(Err(e)) => tracing::debug!(error = %e, "metrics TLS handshake failed"),
                Err(_) => tracing::debug!("metrics TLS handshake timed out"),
            }
        }
        None => {
            http(
                TimedIo::new(stream, limits.write_timeout, Arc::clone(&slot)),
                slot,
                latest,
                (web, peer),
                bucket,
            )
            .await
        }
    }
}

async fn http<S>(
    io: TimedIo<S>,
    slot: Arc<Slot>,
    latest: Latest,
    (web, peer): (CurrentWeb, IpAddr),
    bucket: Option<Arc<Bucket>>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let limits = slot.limits();
    let service = {
        let slot = Arc::clone(&slot);
        service_fn(move |request: Request<Incoming>| {
            let (slot, latest, web, bucket) = (
                Arc::clone(&slot),
                latest.clone(),
                web_now(&web),
                bucket.clone(),
            );
            async move {
                slot.busy();
                let response =
                    handle(request, &latest, (web.as_deref(), peer), bucket.as_deref()).await;
                slot.idle();
                Ok::<_, std::convert::Infallible>(response)
            }
        })
    };
    // hyper's own head timeout runs from the moment it waits for a head, so between two
    // scrapes of a kept-alive connection too: 5 s would close every one a scraper keeps between
    // scrapes 15 s apart. The head's limit runs from its first byte instead, and the wait
    // before it has the idle limit; both are checked below (`Slot::overdue`).
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .max_buf_size(MAX_BUF)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let closed = slot.conn().closed().clone();
    let every = Duration::from_millis(250)
        .min(limits.header_timeout / 4)
        .min(limits.idle_timeout)
        .max(Duration::from_millis(10));
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!(error = %e, "metrics connection ended");
                }
                return;
            }
            () = closed.cancelled() => return,
            () = tokio::time::sleep(every) => {
                if slot.overdue() {
                    return;
                }
            }
        }
    }
}

/// The buffer a connection may fill with a request (hyper's minimum; scrapers send a few hundred
/// bytes).
const MAX_BUF: usize = 8 * 1024;

/// One request: the rate limit, then the users, then the answer with the configured headers.
async fn handle(
    request: Request<Incoming>,
    latest: &Latest,
    (web, peer): (Option<&WebConfig>, IpAddr),
    bucket: Option<&Bucket>,
) -> hyper::Response<Full<Bytes>> {
    let text = "text/plain; charset=utf-8";
    let answer = if bucket.is_some_and(|b| !b.take()) {
        Response {
            status: "429 Too Many Requests",
            content_type: text,
            body: "too many requests; the web configuration's rate_limit allows fewer\n".into(),
        }
    } else if !authorized(&request, web, peer).await {
        Response {
            status: "401 Unauthorized",
            content_type: text,
            body: "unauthorized\n".into(),
        }
    } else {
        let snapshot = latest.get();
        let target = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        // The sample is rendered off the async threads: it is the one costly part of an answer.
        let method = request.method().as_str().to_owned();
        tokio::task::spawn_blocking(move || respond(&method, &target, snapshot.as_deref()))
            .await
            .unwrap_or_else(|_| Response {
                status: "500 Internal Server Error",
                content_type: text,
                body: "rendering the metrics failed\n".into(),
            })
    };
    let mut builder = hyper::Response::builder()
        .status(answer.code())
        .header(hyper::header::CONTENT_TYPE, answer.content_type);
    if answer.status.starts_with("401") {
        builder = builder.header(hyper::header::WWW_AUTHENTICATE, "Basic realm=\"gpudeck\"");
    }
    if answer.status.starts_with("405") {
        builder = builder.header(hyper::header::ALLOW, "GET, HEAD");
    }
    for (name, value) in web.map(|w| w.headers.as_slice()).unwrap_or_default() {
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder
        .body(Full::new(Bytes::from(answer.body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

/// Whether the request carries a user of the web configuration (always, without users).
async fn authorized(request: &Request<Incoming>, web: Option<&WebConfig>, peer: IpAddr) -> bool {
    let Some(auth) = web.and_then(|w| w.auth.clone()) else {
        return true;
    };
    let header = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // A pair seen before, right or wrong, is answered at once: a scraper whose password is
    // known never waits behind anyone's guesses.
    if let Some(known) = auth.remembered(header.as_deref()) {
        return known == Verdict::Allowed;
    }
    // bcrypt takes tens of milliseconds by design: one check at a time, off the async threads;
    // and one at a time per client first, so one client's flood queues behind itself and the
    // machine-wide queue holds at most one check per client.
    let _mine = turn_of(peer).lock_owned().await;
    // A client that sent a wrong password lately waits for the one suspects' turn first, so
    // the shared queue holds at most one suspect's check: a client not guessing waits for at
    // most the check under way and that one.
    let _suspect = match failed_lately(peer) {
        true => Some(SUSPECT_TURN.lock().await),
        false => None,
    };
    let _turn = BCRYPT_TURN.lock().await;
    let allowed =
        tokio::task::spawn_blocking(move || auth.check(header.as_deref()) == Verdict::Allowed)
            .await
            .unwrap_or(false);
    if !allowed {
        note_failure(peer);
    }
    allowed
}

/// The turn of clients that sent a wrong password within [`SUSPECT_FOR`].
static SUSPECT_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long a wrong password makes its client a suspect.
const SUSPECT_FOR: Duration = Duration::from_secs(60);

/// When each client last sent a wrong password.
static FAILURES: std::sync::Mutex<Option<HashMap<IpAddr, Instant>>> = std::sync::Mutex::new(None);

fn failed_lately(peer: IpAddr) -> bool {
    let failures = FAILURES.lock().unwrap_or_else(|e| e.into_inner());
    failures
        .as_ref()
        .and_then(|f| f.get(&peer))
        .is_some_and(|at| at.elapsed() < SUSPECT_FOR)
}

fn note_failure(peer: IpAddr) {
    let mut failures = FAILURES.lock().unwrap_or_else(|e| e.into_inner());
    let failures = failures.get_or_insert_with(HashMap::new);
    if failures.len() >= CLIENT_TURNS_MAX {
        failures.retain(|_, at| at.elapsed() < SUSPECT_FOR);
        if failures.len() >= CLIENT_TURNS_MAX {
            failures.clear();
        }
    }
    failures.insert(peer, Instant::now());
}

/// One password check at a time, so guesses cannot take every core.
static BCRYPT_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Each client's own turn at [`BCRYPT_TURN`], by address.
static CLIENT_TURNS: std::sync::Mutex<Option<HashMap<IpAddr, Arc<tokio::sync::Mutex<()>>>>> =
    std::sync::Mutex::new(None);

/// Clients remembered at most (turns nobody waits on are let go past this).
const CLIENT_TURNS_MAX: usize = 1024;

fn turn_of(peer: IpAddr) -> Arc<tokio::sync::Mutex<()>> {
    let mut turns = CLIENT_TURNS.lock().unwrap_or_else(|e| e.into_inner());
    let turns = turns.get_or_insert_with(HashMap::new);
    if turns.len() >= CLIENT_TURNS_MAX {
        turns.retain(|_, turn| Arc::strong_count(turn) > 1);
    }
    Arc::clone(turns.entry(peer).or_default())
}

/// The web configuration's `rate_limit`: a token bucket of `burst` requests refilled one per
/// `interval`.
#[derive(Debug)]
struct Bucket {
    interval: Duration,
    burst: u32,
    state: std::sync::Mutex<(f64, Instant)>,
}

impl Bucket {
    fn new(interval: Duration, burst: u32) -> Bucket {
        Bucket {
            interval,
            burst,
            state: std::sync::Mutex::new((f64::from(burst), Instant::now())),
        }
    }

    fn take(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, at) = *state;
        let refill = at.elapsed().as_secs_f64() / self.interval.as_secs_f64();
        let tokens = (tokens + refill).min(f64::from(self.burst));
        if tokens >= 1.0 {
            *state = (tokens - 1.0, Instant::now());
            true
        } else {
            *state = (tokens, Instant::now());
            false
        }
    }
}

/// A stream that gives up when the other side takes no bytes of an answer for too long, so a
/// client that stops reading cannot hold a connection (and its buffers) for ever; and that tells
/// its connection's slot when bytes come in, which starts a request head's clock.
struct TimedIo<S> {
    inner: S,
    limit: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    slot: Arc<Slot>,
}

impl<S> TimedIo<S> {
    fn new(inner: S, limit: Duration, slot: Arc<Slot>) -> TimedIo<S> {
        TimedIo {
            inner,
            limit,
            stalled: None,
            slot,
        }
    }

    /// Pending writes start (or keep) the clock; a write that moves stops it.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took no bytes of the answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for TimedIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.slot.heard();
        }
        poll
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for TimedIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
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
            xids: XidCounts::default(),
            services: Vec::new(),
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
