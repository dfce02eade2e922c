//! `gpudeck serve --metrics`: the endpoint as a scraper sees it, on the frozen simulation.

use crate::support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use support::metrics::{demo, gpus_json};
use support::serve::{debian_tool, get, scrape, start, value, wait_for, Reaped};
use support::Dirs;

fn serve(dirs: &Dirs, addr: &str) -> Command {
    demo(dirs, &["serve", "--metrics", addr])
}

#[test]
fn a_scrape_holds_the_simulators_values_for_every_gpu() {
    let dirs = Dirs::new();
    let served = start(serve(&dirs, "127.0.0.1:0"));
    let text = scrape(&served.addr);
    let gpus = gpus_json(demo(&dirs, &[]));
    assert_eq!(gpus.len(), 4);
    for gpu in &gpus {
        let labels = format!(
            r#"{{gpu="{}",uuid="{}"}}"#,
            gpu["index"],
            gpu["uuid"].as_str().unwrap()
        );
        let at = |name: &str| value(&text, &format!("{name}{labels}"));
        let util = gpu["util_gpu_pct"].as_f64().unwrap() / 100.0;
        assert_eq!(at("gpudeck_gpu_utilization_ratio"), Some(util), "{labels}");
        let used = gpu["memory_used_bytes"].as_f64();
        assert_eq!(at("gpudeck_gpu_memory_used_bytes"), used, "{labels}");
        assert_eq!(at("gpudeck_gpu_power_watts"), gpu["power_w"].as_f64());
        assert_eq!(
            at("gpudeck_gpu_temperature_celsius"),
            gpu["temp_c"].as_f64()
        );
        let sm_hz = gpu["sm_clock_mhz"].as_f64().map(|m| m * 1e6);
        assert_eq!(at("gpudeck_gpu_sm_clock_hertz"), sm_hz);
    }
    // The frozen machine: GPU 1 trains at 93 %, GPU 3 idles.
    assert!(text.contains(r#"gpudeck_gpu_utilization_ratio{gpu="1","#));
    assert!(text.contains("# TYPE gpudeck_gpu_ecc_errors_total counter"));
    assert!(text.contains("gpudeck_process_gpu_memory_bytes{gpu=\"0\""));
}

#[test]
fn the_index_page_links_to_the_metrics_and_other_paths_are_404() {
    let dirs = Dirs::new();
    let served = start(serve(&dirs, "127.0.0.1:0"));
    let (status, body) = get(&served.addr, "/").unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("href=\"/metrics\""), "{body}");
    assert_eq!(get(&served.addr, "/nothing").unwrap().0, 404);
}

#[test]
fn promtool_accepts_the_scrape() {
    let Some(promtool) = debian_tool("/usr/bin/promtool") else {
        return;
    };
    let dirs = Dirs::new();
    let served = start(serve(&dirs, "127.0.0.1:0"));
    let text = scrape(&served.addr);
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigterm_stops_serve_cleanly() {
    let dirs = Dirs::new();
    let mut served = start(serve(&dirs, "127.0.0.1:0"));
    scrape(&served.addr);
    let pid = served.child.0.id().to_string();
    let kill = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(kill.success());
    let status = wait_for(10, "serve to exit", || {
        served.child.0.try_wait().expect("try_wait")
    });
    assert!(status.success(), "{status:?}");
    assert!(get(&served.addr, "/metrics").is_err(), "still listening");
}

#[test]
fn a_taken_port_is_explained() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dirs = Dirs::new();
    let mut cmd = serve(&dirs, &addr);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = Reaped(cmd.spawn().unwrap());
    let status = wait_for(20, "serve to give up", || {
        child.0.try_wait().expect("try_wait")
    });
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains(&format!("cannot serve metrics on {addr}")),
        "{err}"
    );
    assert!(err.contains("already in use"), "{err}");
}

