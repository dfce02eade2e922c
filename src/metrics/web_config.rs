//! The Prometheus exporter-toolkit web configuration (`--web-config FILE`, `[metrics] web_config`):
//! TLS, client certificates, basic-auth users with bcrypt hashes, response headers and a rate
//! limit, in the YAML format node_exporter and dcgm-exporter read, so one file serves them all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use serde::Deserialize;

use super::auth::BasicAuth;

/// Why a web configuration could not be used, with the file and what to change.
#[derive(Debug, thiserror::Error)]
#[error("the web configuration {path} cannot be used: {reason}")]
pub struct WebConfigError {
    pub path: PathBuf,
    pub reason: String,
}

/// The file as written (exporter-toolkit's schema; a key it does not know is a mistake).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<TlsFile>,
    http_server_config: Option<HttpFile>,
    #[serde(default)]
    basic_auth_users: BTreeMap<String, String>,
    rate_limit: Option<RateLimitFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert: Option<String>,
    key: Option<String>,
    client_ca: Option<String>,
    cert_file: Option<PathBuf>,
    key_file: Option<PathBuf>,
    client_ca_file: Option<PathBuf>,
    client_auth_type: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    #[serde(default)]
    cipher_suites: Vec<String>,
    #[serde(default)]
    curve_preferences: Vec<String>,
    #[serde(default)]
    client_allowed_sans: Vec<String>,
    /// Go's choice between client and server preference; rustls always uses its own safe order.
    #[allow(dead_code)]
    prefer_server_cipher_suites: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpFile {
    /// HTTP/2 over TLS; gpudeck answers HTTP/1.1, which every Prometheus speaks.
    #[allow(dead_code)]
    http2: Option<bool>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitFile {
    interval: String,
    burst: u32,
}

/// The headers exporter-toolkit lets a web configuration add to every response.
const ALLOWED_HEADERS: [&str; 5] = [
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "X-XSS-Protection",
    "Strict-Transport-Security",
];

/// A web configuration ready to serve with.
#[derive(Clone)]
pub struct WebConfig {
    pub path: PathBuf,
    pub tls: Option<Arc<ServerConfig>>,
    pub auth: Option<Arc<BasicAuth>>,
    pub headers: Vec<(String, String)>,
    /// At most `burst` requests at once, one more each `interval`.
    pub rate_limit: Option<(Duration, u32)>,
    /// The files it was read from and their modification times, to notice a change.
    pub stamps: Vec<(PathBuf, Option<SystemTime>)>,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("path", &self.path)
            .field("tls", &self.tls.is_some())
            .field("auth", &self.auth.as_ref().map(|a| a.users()))
            .field("headers", &self.headers)
            .field("rate_limit", &self.rate_limit)
            .finish()
    }
}

impl WebConfig {
    /// Reads and checks `path`; relative file names in it are relative to its directory.
    pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
        let fail = |reason: String| WebConfigError {
            path: path.to_path_buf(),
            reason,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(format!("it could not be read ({e})")))?;
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            serde_yaml_ng::from_str(&text).map_err(|e| fail(yaml_reason(&e)))?
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let mut stamps = vec![(path.to_path_buf(), modified(path))];
        let tls = match file.tls_server_config {
            Some(tls) => Some(Arc::new(tls_config(tls, base, &mut stamps).map_err(fail)?)),
            None => None,
        };
        let auth = if file.basic_auth_users.is_empty() {
            None
        } else {
            Some(Arc::new(
                BasicAuth::new(file.basic_auth_users).map_err(fail)?,
            ))
        };
        let mut headers = Vec::new();
        for (name, value) in file
            .http_server_config
            .map(|h| h.headers)
            .unwrap_or_default()
        {
            let Some(known) = ALLOWED_HEADERS
                .iter()
                .find(|h| h.eq_ignore_ascii_case(&name))
            else {
                return Err(fail(format!(
                    "http_server_config.headers: {name} is not a header it may set; it may set {}",
                    ALLOWED_HEADERS.join(", ")
                )));
            };
            if value.contains(['\r', '\n']) {
                return Err(fail(format!(
                    "http_server_config.headers: the value of {known} holds a line break"
                )));
            }
            if !value.trim().is_empty() {
                headers.push(((*known).to_owned(), value));
            }
        }
        let rate_limit = match file.rate_limit {
            None => None,
            Some(r) => {
                let interval = parse_duration(&r.interval).ok_or_else(|| {
                    fail(format!(
                        "rate_limit.interval: {:?} is not a duration (e.g. 100ms, 1s, 1m)",
                        r.interval
                    ))
                })?;
                (!interval.is_zero()).then_some((interval, r.burst.max(1)))
            }
        };
        Ok(WebConfig {
            path: path.to_path_buf(),
            tls,
            auth,
            headers,
            rate_limit,
            stamps,
        })
    }

    /// Whether the file, or a certificate or key it names, changed since it was read.
    pub fn changed(&self) -> bool {
        self.stamps.iter().any(|(p, t)| modified(p) != *t)
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// serde's message with the line and column, in words a user knows.
fn yaml_reason(e: &serde_yaml_ng::Error) -> String {
    let at = e
        .location()
        .map(|l| format!("line {}, column {}: ", l.line(), l.column()))
        .unwrap_or_default();
    format!(
        "{at}{e} (the format is Prometheus' web configuration: tls_server_config, \
         http_server_config, basic_auth_users, rate_limit)"
    )
}

/// `100ms`, `1s`, `2m`, `1h`, or a sum such as `1m30s`, as Prometheus writes durations.
fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60)?),
            "h" => Duration::from_secs(n.checked_mul(3600)?),
            "d" => Duration::from_secs(n.checked_mul(86_400)?),
            _ => return None,
        };
        total = total.checked_add(unit)?;
        rest = &rest[unit_len..];
    }
    Some(total)
}

