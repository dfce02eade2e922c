use super::*;

/// A CA, a server certificate for 127.0.0.1 signed by it, and their keys, as PEM.
fn pki() -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn load(dir: &tempfile::TempDir, yaml: &str) -> Result<WebConfig, WebConfigError> {
    let path = dir.path().join("web.yml");
    std::fs::write(&path, yaml).unwrap();
    WebConfig::load(&path)
}

fn reason(dir: &tempfile::TempDir, yaml: &str) -> String {
    let err = load(dir, yaml).unwrap_err();
    assert!(err.to_string().contains("web.yml"), "names the file: {err}");
    err.reason
}

#[test]
fn a_full_configuration_loads_with_paths_relative_to_its_directory() {
    let (ca, cert, key) = pki();
    let dir = dir_with(&[("ca.pem", &ca), ("server.pem", &cert), ("server.key", &key)]);
    let hash = bcrypt::hash("pw", 4).unwrap();
    let web = load(
        &dir,
        &format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n  \
             min_version: TLS13\n\
             http_server_config:\n  headers:\n    X-Frame-Options: deny\n    \
             Content-Security-Policy: ''\n\
             basic_auth_users:\n  prom: {hash}\n\
             rate_limit:\n  interval: 100ms\n  burst: 5\n"
        ),
    )
    .unwrap();
    let tls = web.tls.as_ref().expect("TLS");
    assert_eq!(tls.alpn_protocols, vec![b"http/1.1".to_vec()]);
    assert_eq!(web.auth.as_ref().unwrap().users(), vec!["prom"]);
    assert_eq!(
        web.headers,
        vec![("X-Frame-Options".to_owned(), "deny".to_owned())],
        "a blank header is left unset"
    );
    assert_eq!(web.rate_limit, Some((Duration::from_millis(100), 5)));
    assert_eq!(
        web.stamps.len(),
        4,
        "the file, the certificate, the key and the CA"
    );
    assert!(!web.changed());
    std::fs::write(dir.path().join("server.pem"), format!("{cert}\n")).unwrap();
    let later = SystemTime::now() + Duration::from_secs(5);
    let f = std::fs::File::options()
        .write(true)
        .open(dir.path().join("server.pem"))
        .unwrap();
    f.set_modified(later).unwrap();
    assert!(web.changed(), "a renewed certificate is noticed");
}

#[test]
fn inline_certificates_and_an_empty_file_are_accepted() {
    let (_, cert, key) = pki();
    let dir = dir_with(&[]);
    let indent = |pem: &str| {
        pem.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    };
    let web = load(
        &dir,
        &format!(
            "tls_server_config:\n  cert: |\n{}  key: |\n{}",
            indent(&cert),
            indent(&key)
        ),
    )
    .unwrap();
    assert!(web.tls.is_some());
    let empty = load(&dir, "").unwrap();
    assert!(empty.tls.is_none() && empty.auth.is_none());
}

#[test]
fn mistakes_are_refused_with_the_key_and_what_to_do() {
    let (ca, cert, key) = pki();
    let dir = dir_with(&[("ca.pem", &ca), ("s.pem", &cert), ("s.key", &key)]);
    let tls = "tls_server_config:\n  cert_file: s.pem\n  key_file: s.key\n";
    let r = reason(&dir, "tls_server_config:\n  cert_fil: s.pem\n");
    assert!(r.contains("cert_fil") && r.contains("line 2"), "{r}");
    let r = reason(&dir, "basic_auth_users:\n  prom: hunter2\n");
    assert!(r.contains("bcrypt hash") && r.contains("htpasswd"), "{r}");
    let r = reason(
        &dir,
        &format!("{tls}  client_auth_type: RequireAnyClientCert\n"),
    );
    assert!(r.contains("RequireAndVerifyClientCert"), "{r}");
    let r = reason(
        &dir,
        &format!("{tls}  client_auth_type: RequireAndVerifyClientCert\n"),
    );
    assert!(r.contains("needs client_ca_file"), "{r}");
    let r = reason(&dir, &format!("{tls}  client_ca_file: ca.pem\n"));
    assert!(r.contains("NoClientCert"), "{r}");
    let r = reason(
        &dir,
        &format!("{tls}  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"),
    );
    assert!(
        r.contains("cipher_suites") && r.contains("remove it"),
        "{r}"
    );
    let r = reason(&dir, &format!("{tls}  min_version: TLS10\n"));
    assert!(r.contains("TLS12"), "{r}");
    let r = reason(&dir, "tls_server_config:\n  key_file: s.key\n");
    assert!(r.contains("needs cert_file"), "{r}");
    let r = reason(
        &dir,
        "tls_server_config:\n  cert_file: missing.pem\n  key_file: s.key\n",
    );
    assert!(r.contains("missing.pem"), "{r}");
    let r = reason(
        &dir,
        "tls_server_config:\n  cert_file: s.key\n  key_file: s.key\n",
    );
    assert!(r.contains("no CERTIFICATE"), "{r}");
    let r = reason(
        &dir,
        "tls_server_config:\n  cert_file: s.pem\n  key_file: s.pem\n",
    );
    assert!(r.contains("private key"), "{r}");
    let r = reason(
        &dir,
        "http_server_config:\n  headers:\n    Set-Cookie: a=b\n",
    );
    assert!(
        r.contains("Set-Cookie") && r.contains("X-Frame-Options"),
        "{r}"
    );
    let r = reason(&dir, "rate_limit:\n  interval: soon\n  burst: 1\n");
    assert!(r.contains("not a duration"), "{r}");
    let r = reason(&dir, "basic_auth_users: [a, b]\n");
    assert!(r.contains("basic_auth_users"), "{r}");
    let missing = WebConfig::load(&dir.path().join("nope.yml")).unwrap_err();
    assert!(missing.reason.contains("could not be read"), "{missing}");
}

#[test]
fn durations_read_as_prometheus_writes_them() {
    assert_eq!(parse_duration("100ms"), Some(Duration::from_millis(100)));
    assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
    assert_eq!(parse_duration("0"), Some(Duration::ZERO));
    assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
    for bad in ["", "s", "1x", "ms5", "-1s", "99999999999999999999d"] {
        assert_eq!(parse_duration(bad), None, "{bad:?}");
    }
}

#[test]
fn a_zero_interval_turns_the_rate_limit_off() {
    let dir = dir_with(&[]);
    let web = load(&dir, "rate_limit:\n  interval: 0\n  burst: 3\n").unwrap();
    assert_eq!(web.rate_limit, None);
}
