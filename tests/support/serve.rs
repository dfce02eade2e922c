//! `gpudeck serve --metrics` in tests: start it on a free port, scrape it over plain HTTP, stop it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process killed and reaped when the test is done with it, pass or fail.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running `gpudeck serve` and the address it said it listens on.
pub struct Served {
    pub child: Reaped,
    pub addr: String,
}

/// Starts `cmd` (a `gpudeck ... serve --metrics 127.0.0.1:0`) and waits for its address line.
pub fn start(mut cmd: Command) -> Served {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Reaped(cmd.spawn().expect("gpudeck serve starts"));
    let stdout = child.0.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("gpudeck serve printed its address");
    let addr = line
        .trim()
        .strip_prefix("gpudeck: serving Prometheus metrics on ")
        .and_then(|rest| {
            rest.strip_prefix("http://")
                .or_else(|| rest.strip_prefix("https://"))
        })
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    Served { child, addr }
}

/// One HTTP/1.0 GET (so the answer is never chunked): status code and body.
pub fn get(addr: &str, target: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_string()))
}

/// Polls `probe` until it gives a value or `secs` pass.
pub fn wait_for<T>(secs: u64, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first successful scrape of /metrics (503 until the collector's first sample).
pub fn scrape(addr: &str) -> String {
    wait_for(30, "a 200 from /metrics", || match get(addr, "/metrics") {
        Ok((200, body)) => Some(body),
        _ => None,
    })
}

/// The value of the one series line that starts with `series` followed by a space.
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// A free TCP port on loopback (free when asked; the caller binds it soon after).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Percent-encodes a query parameter.
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Where Prometheus's program `path` is, or None after saying why the running test is skipped
/// (under `CI=true` the test fails instead: [`super::real::require`]).
pub fn debian_tool(path: &str) -> Option<&str> {
    let found = if std::path::Path::new(path).exists() {
        Ok(path)
    } else {
        Err(format!("{path} is missing"))
    };
    let test = super::real::current_test();
    super::real::require(super::real::Part::Prometheus, &test, found)
}