/// PEM text given inline or in a file (relative to the web configuration's directory).
fn pem(
    inline: Option<String>,
    file: Option<PathBuf>,
    what: &str,
    base: &Path,
    stamps: &mut Vec<(PathBuf, Option<SystemTime>)>,
) -> Result<Option<Vec<u8>>, String> {
    match (inline, file) {
        (Some(_), Some(_)) => Err(format!(
            "tls_server_config: give {what} or {what}_file, not both"
        )),
        (Some(text), None) => Ok(Some(text.into_bytes())),
        (None, Some(file)) => {
            let full = base.join(&file);
            let bytes = std::fs::read(&full)
                .map_err(|e| format!("tls_server_config.{what}_file {}: {e}", full.display()))?;
            stamps.push((full.clone(), modified(&full)));
            Ok(Some(bytes))
        }
        (None, None) => Ok(None),
    }
}

fn tls_config(
    tls: TlsFile,
    base: &Path,
    stamps: &mut Vec<(PathBuf, Option<SystemTime>)>,
) -> Result<ServerConfig, String> {
    for (key, given) in [
        ("cipher_suites", !tls.cipher_suites.is_empty()),
        ("curve_preferences", !tls.curve_preferences.is_empty()),
        ("client_allowed_sans", !tls.client_allowed_sans.is_empty()),
    ] {
        if given {
            return Err(format!(
                "tls_server_config.{key} is not supported by gpudeck (its TLS library offers only \
                 modern cipher suites and curves; to limit clients, give each its own certificate \
                 from a client CA); remove it"
            ));
        }
    }
    let cert = pem(tls.cert, tls.cert_file, "cert", base, stamps)?
        .ok_or("tls_server_config needs cert_file (or cert) with the server's certificate")?;
    let key = pem(tls.key, tls.key_file, "key", base, stamps)?
        .ok_or("tls_server_config needs key_file (or key) with the server's private key")?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("tls_server_config: the certificate is not PEM ({e})"))?;
    if certs.is_empty() {
        return Err("tls_server_config: the certificate file holds no CERTIFICATE block".into());
    }
    let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| {
        format!("tls_server_config: the key is not a PEM private key (PKCS#8, PKCS#1 or SEC1): {e}")
    })?;
    let versions = versions(tls.min_version.as_deref(), tls.max_version.as_deref())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client_ca = pem(tls.client_ca, tls.client_ca_file, "client_ca", base, stamps)?;
    let auth_type = tls.client_auth_type.as_deref().unwrap_or("NoClientCert");
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls_server_config: {e}"))?;
    let builder = match auth_type {
        "NoClientCert" => {
            if client_ca.is_some() {
                return Err(
                    "tls_server_config: client_ca_file is given but client_auth_type is \
                            NoClientCert; set client_auth_type: RequireAndVerifyClientCert"
                        .into(),
                );
            }
            builder.with_no_client_auth()
        }
        "RequireAndVerifyClientCert" | "VerifyClientCertIfGiven" => {
            let ca = client_ca.ok_or_else(|| {
                format!("tls_server_config: client_auth_type {auth_type} needs client_ca_file")
            })?;
            let mut roots = RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(&ca) {
                let c =
                    c.map_err(|e| format!("tls_server_config: the client CA is not PEM ({e})"))?;
                roots
                    .add(c)
                    .map_err(|e| format!("tls_server_config: the client CA: {e}"))?;
            }
            if roots.is_empty() {
                return Err("tls_server_config: the client CA file holds no certificate".into());
            }
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider));
            let verifier = if auth_type == "VerifyClientCertIfGiven" {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("tls_server_config: the client CA: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
        "RequestClientCert" | "RequireAnyClientCert" => {
            return Err(format!(
                "tls_server_config.client_auth_type {auth_type} accepts certificates nobody \
                 verified; use RequireAndVerifyClientCert with client_ca_file"
            ))
        }
        other => {
            return Err(format!(
                "tls_server_config.client_auth_type {other:?} is not one of NoClientCert, \
                 VerifyClientCertIfGiven, RequireAndVerifyClientCert"
            ))
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls_server_config: the certificate and key do not fit ({e})"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    let rank = |v: Option<&str>, default: u8, key: &str| match v {
        None => Ok(default),
        Some("TLS12") => Ok(12),
        Some("TLS13") => Ok(13),
        Some("TLS10" | "TLS11") => Err(format!(
            "tls_server_config.{key}: TLS 1.0 and 1.1 are not offered (they are broken); use TLS12"
        )),
        Some(other) => Err(format!(
            "tls_server_config.{key}: {other:?} is not TLS12 or TLS13"
        )),
    };
    let (lo, hi) = (rank(min, 12, "min_version")?, rank(max, 13, "max_version")?);
    if lo > hi {
        return Err("tls_server_config: min_version is above max_version".into());
    }
    let mut out = Vec::new();
    if hi >= 13 {
        out.push(&rustls::version::TLS13);
    }
    if lo <= 12 {
        out.push(&rustls::version::TLS12);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
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
}
