//! Finding and connecting to the Docker Engine: host resolution, the real engine, and each way a
//! connection fails (no socket, refused port, not Docker, no permission, bad TLS).

use crate::support;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;

use gpudeck::docker::{resolve_host, DockerError, Engine, TlsFiles, DEFAULT_HOST};
use support::docker::host as real_host;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |key| map.get(key).cloned()
}

#[test]
fn hosts_resolve_like_the_docker_cli() {
    let tls = |dir: &str| {
        Some(TlsFiles {
            ca: PathBuf::from(dir).join("ca.pem"),
            cert: PathBuf::from(dir).join("cert.pem"),
            key: PathBuf::from(dir).join("key.pem"),
        })
    };
    // --docker-host, the environment, the expected URI and TLS files.
    type Case = (
        Option<&'static str>,
        Vec<(&'static str, &'static str)>,
        &'static str,
        Option<TlsFiles>,
    );
    let cases: Vec<Case> = vec![
        (None, vec![], DEFAULT_HOST, None),
        (None, vec![("DOCKER_HOST", "")], DEFAULT_HOST, None),
        (
            None,
            vec![("DOCKER_HOST", "unix:///run/user/1000/docker.sock")],
            "unix:///run/user/1000/docker.sock",
            None,
        ),
        (
            Some("unix:///x.sock"),
            vec![("DOCKER_HOST", "tcp://h:1")],
            "unix:///x.sock",
            None,
        ),
        (
            None,
            vec![("DOCKER_HOST", "tcp://10.0.0.5")],
            "tcp://10.0.0.5:2375",
            None,
        ),
        (
            None,
            vec![("DOCKER_HOST", "tcp://h:2375/")],
            "tcp://h:2375",
            None,
        ),
        (
            None,
            vec![
                ("DOCKER_HOST", "tcp://h"),
                ("DOCKER_TLS_VERIFY", "1"),
                ("DOCKER_CERT_PATH", "/certs"),
            ],
            "tcp://h:2376",
            tls("/certs"),
        ),
        (
            None,
            vec![
                ("DOCKER_HOST", "tcp://h:9"),
                ("DOCKER_TLS_VERIFY", "1"),
                ("HOME", "/home/ada"),
            ],
            "tcp://h:9",
            tls("/home/ada/.docker"),
        ),
        // TLS settings mean nothing for a local socket.
        (
            None,
            vec![("DOCKER_TLS_VERIFY", "1"), ("HOME", "/h")],
            DEFAULT_HOST,
            None,
        ),
    ];
    for (flag, env, uri, want_tls) in cases {
        let spec = resolve_host(flag, env_of(&env)).unwrap();
        assert_eq!(spec.uri, uri, "{flag:?} {env:?}");
        assert_eq!(spec.tls, want_tls, "{flag:?} {env:?}");
    }
}

#[test]
fn unusable_hosts_are_refused_with_a_reason() {
    let cases = [
        ("ssh://me@box", "not supported yet"),
        ("npipe:////./pipe/docker_engine", "named pipes"),
        ("http://h:2375", "tcp://host:port"),
        ("ftp://h", "unknown scheme"),
        ("/var/run/docker.sock", "no scheme"),
        ("unix://relative.sock", "absolute path"),
        ("tcp://h:notaport", "tcp://host:port"),
    ];
    for (host, reason) in cases {
        let err = resolve_host(Some(host), env_of(&[])).unwrap_err();
        let DockerError::InvalidHost {
            host: named,
            detail,
        } = &err
        else {
            panic!("{host}: {err:?}");
        };
        assert_eq!(named, host);
        assert!(detail.contains(reason), "{host}: {detail}");
        assert_eq!(err.title(), "Unsupported Docker host");
        assert!(err.fix().contains("unix://"), "{}", err.fix());
    }
    let err = resolve_host(
        None,
        env_of(&[("DOCKER_HOST", "tcp://h"), ("DOCKER_TLS_VERIFY", "1")]),
    );
    assert!(matches!(err, Err(DockerError::Tls { .. })), "{err:?}");
}

