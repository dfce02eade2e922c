//! A stand-in Docker Engine on a unix socket that answers the few calls `gpudeck compat` makes
//! (ping, version, info, image list) with the runtimes a test chooses: the machine's real engine
//! has no NVIDIA runtime, and registering one would change a daemon every test shares.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

/// A fake engine serving until the test ends; `host()` is its `--docker-host`.
pub struct FakeEngine {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl FakeEngine {
    /// An engine of Docker 27.3.1 (API 1.47) that lists `runtimes` and no local image.
    pub fn start(runtimes: &[&str]) -> FakeEngine {
        let dir = tempfile::Builder::new()
            .prefix("c1-engine-")
            .tempdir()
            .expect("tempdir");
        let path = dir.path().join("docker.sock");
        let listener = UnixListener::bind(&path).expect("bind fake engine socket");
        let runtimes: serde_json::Map<String, serde_json::Value> = runtimes
            .iter()
            .map(|r| (r.to_string(), serde_json::json!({ "path": r })))
            .collect();
        let info = serde_json::json!({
            "ServerVersion": "27.3.1",
            "OperatingSystem": "Fake Linux",
            "DockerRootDir": "/var/lib/docker",
            "Runtimes": runtimes,
            "DefaultRuntime": "runc",
            "CgroupVersion": "2",
        })
        .to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let info = info.clone();
                std::thread::spawn(move || serve(stream, &info));
            }
        });
        FakeEngine { _dir: dir, path }
    }

    pub fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }
}

/// Answers requests on one connection until the client closes it.
fn serve(stream: UnixStream, info: &str) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        // Headers up to the blank line; these GET requests carry no body.
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" {
                break;
            }
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("/");
        let path = path.split('?').next().unwrap_or(path);
        let (status, body) = if path.ends_with("/_ping") {
            ("200 OK", "OK".to_string())
        } else if path.ends_with("/version") {
            (
                "200 OK",
                r#"{"Version":"27.3.1","ApiVersion":"1.47","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}"#
                    .to_string(),
            )
        } else if path.ends_with("/info") {
            ("200 OK", info.to_string())
        } else if path.ends_with("/images/json") {
            ("200 OK", "[]".to_string())
        } else {
            (
                "404 Not Found",
                format!(r#"{{"message":"the fake engine does not serve {path}"}}"#),
            )
        };
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nApi-Version: 1.47\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}
