//! Registry credentials from the Docker CLI's own config: `auths` entries, `credHelpers` and `credsStore`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use bollard::auth::DockerCredentials;
use serde::Deserialize;
use thiserror::Error;

/// The key the Docker CLI stores Docker Hub credentials under.
pub const DOCKER_HUB_AUTH_KEY: &str = "https://index.docker.io/v1/";

/// Why the credentials for a registry could not be read.
#[derive(Debug, Error)]
pub enum AuthError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {reason}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("the saved login for {registry} in {} is damaged: {reason}; log in again with `docker login {registry}`", path.display())]
    BadAuth {
        path: PathBuf,
        registry: String,
        reason: String,
    },
    #[error("the credential helper docker-credential-{helper} failed for {registry}: {reason}")]
    Helper {
        helper: String,
        registry: String,
        reason: String,
    },
}

#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: HashMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: HashMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct AuthEntry {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    identitytoken: Option<String>,
    registrytoken: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HelperReply {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// The credentials `docker pull` would use for `registry_host` (`docker.io`, `nvcr.io`,
/// `127.0.0.1:5000`), read from `<dir>/config.json` where `dir` is `docker_config_dir`, else
/// `$DOCKER_CONFIG`, else `~/.docker`. `Ok(None)` when there is no config or no login for it.
///
/// This may run a credential helper program: call it from a blocking context
/// (`tokio::task::spawn_blocking`) in async code.
pub fn credentials_for(
    registry_host: &str,
    docker_config_dir: Option<&Path>,
) -> Result<Option<DockerCredentials>, AuthError> {
    credentials_with_path(registry_host, docker_config_dir, None)
}

/// As [`credentials_for`], looking for credential helpers on `helper_path` instead of `$PATH`.
pub(crate) fn credentials_with_path(
    registry_host: &str,
    docker_config_dir: Option<&Path>,
    helper_path: Option<&OsString>,
) -> Result<Option<DockerCredentials>, AuthError> {
    let Some(dir) = docker_config_dir
        .map(Path::to_path_buf)
        .or_else(default_config_dir)
    else {
        return Ok(None);
    };
    let path = dir.join("config.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(AuthError::Read { path, source }),
    };
    let config: ConfigFile = serde_json::from_str(&text).map_err(|e| AuthError::Invalid {
        path: path.clone(),
        line: e.line(),
        column: e.column(),
        reason: e.to_string(),
    })?;
    let server = server_address(registry_host);
    let helper = config
        .cred_helpers
        .get(registry_host)
        .or(config.creds_store.as_ref());
    if let Some(helper) = helper.filter(|h| !h.is_empty()) {
        if let Some(found) = run_helper(helper, registry_host, &server, helper_path)? {
            return Ok(Some(found));
        }
    }
    let entry = config
        .auths
        .iter()
        .find(|(key, _)| auth_key_host(key) == normalise_host(registry_host));
    match entry {
        Some((_, entry)) => from_entry(entry, &server, &path, registry_host).map(Some),
        None => Ok(None),
    }
}

fn default_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker"))
}

/// The server address the CLI uses as the key and helper argument.
fn server_address(registry_host: &str) -> String {
    if normalise_host(registry_host) == "docker.io" {
        DOCKER_HUB_AUTH_KEY.to_string()
    } else {
        registry_host.to_string()
    }
}

fn normalise_host(host: &str) -> &str {
    match host {
        "index.docker.io" | "registry-1.docker.io" | "docker.io" => "docker.io",
        other => other,
    }
}

/// `https://index.docker.io/v1/`, `http://host:5000/v2/` and `host:5000` all name a host.
fn auth_key_host(key: &str) -> &str {
    let without_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = without_scheme.split('/').next().unwrap_or(without_scheme);
    normalise_host(host)
}

fn from_entry(
    entry: &AuthEntry,
    server: &str,
    path: &Path,
    registry: &str,
) -> Result<DockerCredentials, AuthError> {
    let bad = |reason: &str| AuthError::BadAuth {
        path: path.to_path_buf(),
        registry: registry.to_string(),
        reason: reason.to_string(),
    };
    let (mut username, mut password) = (entry.username.clone(), entry.password.clone());
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| bad("its `auth` field is not base64"))?;
        let decoded =
            String::from_utf8(decoded).map_err(|_| bad("its `auth` field is not text"))?;
        let (user, pass) = decoded
            .split_once(':')
            .ok_or_else(|| bad("its `auth` field is not user:password"))?;
        username = Some(user.to_string());
        password = Some(pass.to_string());
    }
    Ok(DockerCredentials {
        username: username.filter(|u| !u.is_empty()),
        password: password.filter(|p| !p.is_empty()),
        serveraddress: Some(server.to_string()),
        identitytoken: entry.identitytoken.clone().filter(|t| !t.is_empty()),
        registrytoken: entry.registrytoken.clone().filter(|t| !t.is_empty()),
        ..Default::default()
    })
}

