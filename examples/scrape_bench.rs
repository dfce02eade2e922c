//! Scrape cost benchmark: 8 simulated H100s (frozen at 300 s, so every sample is the same).
//! Prints the median and 99th percentile of rendering the Prometheus text, and of a whole
//! HTTP scrape of `/metrics` on loopback (connect, request, response, close), plus the size.
//!
//! `cargo run --release --example scrape_bench -- [SCRAPES]`

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpudeck::gpu::sim::SimSource;
use gpudeck::gpu::{report, GpuSource};
use gpudeck::host::ProcessTable;
use gpudeck::metrics::server::serve;
use gpudeck::metrics::{bind, render, Latest, Limits, Serving, Snapshot, XidCounts};
use gpudeck_sim_model::SimSpec;
use tokio_util::sync::CancellationToken;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scrapes: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let snapshot = sample_8_gpus()?;
    let text = render(&snapshot.inventory, &snapshot.samples, &snapshot.runs);
    let series = text.lines().filter(|l| !l.starts_with('#')).count();
    println!("8 GPUs: {series} series, {} bytes per scrape", text.len());

    let mut render_times = Vec::with_capacity(scrapes);
    for _ in 0..scrapes {
        let start = Instant::now();
        let text = render(&snapshot.inventory, &snapshot.samples, &snapshot.runs);
        render_times.push(start.elapsed());
        std::hint::black_box(text);
    }
    report("render", &mut render_times);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let latest = Latest::default();
    latest.set(snapshot);
    let stop = CancellationToken::new();
    let listener = runtime.block_on(bind("127.0.0.1:0".parse()?))?;
    let addr = listener.local_addr()?;
    let serving = Serving {
        web: None,
        limits: Limits::default(),
    };
    runtime.spawn(serve(listener, latest, serving, stop.clone()));
    let mut http_times = Vec::with_capacity(scrapes);
    for _ in 0..scrapes {
        let start = Instant::now();
        let body_len = scrape(&addr.to_string())?;
        http_times.push(start.elapsed());
        assert!(body_len > text.len(), "a short answer: {body_len} bytes");
    }
    report("HTTP scrape", &mut http_times);
    stop.cancel();
    Ok(())
}

/// One sample of the default 8-GPU machine, as the collector would hand it over.
fn sample_8_gpus() -> Result<Snapshot, Box<dyn std::error::Error>> {
    let mut source = SimSource::new(SimSpec::parse("gpus=8,frozen=300")?);
    let table: Arc<dyn ProcessTable> = Arc::new(source.process_table());
    let inventory = source.inventory()?;
    let r = report::collect(&mut source as &mut dyn GpuSource, &table, "bench".into());
    Ok(Snapshot {
        inventory: Arc::new(inventory),
        samples: r.gpus.into_iter().map(|g| g.sample).collect(),
        runs: Vec::new(),
        xids: XidCounts::default(),
        services: Vec::new(),
    })
}

/// One HTTP/1.0 GET of /metrics; the number of bytes that came back.
fn scrape(addr: &str) -> std::io::Result<usize> {
    let mut stream = TcpStream::connect(addr)?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = Vec::with_capacity(16 * 1024);
    stream.read_to_end(&mut raw)?;
    Ok(raw.len())
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{what}: median {:.1} µs, p99 {:.1} µs over {} runs",
        at(0.5).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        times.len()
    );
}
