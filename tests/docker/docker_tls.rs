//! TLS to a tcp:// engine (DOCKER_TLS_VERIFY): missing files, a server that does not speak TLS,
//! and a real handshake with client certificates against `openssl s_server`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use gpudeck::docker::{DockerError, Engine, HostSpec, TlsFiles};

fn spec(dir: &Path, port: u16) -> HostSpec {
    HostSpec {
        uri: format!("tcp://127.0.0.1:{port}"),
        tls: Some(TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        }),
    }
}

#[tokio::test]
async fn missing_certificates_and_a_plain_server_are_tls_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = Engine::connect(&spec(dir.path(), 1)).await.unwrap_err();
    assert!(
        matches!(&err, DockerError::Tls { detail } if detail.contains("ca.pem")),
        "missing files: {err:?}"
    );
    assert!(err.fix().contains("DOCKER_CERT_PATH"));

    // A plain-HTTP server where TLS was expected: the handshake fails inside rustls.
    for name in ["ca.pem", "cert.pem", "key.pem"] {
        std::fs::write(dir.path().join(name), "not a certificate\n").unwrap();
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let err = Engine::connect(&spec(dir.path(), port)).await.unwrap_err();
    assert!(
        matches!(err, DockerError::Tls { .. }),
        "plain server: {err:?}"
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`{ca}.pem`) and a certificate it signed (`{name}.pem`, `{name}-key.pem`).
fn issue(dir: &Path, ca: &str, name: &str, extensions: &str) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ext = dir.join(format!("{name}.ext"));
    std::fs::write(&ext, extensions).unwrap();
    let (key, csr, pem) = (
        format!("{name}-key.pem"),
        format!("{name}.csr"),
        format!("{name}.pem"),
    );
    let subject = format!("/CN={name}");
    openssl(
        dir,
        &[
            &["req"][..],
            &ec,
            &["-keyout", &key, "-out", &csr, "-subj", &subject],
        ]
        .concat(),
    );
    let (ca_pem, ca_key) = (format!("{ca}.pem"), format!("{ca}-key.pem"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_pem,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "1",
            "-out",
            &pem,
            "-extfile",
            &ext.display().to_string(),
        ],
    );
}

fn new_ca(dir: &Path, name: &str) {
    let (key, pem, subject) = (
        format!("{name}-key.pem"),
        format!("{name}.pem"),
        format!("/CN={name}"),
    );
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &pem,
            "-days",
            "1",
            "-subj",
            &subject,
        ],
    );
}

/// `openssl s_server` demanding a client certificate from `ca`, answering every request with
/// an HTML page; killed on drop.
struct TlsServer {
    child: Child,
    port: u16,
}

impl TlsServer {
    fn start(dir: &Path) -> TlsServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new("openssl")
            .args(["s_server", "-accept", &format!("127.0.0.1:{port}")])
            .args([
                "-cert",
                "server.pem",
                "-key",
                "server-key.pem",
                "-CAfile",
                "ca.pem",
            ])
            .args(["-Verify", "1", "-www"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // It prints ACCEPT once it listens; read on a thread so a silent server cannot hang us.
        let stdout = child.stdout.take().unwrap();
        let (ready, listening) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("ACCEPT") {
                    let _ = ready.send(());
                }
            }
        });
        let started = listening.recv_timeout(Duration::from_secs(10));
        assert!(started.is_ok(), "openssl s_server did not start");
        TlsServer { child, port }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_real_handshake_with_client_certificates() {
    let openssl = Command::new("openssl").arg("version").output().is_ok();
    let test = "a_real_handshake_with_client_certificates";
    if !crate::support::real::have(
        crate::support::real::Part::OpenSsl,
        test,
        openssl,
        "no openssl command",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    new_ca(path, "ca");
    issue(
        path,
        "ca",
        "server",
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    );
    issue(path, "ca", "client", "extendedKeyUsage=clientAuth\n");
    std::fs::rename(path.join("client.pem"), path.join("cert.pem")).unwrap();
    std::fs::rename(path.join("client-key.pem"), path.join("key.pem")).unwrap();
    let server = TlsServer::start(path);

    // The handshake succeeds, client certificate included; what answers is just not Docker.
    let err = Engine::connect(&spec(path, server.port)).await.unwrap_err();
    assert!(
        matches!(&err, DockerError::Unreachable { detail, .. } if detail.contains("not as a Docker Engine")),
        "{err:?}"
    );

    // Trusting another CA, the client refuses the server's certificate.
    let other = tempfile::tempdir().unwrap();
    new_ca(other.path(), "other-ca");
    std::fs::rename(
        other.path().join("other-ca.pem"),
        other.path().join("ca.pem"),
    )
    .unwrap();
    for name in ["cert.pem", "key.pem"] {
        std::fs::copy(path.join(name), other.path().join(name)).unwrap();
    }
    let err = Engine::connect(&spec(other.path(), server.port))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DockerError::Tls { detail } if detail.contains("UnknownIssuer")),
        "{err:?}"
    );
}
