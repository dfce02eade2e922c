//! The metrics endpoint's basic authentication under a flood of wrong passwords: how long an
//! authorised scrape takes while CONNS connections (spread over 127.0.0.1..127.0.0.8, as
//! several clients) send distinct wrong passwords as fast as they are answered. Prints the
//! median and worst time of a scrape with a password already checked once (a scraper's steady
//! state), and of the first scrape with a right password not seen before (which must take its
//! turn at bcrypt), against the same scrapes with no flood.
//!
//! The endpoint serves no sample here (it answers 503 "no sample yet" once authorised): only
//! the authentication's cost is measured; a refused scrape (401) stops the bench.
//!
//! `cargo run --release --example auth_flood_bench -- [CONNS] [SCRAPES] [BCRYPT_COST]`

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use gpudeck::metrics::server::serve;
use gpudeck::metrics::{bind, Latest, Limits, Serving, WebConfig};
use tokio_util::sync::CancellationToken;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |n: usize, default: u64| {
        std::env::args()
            .nth(n)
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let (conns, scrapes, cost) = (arg(1, 32) as usize, arg(2, 20) as usize, arg(3, 10) as u32);

    // Two users: "prom" scrapes all along; "late" first scrapes during the flood.
    let dir = tempfile::tempdir()?;
    let web_path = dir.path().join("web.yml");
    std::fs::write(
        &web_path,
        format!(
            "basic_auth_users:\n  prom: {}\n  late: {}\n",
            bcrypt::hash("right", cost)?,
            bcrypt::hash("also-right", cost)?
        ),
    )?;
    let web = WebConfig::load(&web_path)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let stop = CancellationToken::new();
    let listener = runtime.block_on(bind("127.0.0.1:0".parse()?))?;
    let addr = listener.local_addr()?;
    let serving = Serving {
        web: Some(web),
        limits: Limits {
            max_connections: conns + 16,
            max_per_client: conns + 16,
            ..Limits::default()
        },
    };
    runtime.spawn(serve(listener, Latest::default(), serving, stop.clone()));

    let start = Instant::now();
    assert_ne!(get(addr, None, "prom", "right")?, 401);
    println!(
        "bcrypt cost {cost}: the first check of a password took {:.0} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let quiet = timed(scrapes, || get(addr, None, "prom", "right"))?;
    report("known password, no flood", &quiet);

    let flooding = Arc::new(AtomicBool::new(true));
    let guesses = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..conns)
        .map(|i| {
            let (flooding, guesses) = (Arc::clone(&flooding), Arc::clone(&guesses));
            std::thread::spawn(move || {
                let from = format!("127.0.0.{}", 1 + i % 8);
                let mut n = 0u64;
                while flooding.load(Ordering::Relaxed) {
                    n += 1;
                    let guess = format!("guess-{i}-{n}");
                    if get(addr, Some(&from), "prom", &guess).is_ok() {
                        guesses.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let flooded = timed(scrapes, || get(addr, None, "prom", "right"))?;
    report(
        &format!("known password, {conns} connections guessing"),
        &flooded,
    );
    let first = Instant::now();
    // From an address of its own (another client than the guessers: Prometheus on another
    // machine); a client sharing its address with a guesser shares its turn.
    let code = get(addr, Some("127.0.0.9"), "late", "also-right")?;
    let first = first.elapsed();
    assert_ne!(code, 401);
    println!(
        "first scrape of a new right password, {conns} connections guessing: {:.0} ms",
        first.as_secs_f64() * 1e3
    );
    flooding.store(false, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    println!(
        "wrong passwords answered during the flood: {}",
        guesses.load(Ordering::Relaxed)
    );
    stop.cancel();
    Ok(())
}

/// One GET of /metrics as `user`, from the local address `from`; the HTTP status.
fn get(addr: SocketAddr, from: Option<&str>, user: &str, password: &str) -> std::io::Result<u16> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let socket = tokio::net::TcpSocket::new_v4()?;
        let from = from.unwrap_or("127.0.0.1");
        socket.bind(format!("{from}:0").parse().map_err(std::io::Error::other)?)?;
        let mut stream = socket.connect(addr).await?;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        stream
            .write_all(
                format!(
                    "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Basic {auth}\r\n\r\n"
                )
                .as_bytes(),
            )
            .await?;
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut raw))
            .await
            .map_err(std::io::Error::other)??;
        let head = String::from_utf8_lossy(&raw[..raw.len().min(64)]).into_owned();
        head.split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))
    })
}

fn timed(n: usize, mut f: impl FnMut() -> std::io::Result<u16>) -> std::io::Result<Vec<Duration>> {
    (0..n)
        .map(|_| {
            let start = Instant::now();
            let code = f()?;
            assert_ne!(code, 401, "an authorised scrape was refused");
            Ok(start.elapsed())
        })
        .collect()
}

fn report(what: &str, times: &[Duration]) {
    let mut t = times.to_vec();
    t.sort();
    println!(
        "{what}: median {:.1} ms, worst {:.1} ms over {} scrapes",
        t[t.len() / 2].as_secs_f64() * 1e3,
        t[t.len() - 1].as_secs_f64() * 1e3,
        t.len()
    );
}
