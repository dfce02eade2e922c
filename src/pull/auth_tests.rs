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
    let creds = credentials_with_path("docker.io", Some(dir.path()), Some(&path_with(&helpers)))
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