#[tokio::test]
async fn connects_to_the_engine_and_reads_its_info() {
    if !support::docker::engine_or_skip("connects_to_the_engine_and_reads_its_info") {
        return;
    }
    let engine = Engine::connect(&real_host()).await.unwrap();
    let cli_api = support::docker::docker(&["version", "--format", "{{.Server.APIVersion}}"]);
    assert_eq!(
        engine.api_version(),
        cli_api,
        "negotiated down to the engine's API"
    );

    let info = engine.info().await.unwrap();
    let cli = support::docker::docker(&[
        "info",
        "--format",
        "{{.ServerVersion}}|{{.DefaultRuntime}}|{{.CgroupVersion}}|{{.DockerRootDir}}",
    ]);
    let want: Vec<&str> = cli.split('|').collect();
    assert_eq!(
        [
            info.server_version.as_str(),
            info.default_runtime.as_str(),
            info.cgroup_version.as_str(),
            info.docker_root_dir.as_str()
        ],
        want[..]
    );
    assert_eq!(info.api_version, cli_api);
    assert!(info.runtimes.contains(&"runc".to_string()), "{info:?}");
    assert!(!info.os.is_empty());
}

#[tokio::test]
async fn a_missing_socket_means_the_daemon_is_not_running() {
    let spec = resolve_host(Some("unix:///tmp/nonexistent.sock"), env_of(&[])).unwrap();
    let err = Engine::connect(&spec).await.unwrap_err();
    let DockerError::Unreachable { host, detail } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(host, "unix:///tmp/nonexistent.sock");
    assert!(detail.contains("/tmp/nonexistent.sock"), "{detail}");
    assert_eq!(err.title(), "Docker Engine not reachable");
    assert!(err.fix().contains("sudo systemctl start docker"));
    assert!(err
        .to_string()
        .starts_with("Docker is not reachable at unix:///tmp/nonexistent.sock"));
}

#[tokio::test]
async fn a_refused_tcp_port_is_unreachable() {
    let spec = resolve_host(Some("tcp://127.0.0.1:1"), env_of(&[])).unwrap();
    let err = Engine::connect(&spec).await.unwrap_err();
    assert!(
        matches!(&err, DockerError::Unreachable { detail, .. } if detail.contains("connection refused")),
        "{err:?}"
    );
}

/// Serves one canned HTTP answer to every connection on a unix socket.
fn fake_http_socket(path: PathBuf, answer: String) {
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(answer.as_bytes());
        }
    });
}

#[tokio::test]
async fn a_socket_that_is_not_docker_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("web.sock");
    fake_http_socket(
        path.clone(),
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found"
            .to_string(),
    );
    let spec = resolve_host(Some(&format!("unix://{}", path.display())), env_of(&[])).unwrap();
    let err = Engine::connect(&spec).await.unwrap_err();
    assert!(
        matches!(&err, DockerError::Unreachable { detail, .. } if detail.contains("not a Docker Engine")),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_engine_older_than_api_1_40_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sock");
    let body = r#"{"Version":"18.09.9","ApiVersion":"1.39","MinAPIVersion":"1.12"}"#;
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nApi-Version: 1.39\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    fake_http_socket(path.clone(), answer);
    let spec = resolve_host(Some(&format!("unix://{}", path.display())), env_of(&[])).unwrap();
    let err = Engine::connect(&spec).await.unwrap_err();
    assert_eq!(
        err,
        DockerError::ApiTooOld {
            server_api: "1.39".into(),
            min: "1.40".into()
        }
    );
    assert!(err.fix().contains("19.03"));
}

/// Runs inside a child of `a_user_outside_the_docker_group_is_told_to_join_it`, as `nobody`;
/// in an ordinary test run the variable is unset and it does nothing.
#[tokio::test]
async fn permission_helper_connects_as_another_user() {
    if std::env::var("GPUDECK_TEST_DOCKER_AS_NOBODY").is_err() {
        return;
    }
    let result = Engine::connect(&real_host()).await.map(|_| ());
    println!("RESULT: {result:?}");
}

#[test]
fn a_user_outside_the_docker_group_is_told_to_join_it() {
    use std::os::unix::process::CommandExt;
    if !support::docker::engine_or_skip("a_user_outside_the_docker_group_is_told_to_join_it") {
        return;
    }
    let spec = real_host();
    // SAFETY: geteuid has no preconditions.
    let root_and_socket = unsafe { libc::geteuid() } == 0 && spec.uri.starts_with("unix://");
    let why = "running a helper as nobody needs root, and the engine on a local socket";
    let test = "a_user_outside_the_docker_group_is_told_to_join_it";
    if !support::real::have(support::real::Part::Root, test, root_and_socket, why) {
        return;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &support::test_name(module_path!(), "permission_helper_connects_as_another_user"),
            "--nocapture",
        ])
        .env("GPUDECK_TEST_DOCKER_AS_NOBODY", "1")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let want = format!("RESULT: Err(PermissionDenied {{ host: \"{}\" }})", spec.uri);
    assert!(
        stdout.contains(&want),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