#[test]
fn a_gpu_source_that_cannot_open_ends_serve_with_the_reason() {
    let dirs = Dirs::new();
    let mut cmd = dirs.gpudeck("");
    cmd.args(["--nvml-lib", "/nonexistent/libnvidia-ml.so.1"])
        .args(["serve", "--metrics", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Reaped(cmd.spawn().unwrap());
    let status = wait_for(20, "serve to give up", || {
        child.0.try_wait().expect("try_wait")
    });
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("/nonexistent/libnvidia-ml.so.1"), "{err}");
    assert!(err.lines().all(|l| l.chars().count() <= 80), "{err}");
    let mut out = String::new();
    child
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(!out.contains("serving"), "it never served: {out}");
}

mod web_config {
    use super::*;
    use support::tls::{Pki, PASSWORD};

    fn served_with(dirs: &Dirs, web: &std::path::Path) -> support::serve::Served {
        let mut cmd = serve(dirs, "127.0.0.1:0");
        cmd.arg("--web-config").arg(web);
        start(cmd)
    }

    /// One request on a kept-alive plain connection as `user:password`: the status, having
    /// read the whole answer (by its Content-Length) so the connection can be used again.
    fn ask(stream: &mut std::net::TcpStream, user_password: &str) -> u16 {
        use base64::Engine as _;
        let auth = base64::engine::general_purpose::STANDARD.encode(user_password);
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).expect("an answer");
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("a content-length");
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body).unwrap();
        head.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// A password changed in the web configuration is refused at once on a connection kept
    /// alive from before (before, such a connection went on with the old users), with no new
    /// connection needed to notice the change.
    #[test]
    fn a_changed_password_is_refused_on_a_connection_kept_alive_from_before() {
        let dirs = Dirs::new();
        let web = dirs.root.path().join("web.yml");
        let write = |password: &str| {
            let hash = bcrypt::hash(password, 4).unwrap();
            std::fs::write(&web, format!("basic_auth_users:\n  prom: {hash}\n")).unwrap();
        };
        write("old-password");
        let served = served_with(&dirs, &web);
        let mut kept = std::net::TcpStream::connect(&served.addr).unwrap();
        kept.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        wait_for(30, "a first sample", || {
            Some(ask(&mut kept, "prom:old-password")).filter(|c| *c == 200)
        });
        write("new-password");
        wait_for(
            30,
            "the old password refused on the kept connection",
            || Some(ask(&mut kept, "prom:old-password")).filter(|c| *c == 401),
        );
        assert_eq!(ask(&mut kept, "prom:new-password"), 200);
    }

    #[test]
    fn tls_and_users_guard_the_scrape() {
        let dirs = Dirs::new();
        let pki = Pki::write(&dirs.root.path().join("pki"));
        let served = served_with(&dirs, &pki.web_config("", true));
        let user = format!("prom:{PASSWORD}");
        let (code, body) = wait_for(30, "a 200 over TLS", || {
            Some(pki.curl(&served.addr, &["-u", &user])).filter(|(c, _)| *c == 200)
        });
        assert_eq!(code, 200);
        assert!(body.contains("# TYPE gpudeck_gpu_info gauge"), "{body}");
        let (code, body) = pki.curl(&served.addr, &[]);
        assert_eq!(code, 401, "no credentials: {body}");
        let (code, _) = pki.curl(&served.addr, &["-u", "prom:guess"]);
        assert_eq!(code, 401, "a wrong password");
        let (code, _) = pki.curl(&served.addr, &["-u", &format!("root:{PASSWORD}")]);
        assert_eq!(code, 401, "an unknown user");
        let headers = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "-D", "-", "--cacert"])
            .arg(pki.path("ca.pem"))
            .arg(format!("https://{}/metrics", served.addr))
            .output()
            .unwrap();
        let headers = String::from_utf8_lossy(&headers.stdout).to_lowercase();
        assert!(
            headers.contains("www-authenticate: basic realm=\"gpudeck\""),
            "{headers}"
        );
        // Plain HTTP on the TLS port gets no metrics.
        if let Ok((status, body)) = get(&served.addr, "/metrics") {
            assert_ne!(status, 200, "plain HTTP served: {body}");
        }
    }

    #[test]
    fn mutual_tls_turns_away_a_client_without_a_certificate() {
        let dirs = Dirs::new();
        let pki = Pki::write(&dirs.root.path().join("pki"));
        let web = pki.web_config(
            "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n",
            false,
        );
        let served = served_with(&dirs, &web);
        let cert = pki.path("client.pem");
        let key = pki.path("client.key");
        let with_cert = [
            "--cert",
            cert.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ];
        wait_for(30, "a 200 with a client certificate", || {
            Some(pki.curl(&served.addr, &with_cert)).filter(|(c, _)| *c == 200)
        });
        let (code, body) = pki.curl(&served.addr, &[]);
        assert_eq!(code, 0, "no certificate, no answer: {body}");
    }

    #[test]
    fn a_web_config_that_cannot_be_used_stops_serve_with_the_reason() {
        let dirs = Dirs::new();
        let bad = dirs.root.path().join("web.yml");
        std::fs::write(&bad, "basic_auth_users:\n  prom: hunter2\n").unwrap();
        let out = serve(&dirs, "127.0.0.1:0")
            .arg("--web-config")
            .arg(&bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("web.yml"), "{err}");
        assert!(err.contains("bcrypt hash"), "{err}");
        assert!(out.stdout.is_empty(), "nothing served");
    }

    #[test]
    fn the_config_files_web_config_is_used_relative_to_the_config_dir() {
        let dirs = Dirs::new();
        let pki = Pki::write(&dirs.config());
        pki.web_config("", true);
        std::fs::write(
            dirs.config().join("config.toml"),
            "[metrics]\nweb_config = \"web-config.yml\"\n",
        )
        .unwrap();
        let served = start(serve(&dirs, "127.0.0.1:0"));
        let (code, _) = wait_for(30, "an answer over TLS", || {
            Some(pki.curl(&served.addr, &[])).filter(|(c, _)| *c != 0)
        });
        assert_eq!(code, 401, "the config's users apply");
    }

    #[test]
    fn serving_beyond_loopback_without_a_web_config_is_warned_about() {
        let dirs = Dirs::new();
        let mut served = start(serve(&dirs, "0.0.0.0:0"));
        let mut err = String::new();
        let mut stderr = served.child.0.stderr.take().unwrap();
        let _ = served.child.0.kill();
        stderr.read_to_string(&mut err).unwrap();
        assert!(err.contains("without TLS or users"), "{err}");
        assert!(err.contains("--web-config"), "{err}");
        let quiet = start(serve(&dirs, "127.0.0.1:0"));
        let mut quiet_child = quiet.child;
        let _ = quiet_child.0.kill();
        let mut err = String::new();
        quiet_child
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(
            !err.contains("without TLS"),
            "loopback is not warned about: {err}"
        );
    }
}

