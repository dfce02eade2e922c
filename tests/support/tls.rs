//! A private PKI for the metrics endpoint's TLS tests: a CA, a server certificate for 127.0.0.1
//! and a client certificate, signed by it, written as PEM files; and web configurations over them.

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

/// The password of the `prom` user the web configurations below name.
pub const PASSWORD: &str = "scrape-me";

/// PEM files of a CA, a server (127.0.0.1, localhost) and a client, in one directory.
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    pub fn write(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // Each its own name: a leaf named like its issuer looks self-signed to OpenSSL.
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "gpudeck test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.join(name), text).unwrap();
        write("ca.pem", ca.pem());
        for (who, names) in [
            (
                "server",
                vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            ),
            ("client", vec!["prometheus.example".to_owned()]),
        ] {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(names).unwrap();
            params
                .distinguished_name
                .push(DnType::CommonName, format!("gpudeck test {who}"));
            let cert = params.signed_by(&key, &ca).unwrap();
            write(&format!("{who}.pem"), cert.pem());
            write(&format!("{who}.key"), key.serialize_pem());
        }
        Pki {
            dir: dir.to_path_buf(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A web configuration in the PKI's directory: TLS with the server's certificate, the extra
    /// `tls` lines, and user `prom` when `users`.
    pub fn web_config(&self, tls: &str, users: bool) -> PathBuf {
        let mut yaml =
            format!("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n{tls}");
        if users {
            let hash = bcrypt::hash(PASSWORD, 4).unwrap();
            yaml.push_str(&format!("basic_auth_users:\n  prom: {hash}\n"));
        }
        let path = self.dir.join("web-config.yml");
        std::fs::write(&path, yaml).unwrap();
        path
    }

    /// `curl` of `https://ADDR/metrics` trusting the CA, with `extra` arguments: the HTTP status
    /// (0 when no answer came, as after a refused handshake) and the body.
    pub fn curl(&self, addr: &str, extra: &[&str]) -> (u16, String) {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "10", "--cacert"])
            .arg(self.path("ca.pem"))
            .args(["-w", "\n%{http_code}"])
            .args(extra)
            .arg(format!("https://{addr}/metrics"))
            .output()
            .expect("curl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }
}
