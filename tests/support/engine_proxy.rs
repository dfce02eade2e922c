//! A unix-socket proxy to the real Docker Engine that can be cut and restored: the engine as
//! gpudeck sees it (`--docker-host unix:///path`) goes away and comes back, while the machine's
//! real daemon, which other tests use, is never touched.

use std::time::Duration;

/// A unix-socket proxy to the real engine that can be cut and restored, to play a daemon that
/// goes away and comes back without touching the machine's real daemon.
pub struct Proxy {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<std::os::unix::net::UnixStream>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    path: std::path::PathBuf,
}

impl Proxy {
    /// Listens on `path` and passes every connection through to the real engine.
    pub fn start(path: &std::path::Path) -> Proxy {
        use std::os::unix::net::{UnixListener, UnixStream};
        use std::sync::atomic::Ordering;
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).expect("bind proxy socket");
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (stop2, conns2) = (stop.clone(), conns.clone());
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).expect("blocking");
                        let Ok(upstream) = UnixStream::connect("/var/run/docker.sock") else {
                            continue;
                        };
                        let mut list = conns2.lock().expect("lock");
                        list.push(client.try_clone().expect("clone"));
                        list.push(upstream.try_clone().expect("clone"));
                        for (mut from, mut to) in [
                            (
                                client.try_clone().expect("clone"),
                                upstream.try_clone().expect("clone"),
                            ),
                            (upstream, client),
                        ] {
                            std::thread::spawn(move || {
                                let _ = std::io::copy(&mut from, &mut to);
                                let _ = to.shutdown(std::net::Shutdown::Write);
                            });
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Proxy {
            stop,
            conns,
            thread: Some(thread),
            path: path.to_path_buf(),
        }
    }

    /// Stops accepting, cuts every open connection and removes the socket: the engine is gone.
    pub fn cut(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for c in self.conns.lock().expect("lock").iter() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        let _ = std::fs::remove_file(&self.path);
    }
}