mod limits {
    use super::*;
    use std::net::TcpStream;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Holds `count` idle connections to `addr`, opening a new one whenever one is closed.
    fn flood(addr: String, count: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                held.retain(|s| {
                    let _ = s.set_nonblocking(true);
                    let mut byte = [0u8; 1];
                    !matches!(s.peek(&mut byte), Ok(0) | Err(_))
                        || matches!(s.peek(&mut byte), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
                });
                while held.len() < count {
                    match TcpStream::connect_timeout(
                        &addr.parse().unwrap(),
                        Duration::from_millis(200),
                    ) {
                        Ok(s) => held.push(s),
                        Err(_) => break,
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    }

    fn open_fds(pid: u32) -> usize {
        std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
    }

    #[test]
    fn idle_connections_cannot_starve_scrapes_or_take_every_file_descriptor() {
        let dirs = Dirs::new();
        let gpudeck = serve(&dirs, "127.0.0.1:0");
        // The same command under `ulimit -n 256`, as on a host with a low limit.
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
            .arg(gpudeck.get_program())
            .args(gpudeck.get_args());
        for (k, v) in gpudeck.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let served = start(cmd);
        scrape(&served.addr);
        let stop = Arc::new(AtomicBool::new(false));
        let flooder = flood(served.addr.clone(), 600, Arc::clone(&stop));
        std::thread::sleep(Duration::from_millis(500));
        let pid = served.child.0.id();
        // A starved scrape is never answered while the flood holds its connections: `get` gives
        // up after its 10 s read timeout, a deadline no loaded machine comes near, and the scrape
        // must have its answer by then. How long it took is said, not judged.
        for round in 0..5 {
            let started = Instant::now();
            let got = get(&served.addr, "/metrics");
            let took = started.elapsed();
            match got {
                Ok((200, body)) => assert!(body.contains("gpudeck_gpu_info"), "{body}"),
                other => {
                    panic!("scrape {round} under 600 idle connections: {other:?} after {took:?}")
                }
            }
            eprintln!("scrape {round} under 600 idle connections answered in {took:?}");
            let fds = open_fds(pid);
            assert!(
                fds < 120,
                "{fds} descriptors open with 64 connections allowed"
            );
        }
        stop.store(true, Ordering::SeqCst);
        flooder.join().unwrap();
    }
}

#[test]
fn serve_goes_on_when_nobody_reads_its_banner() {
    let dirs = Dirs::new();
    let addr = format!("127.0.0.1:{}", support::serve::free_port());
    let mut cmd = serve(&dirs, &addr);
    cmd.stdout(support::pipes::reader_gone())
        .stderr(Stdio::piped())
        .env("RUST_BACKTRACE", "0");
    let mut child = Reaped(cmd.spawn().unwrap());
    drop(cmd);
    let text = scrape(&addr);
    assert!(text.contains("gpudeck_gpu_"), "{text}");
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "serve still runs after its banner found no reader"
    );
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("panicked"), "{err}");
}

/// How long a connection waits between requests (60 s, kept alive) and how long a request head
/// may take once its first byte came (5 s), on a real connection to `gpudeck serve`.
mod keep_alive {
    use super::*;
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    /// One HTTP/1.1 GET /metrics on a kept-alive connection: its status, having read the whole
    /// answer (by its Content-Length) so the connection can be used again; an error when the
    /// endpoint closed the connection.
    fn ask(stream: &mut TcpStream) -> std::io::Result<u16> {
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")?;
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte)?;
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("a content-length");
        let mut body = vec![0u8; length];
        stream.read_exact(&mut body)?;
        Ok(head.split_whitespace().nth(1).unwrap().parse().unwrap())
    }

