//! A scripted HTTP server on loopback for registry behaviour a real docker-registry does not show (token realms, indexes, bad digests).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    /// Header names lowercased.
    pub headers: BTreeMap<String, String>,
}

/// What to send back.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering (for timeout tests).
    pub delay: Option<Duration>,
}

impl Reply {
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.into(),
            delay: None,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A server answering every request with `handler`, keeping a log of requests.
pub struct FakeRegistry {
    pub port: u16,
    log: Arc<Mutex<Vec<Request>>>,
}

impl FakeRegistry {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> FakeRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().expect("local addr").port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let server_log = Arc::clone(&log);
        // Lives as long as the test process; each connection is answered once and closed.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (handler, log) = (Arc::clone(&handler), Arc::clone(&server_log));
                std::thread::spawn(move || serve(stream, &*handler, &log));
            }
        });
        FakeRegistry { port, log }
    }

    /// `127.0.0.1:PORT`, the registry part of references.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn serve(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Request>>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    log.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(request.clone());
    let reply = handler(&request);
    if let Some(delay) = reply.delay {
        std::thread::sleep(delay);
    }
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = stream;
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&reply.body);
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    Some(Request { path, headers })
}

/// `sha256:<hex>` of some bytes.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// A JSON error body as the distribution spec writes it.
pub fn error_body(code: &str, message: &str) -> String {
    format!(r#"{{"errors":[{{"code":"{code}","message":"{message}"}}]}}"#)
}