/// Runs `docker-credential-<helper> get` with the server address on stdin. `Ok(None)` when the
/// helper has nothing for this server.
fn run_helper(
    helper: &str,
    registry: &str,
    server: &str,
    helper_path: Option<&OsString>,
) -> Result<Option<DockerCredentials>, AuthError> {
    let failed = |reason: String| AuthError::Helper {
        helper: helper.to_string(),
        registry: registry.to_string(),
        reason,
    };
    let output = ask_helper(helper, server, helper_path).map_err(|e| {
        failed(format!(
            "it could not be run ({e}); is it installed and on PATH?"
        ))
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        if stdout.contains("credentials not found") {
            return Ok(None);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let said = format!("{} {}", stdout.trim(), stderr.trim());
        return Err(failed(said.trim().to_string()));
    }
    let reply: HelperReply = serde_json::from_str(&stdout)
        .map_err(|e| failed(format!("its answer is not the expected JSON: {e}")))?;
    Ok(Some(helper_credentials(reply, server)))
}

fn ask_helper(
    helper: &str,
    server: &str,
    helper_path: Option<&OsString>,
) -> std::io::Result<std::process::Output> {
    let mut command = Command::new(format!("docker-credential-{helper}"));
    if let Some(path) = helper_path {
        command.env("PATH", path);
    }
    let mut child = command
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(server.as_bytes())?;
    }
    child.wait_with_output()
}

/// A helper answers `<token>` as the user name when the secret is an identity token.
fn helper_credentials(reply: HelperReply, server: &str) -> DockerCredentials {
    let mut credentials = DockerCredentials {
        serveraddress: Some(server.to_string()),
        ..Default::default()
    };
    if reply.username == "<token>" {
        credentials.identitytoken = Some(reply.secret);
    } else {
        credentials.username = Some(reply.username);
        credentials.password = Some(reply.secret);
    }
    credentials
}

#[cfg(test)]
mod tests {
    //! Credentials read from temporary Docker config dirs, with fake credential helpers.

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    fn config_dir(json: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), json).unwrap();
        dir
    }

    /// A directory holding `docker-credential-<name>`: a shell script that logs the server it was
    /// asked about and answers with `reply` (or fails with `not found` when `reply` is None).
    fn helper_dir(name: &str, reply: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("asked");
        let body = match reply {
            Some(reply) => format!("cat > '{}'\necho '{reply}'\n", log.display()),
            None => format!(
                "cat > '{}'\necho 'credentials not found in native keychain'\nexit 1\n",
                log.display()
            ),
        };
        let script = dir.path().join(format!("docker-credential-{name}"));
        std::fs::write(
            &script,
            format!("#!/bin/sh\n[ \"$1\" = get ] || exit 3\n{body}"),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    /// PATH with the helper dir first, then the usual places for `sh` and `cat`.
    fn path_with(dir: &tempfile::TempDir) -> OsString {
        OsString::from(format!("{}:/usr/bin:/bin", dir.path().display()))
    }

    fn asked(dir: &tempfile::TempDir) -> String {
        std::fs::read_to_string(dir.path().join("asked")).unwrap()
    }

    #[test]
    fn no_config_file_means_no_credentials() {
        let dir = tempfile::tempdir().unwrap();
        assert!(credentials_for("docker.io", Some(dir.path()))
            .unwrap()
            .is_none());
    }

    #[test]
    fn base64_auth_entries_by_host_and_by_url() {
        let json = format!(
            r#"{{"auths": {{
            "https://index.docker.io/v1/": {{"auth": "{}"}},
            "127.0.0.1:5000": {{"auth": "{}"}},
            "https://nvcr.io/v2/": {{"auth": "{}"}}
        }}}}"#,
            b64("hubuser:hubpass"),
            b64("local:pa:ss"),
            b64("$oauthtoken:nvapi-key")
        );
        let dir = config_dir(&json);
        let hub = credentials_for("docker.io", Some(dir.path()))
            .unwrap()
            .unwrap();
        assert_eq!(hub.username.as_deref(), Some("hubuser"));
        assert_eq!(hub.password.as_deref(), Some("hubpass"));
        assert_eq!(hub.serveraddress.as_deref(), Some(DOCKER_HUB_AUTH_KEY));

        let local = credentials_for("127.0.0.1:5000", Some(dir.path()))
            .unwrap()
            .unwrap();
        assert_eq!(local.username.as_deref(), Some("local"));
        assert_eq!(
            local.password.as_deref(),
            Some("pa:ss"),
            "only the first colon splits"
        );
        assert_eq!(local.serveraddress.as_deref(), Some("127.0.0.1:5000"));

        let ngc = credentials_for("nvcr.io", Some(dir.path()))
            .unwrap()
            .unwrap();
        assert_eq!(ngc.username.as_deref(), Some("$oauthtoken"));
        assert!(credentials_for("ghcr.io", Some(dir.path()))
            .unwrap()
            .is_none());
        assert!(credentials_for("127.0.0.1:5001", Some(dir.path()))
            .unwrap()
            .is_none());
    }

    #[test]
    fn identity_tokens_are_passed_on() {
        let json = format!(
            r#"{{"auths": {{"registry.example.com": {{"auth": "{}", "identitytoken": "tok-123"}}}}}}"#,
            b64("<token>:")
        );
        let dir = config_dir(&json);
        let creds = credentials_for("registry.example.com", Some(dir.path()))
            .unwrap()
            .unwrap();
        assert_eq!(creds.identitytoken.as_deref(), Some("tok-123"));
        assert_eq!(creds.password, None);
    }

    #[test]
    fn damaged_entries_and_files_say_where() {
        let dir = config_dir(r#"{"auths": {"127.0.0.1:5000": {"auth": "%%%not-base64"}}}"#);
        let error = credentials_for("127.0.0.1:5000", Some(dir.path())).unwrap_err();
        assert!(matches!(error, AuthError::BadAuth { .. }), "{error}");
        assert!(
            error.to_string().contains("docker login 127.0.0.1:5000"),
            "{error}"
        );

        let no_colon = config_dir(&format!(
            r#"{{"auths": {{"h.io": {{"auth": "{}"}}}}}}"#,
            b64("nocolon")
        ));
        assert!(matches!(
            credentials_for("h.io", Some(no_colon.path())),
            Err(AuthError::BadAuth { .. })
        ));

        let broken = config_dir("{\n  \"auths\": {,\n}");
        let error = credentials_for("docker.io", Some(broken.path())).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("config.json:2:"), "{message}");
    }

    #[test]
    fn cred_helpers_are_asked_with_the_server_on_stdin() {
        let helpers = helper_dir(
            "fake",
            Some(r#"{"ServerURL":"x","Username":"helper-user","Secret":"helper-secret"}"#),
        );
        let dir = config_dir(r#"{"auths": {}, "credHelpers": {"nvcr.io": "fake"}}"#);
        let creds = credentials_with_path("nvcr.io", Some(dir.path()), Some(&path_with(&helpers)))
            .unwrap()
            .unwrap();
        assert_eq!(creds.username.as_deref(), Some("helper-user"));
        assert_eq!(creds.password.as_deref(), Some("helper-secret"));
        assert_eq!(asked(&helpers), "nvcr.io");
        // Another registry does not use that helper.
        assert!(
            credentials_with_path("ghcr.io", Some(dir.path()), Some(&path_with(&helpers)))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn creds_store_serves_every_registry_and_token_users_become_identity_tokens() {
        let helpers = helper_dir(
            "store",
            Some(r#"{"ServerURL":"x","Username":"<token>","Secret":"refresh-token"}"#),
        );
        let dir =
            config_dir(r#"{"auths": {"https://index.docker.io/v1/": {}}, "credsStore": "store"}"#);
        let creds =
            credentials_with_path("docker.io", Some(dir.path()), Some(&path_with(&helpers)))
                .unwrap()
                .unwrap();
        assert_eq!(creds.identitytoken.as_deref(), Some("refresh-token"));
        assert_eq!(creds.username, None);
        assert_eq!(asked(&helpers), DOCKER_HUB_AUTH_KEY);
    }

    #[test]
    fn a_helper_without_credentials_falls_back_to_auths() {
        let helpers = helper_dir("empty", None);
        let json = format!(
            r#"{{"auths": {{"h.io": {{"auth": "{}"}}}}, "credsStore": "empty"}}"#,
            b64("u:p")
        );
        let dir = config_dir(&json);
        let creds = credentials_with_path("h.io", Some(dir.path()), Some(&path_with(&helpers)))
            .unwrap()
            .unwrap();
        assert_eq!(creds.username.as_deref(), Some("u"));
        assert!(
            credentials_with_path("other.io", Some(dir.path()), Some(&path_with(&helpers)))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_missing_helper_is_an_error_that_names_it() {
        let empty = tempfile::tempdir().unwrap();
        let dir = config_dir(r#"{"credHelpers": {"h.io": "nosuchhelper"}}"#);
        let error =
            credentials_with_path("h.io", Some(dir.path()), Some(&path_with(&empty))).unwrap_err();
        assert!(matches!(error, AuthError::Helper { .. }));
        assert!(
            error.to_string().contains("docker-credential-nosuchhelper"),
            "{error}"
        );
    }

    #[test]
    fn auth_keys_name_hosts() {
        assert_eq!(auth_key_host("https://index.docker.io/v1/"), "docker.io");
        assert_eq!(auth_key_host("http://127.0.0.1:5000/v2/"), "127.0.0.1:5000");
        assert_eq!(auth_key_host("nvcr.io"), "nvcr.io");
    }
}
