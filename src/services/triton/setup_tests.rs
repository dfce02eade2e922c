//! The command line, the layout read from a binary's path, the backend directory and the
//! environment (the real wheel is exercised by the services test in `tests/runs`).

use super::*;

const WHEEL_SERVER: &str =
    "/home/u/venv/lib/python3.11/site-packages/pytriton/tritonserver/bin/tritonserver";

#[test]
fn every_endpoint_binds_loopback_on_its_port() {
    let ports = TritonPorts {
        http: 18000,
        grpc: 18001,
        metrics: 18002,
    };
    let command = triton_command(
        Path::new("/opt/tritonserver/bin/tritonserver"),
        "127.0.0.1",
        Path::new("/models"),
        Some(Path::new("/opt/tritonserver/backends")),
        ports,
    );
    assert_eq!(
        command,
        [
            "/opt/tritonserver/bin/tritonserver",
            "--model-repository=/models",
            "--backend-directory=/opt/tritonserver/backends",
            "--http-address=127.0.0.1",
            "--http-port=18000",
            "--grpc-address=127.0.0.1",
            "--grpc-port=18001",
            "--allow-metrics=true",
            "--metrics-address=127.0.0.1",
            "--metrics-port=18002",
            "--exit-timeout-secs=5",
        ]
    );
}

#[test]
fn the_wheel_layout_names_its_python_environment_and_version() {
    assert_eq!(
        TritonInstall::from_binary(Path::new(WHEEL_SERVER)),
        TritonInstall {
            root: "/home/u/venv/lib/python3.11/site-packages/pytriton/tritonserver".into(),
            python: Some(("/home/u/venv".into(), "3.11".into())),
        }
    );
    assert_eq!(
        TritonInstall::from_binary(Path::new("/opt/tritonserver/bin/tritonserver")),
        TritonInstall {
            root: "/opt/tritonserver".into(),
            python: None,
        }
    );
}

/// The wheel's tree, as nvidia-pytriton 0.7.0 installs it, with empty files.
fn wheel(env: &Path, stub_versions: &[&str]) -> PathBuf {
    let root = env.join("lib/python3.11/site-packages/pytriton/tritonserver");
    let python = root.join("backends/python");
    std::fs::create_dir_all(&python).unwrap();
    std::fs::create_dir_all(python.join("__pycache__")).unwrap();
    std::fs::write(python.join("libtriton_python.so"), "").unwrap();
    std::fs::write(python.join("triton_python_backend_utils.py"), "").unwrap();
    for version in stub_versions {
        let dir = root.join("python_backend_stubs").join(version);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("triton_python_backend_stub"), version).unwrap();
    }
    std::fs::create_dir_all(root.join("bin")).unwrap();
    root.join("bin/tritonserver")
}

#[test]
fn the_wheel_gets_a_backend_directory_of_links_with_the_stub_of_its_python() {
    let dir = tempfile::tempdir().unwrap();
    let server = wheel(&dir.path().join("venv"), &["3.10", "3.11", "3.12"]);
    let scratch = dir.path().join("backends");
    for _ in 0..2 {
        // Twice: a service started again finds its directory there.
        let backends = prepare_backend_directory(&server, &scratch).unwrap();
        assert_eq!(backends, scratch);
    }
    let python = scratch.join("python");
    let mut names: Vec<String> = std::fs::read_dir(&python)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "libtriton_python.so",
            "triton_python_backend_stub",
            "triton_python_backend_utils.py"
        ]
    );
    let stub = std::fs::read_to_string(python.join("triton_python_backend_stub")).unwrap();
    assert_eq!(stub, "3.11");
}

#[test]
fn a_full_install_keeps_its_own_backends() {
    let dir = tempfile::tempdir().unwrap();
    let python = dir.path().join("backends/python");
    std::fs::create_dir_all(&python).unwrap();
    std::fs::write(python.join("triton_python_backend_stub"), "").unwrap();
    let server = dir.path().join("bin/tritonserver");
    let scratch = dir.path().join("scratch");
    let backends = prepare_backend_directory(&server, &scratch).unwrap();
    assert_eq!(backends, dir.path().join("backends"));
    assert!(!scratch.exists());
}

#[test]
fn a_wheel_without_the_stub_of_its_python_says_which_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let server = wheel(&dir.path().join("venv"), &["3.12"]);
    let err = prepare_backend_directory(&server, &dir.path().join("b")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("nvidia-pytriton ships no python backend stub for Python 3.11"),
        "{err}"
    );
    let err =
        prepare_backend_directory(Path::new("/nowhere/bin/tritonserver"), dir.path()).unwrap_err();
    assert!(matches!(err, TritonSetupError::NoBackends { .. }), "{err}");
}

#[test]
fn the_wheel_runs_with_its_environment_first_on_path_and_its_python_library() {
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join("venv");
    let server = wheel(&env, &["3.11"]);
    let home = dir.path().join("python/bin");
    let lib = dir.path().join("python/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        env.join("pyvenv.cfg"),
        format!("home = {}\nversion = 3.11.7\n", home.display()),
    )
    .unwrap();
    let install = TritonInstall::from_binary(&server);
    let path = Some(OsString::from("/usr/bin:/bin"));

    // Without the library there, LD_LIBRARY_PATH is left alone.
    let vars = triton_env(&install, path.clone(), None);
    let bin = env.join("bin").display().to_string();
    assert_eq!(
        vars,
        [("PATH".to_string(), format!("{bin}:/usr/bin:/bin").into())]
    );

    std::fs::write(lib.join("libpython3.11.so.1.0"), "").unwrap();
    let vars = triton_env(&install, path, Some("/opt/lib".into()));
    assert_eq!(
        vars[1],
        (
            "LD_LIBRARY_PATH".to_string(),
            format!("{}:/opt/lib", lib.display()).into()
        )
    );

    let full = TritonInstall::from_binary(Path::new("/opt/tritonserver/bin/tritonserver"));
    assert_eq!(triton_env(&full, None, None), []);
}