    /// Before, the 5 s limit on a request head ran while a kept-alive connection waited for
    /// the next request, so every connection kept between scrapes was closed after 5 s and a
    /// scraper every 15 s connected (and shook hands over TLS) anew each time.
    #[test]
    fn a_kept_alive_connection_idle_for_7_s_is_used_again() {
        let dirs = Dirs::new();
        let served = start(serve(&dirs, "127.0.0.1:0"));
        let mut kept = TcpStream::connect(&served.addr).unwrap();
        kept.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mine = kept.local_addr().unwrap();
        wait_for(30, "a first sample", || {
            ask(&mut kept).ok().filter(|c| *c == 200)
        });
        // The wait is what is tested: longer than a head may take, shorter than the idle limit.
        std::thread::sleep(Duration::from_secs(7));
        let again = ask(&mut kept);
        assert_eq!(
            again.as_ref().ok(),
            Some(&200),
            "the connection from {mine} idle for 7 s was closed: {again:?}"
        );
        assert_eq!(kept.local_addr().unwrap(), mine);
    }

    /// A client sending half a request head, then a byte a second, is cut by the 5 s limit
    /// on the head (its later bytes do not restart the clock), long before the 60 s a
    /// connection may wait for a request.
    #[test]
    fn a_half_head_trickled_byte_by_byte_is_cut_by_the_head_limit() {
        let dirs = Dirs::new();
        let served = start(serve(&dirs, "127.0.0.1:0"));
        scrape(&served.addr);
        let mut slow = TcpStream::connect(&served.addr).unwrap();
        slow.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut buf = [0u8; 512];
        loop {
            assert!(
                Instant::now() < deadline,
                "a half request head was held open for 30 s"
            );
            match slow.read(&mut buf) {
                Ok(0) => break,
                // An answer (408, 400) before closing is fine too; read on to the close.
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(_) => {
                    if slow.write_all(b"X").is_err() {
                        break;
                    }
                }
            }
        }
        // The endpoint still answers others.
        assert_eq!(get(&served.addr, "/metrics").unwrap().0, 200);
    }
}
