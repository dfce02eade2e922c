//! Services in containers on the real engine: a notebook-kind service (busybox's httpd standing in
//! for JupyterLab) published on the host's 127.0.0.1 only, from a bridge network of its own (which
//! no other container reaches, and which goes with it) even where `[shell] network` is "none",
//! labelled, with every shell default; answering HTTP; stopped by
//! `gpudeck stop`, which closes its port. And the refusals: GPUs without the NVIDIA Container
//! Toolkit, and a launcher other than `single`.

use crate::support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use serde_json::Value;

use support::docker::engine_or_skip;
use support::docker_cleanup::Cleanup;
use support::run_containers::{containers_of, inspect, workdir, RunContainers};
use support::runs::{output, record, start, wait_until};
use support::{stderr, stdout, Dirs};

/// A port nobody listens on now.
fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// The body of `GET /path` from `addr`, or None when nothing (yet) answers with 200.
fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1);
    (status == Some("200")).then(|| body.to_string())
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// A spec file in `dir` for a notebook-kind service of `command` on `port`, with `extra` lines.
fn service_spec(
    dir: &std::path::Path,
    image: &str,
    command: &str,
    port: u16,
    extra: &str,
) -> String {
    let spec = dir.join("service.toml");
    let toml = format!(
        "name = \"nb\"\ncommand = {command}\nimage = \"{image}\"\nworkdir = \".\"\n{extra}\n\
         [service]\nkind = \"notebook\"\nports = [{{ name = \"http\", port = {port} }}]\n"
    );
    std::fs::write(&spec, toml).unwrap();
    spec.to_string_lossy().into_owned()
}

/// The host's IPv4 addresses other than loopback (eth0's, docker0's, ...), where a port
/// published on 0.0.0.0 would answer too.
fn other_host_addresses() -> Vec<Ipv4Addr> {
    let mut found = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, read below only while it lives and freed once.
    unsafe {
        assert_eq!(libc::getifaddrs(&mut list), 0, "getifaddrs");
        let mut entry = list;
        while let Some(ifa) = entry.as_ref() {
            let addr = ifa.ifa_addr;
            if !addr.is_null() && i32::from((*addr).sa_family) == libc::AF_INET {
                let inet = &*(addr as *const libc::sockaddr_in);
                let ip = Ipv4Addr::from(u32::from_be(inet.sin_addr.s_addr));
                if !ip.is_loopback() {
                    found.push(ip);
                }
            }
            entry = ifa.ifa_next;
        }
        libc::freeifaddrs(list);
    }
    found
}

#[test]
fn a_service_is_published_on_loopback_only_answers_http_and_stop_closes_its_port() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip(
        "a_service_is_published_on_loopback_only_answers_http_and_stop_closes_its_port",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (work_dir, work) = workdir();
    std::fs::write(
        work_dir.path().join("index.html"),
        "served from the workspace\n",
    )
    .unwrap();
    let dirs = Dirs::new();
    // Runs and shells get no network here; a service still gets the bridge to publish from.
    std::fs::create_dir_all(dirs.config()).unwrap();
    std::fs::write(
        dirs.config().join("config.toml"),
        "[shell]\nnetwork = \"none\"\n",
    )
    .unwrap();
    let port = free_port();
    let command = format!(
        "[\"busybox\", \"httpd\", \"-f\", \"-p\", \"0.0.0.0:{port}\", \"-h\", \"/workspace\"]"
    );
    let spec = service_spec(work_dir.path(), &image, &command, port, "gpus = \"none\"");
    let (id, _) = start(&dirs, &[&spec]);
    let network = format!("gpudeck-{id}-net");
    // Dropped after the containers (declared before them): a network in use cannot go.
    let _network = NetworkGone(network.clone());
    let _containers = RunContainers(id.clone());
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "running", "{rec}");
    assert_eq!(rec["container"]["network"], network.as_str(), "{rec}");

    let body = {
        let mut body = None;
        wait_until("the service to answer on 127.0.0.1", || {
            body = http_get(loopback(port), "/index.html");
            body.is_some()
        });
        body.unwrap()
    };
    assert_eq!(body, "served from the workspace\n");
    let others = other_host_addresses();
    assert!(!others.is_empty(), "docker0 at least");
    for other in others {
        let elsewhere = SocketAddr::from((other, port));
        assert!(
            TcpStream::connect_timeout(&elsewhere, Duration::from_secs(2)).is_err(),
            "published on {elsewhere} too"
        );
    }

    let found = containers_of(&id);
    assert_eq!(found.len(), 1, "one container serves");
    let seen = inspect(&found[0]);
    let config = &seen["Config"];
    let host = &seen["HostConfig"];
    let key = format!("{port}/tcp");
    let loopback_only =
        serde_json::json!([{ "HostIp": "127.0.0.1", "HostPort": port.to_string() }]);
    assert_eq!(
        host["PortBindings"],
        serde_json::json!({ &key: loopback_only })
    );
    assert_eq!(
        seen["NetworkSettings"]["Ports"][&key], loopback_only,
        "bound as asked: {}",
        seen["NetworkSettings"]["Ports"]
    );
    assert_eq!(host["PublishAllPorts"], false);
    assert!(config["ExposedPorts"].get(&key).is_some(), "{config}");
    assert_eq!(host["NetworkMode"], network.as_str());
    let address = seen["NetworkSettings"]["Networks"][&network]["IPAddress"]
        .as_str()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| panic!("an address on {network}: {}", seen["NetworkSettings"]))
        .to_string();
    // Another container, on Docker's default bridge where everyone's containers are, cannot
    // reach the service at its address (before, on that same bridge, it could); one on the
    // service's own network can, so the probe itself works.
    // (busybox's nc: its static wget crashes in a bare image.)
    let from_container = |on: &str| {
        let ask = format!(
            "printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | busybox timeout 5 busybox nc {address} {port}"
        );
        let out = std::process::Command::new("docker")
            .args([
                "run",
                "--rm",
                "--network",
                on,
                &image,
                "busybox",
                "sh",
                "-c",
                &ask,
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains("served from the workspace")
    };
    assert!(
        from_container(&network),
        "a container on the service's own network reaches it at {address}:{port}"
    );
    assert!(
        !from_container("bridge"),
        "a container on the default bridge reached the service at {address}:{port}"
    );
    assert_eq!(config["Labels"]["gpudeck.service"], "notebook");
    assert_eq!(config["Labels"]["gpudeck.run"], id.as_str());
    assert_eq!(config["Labels"]["gpudeck.rank"], "0");
    // The shell's defaults, as every run's container has them.
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    assert_eq!(config["User"], format!("{uid}:{gid}"));
    assert_eq!(config["WorkingDir"], "/workspace");
    assert_eq!(seen["Mounts"][0]["Source"], work.as_str());
    assert_eq!(seen["Mounts"][0]["Destination"], "/workspace");
    assert_eq!(
        seen["Mounts"].as_array().map(Vec::len),
        Some(1),
        "no socket"
    );
    assert_eq!(host["Privileged"], false);
    assert_eq!(host["SecurityOpt"][0], "no-new-privileges");
    assert!(host["CapDrop"].as_array().is_some_and(|c| !c.is_empty()));
    assert_eq!(host["ShmSize"], Value::from(8_u64 << 30));
    assert_eq!(host["Init"], true);

    let out = output(&dirs, &["stop", "nb", "--grace", "5"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(record(&dirs, &id)["state"], "stopped");
    wait_until("the port to close", || {
        TcpStream::connect_timeout(&loopback(port), Duration::from_secs(2)).is_err()
    });
    assert!(containers_of(&id).is_empty(), "removed after the stop");
    wait_until("the service's network to be removed", || {
        !network_exists(&network)
    });
}

fn network_exists(name: &str) -> bool {
    std::process::Command::new("docker")
        .args(["network", "inspect", name])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Removes a service's network when the test is done, pass or fail.
struct NetworkGone(String);

impl Drop for NetworkGone {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["network", "rm", &self.0])
            .output();
    }
}

#[test]
fn a_gpu_service_on_an_engine_without_the_toolkit_is_refused_before_anything_starts() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip(
        "a_gpu_service_on_an_engine_without_the_toolkit_is_refused_before_anything_starts",
    ) {
        return;
    }
    if !support::docker::no_nvidia_runtime_or_skip(
        "a_gpu_service_on_an_engine_without_the_toolkit_is_refused_before_anything_starts",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (work_dir, _work) = workdir();
    let dirs = Dirs::new();
    let port = free_port();
    let spec = service_spec(work_dir.path(), &image, "[\"true\"]", port, "gpus = \"0\"");
    let out = output(&dirs, &["run", &spec]);
    let text = crate::support::words(&stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&crate::support::words(gpudeck::shell::TOOLKIT_MESSAGE)),
        "{text}"
    );
    assert!(text.contains("--gpus none"), "{text}");
    assert!(stdout(&output(&dirs, &["runs"])).starts_with("No runs yet"));
}

#[test]
fn a_service_on_a_launcher_other_than_single_is_a_usage_error() {
    let _gate = crate::support::gate::gate(module_path!());
    let (work_dir, _work) = workdir();
    let dirs = Dirs::new();
    let port = free_port();
    for launcher in ["torchrun", "per-gpu"] {
        let extra = format!("gpus = \"0,1\"\nlauncher = \"{launcher}\"");
        let spec = service_spec(work_dir.path(), "any:1", "[\"true\"]", port, &extra);
        let out = output(&dirs, &["run", &spec]);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        // Wrapped to the terminal's width: compared word by word.
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains(&format!(
                "a notebook service is one process, so the {launcher} launcher cannot start it"
            )),
            "{text}"
        );
    }
    assert!(stdout(&output(&dirs, &["runs"])).starts_with("No runs yet"));
}

#[test]
fn gpudeck_notebook_in_an_image_without_jupyter_says_so_and_one_with_gpus_is_refused() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip(
        "gpudeck_notebook_in_an_image_without_jupyter_says_so_and_one_with_gpus_is_refused",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (work_dir, work) = workdir();
    let dirs = Dirs::new();

    // busybox has no `jupyter`: the container starts, the program is missing, and the user is
    // told which image lacks what, and the two ways out.
    let out = output(
        &dirs,
        &["notebook", &image, "--gpus", "none", "--workdir", &work],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let id = stdout(&out).trim().to_string();
    for container in containers_of(&id) {
        cleanup.container(&container);
    }
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("JupyterLab ended before it answered: it failed with exit code 127")
            && words.contains(&format!("{image} has no `jupyter` on its PATH"))
            && words.contains("--host"),
        "{text}"
    );
    let rec = record(&dirs, &id);
    assert_eq!(rec["service"]["kind"], "notebook");
    // Its container is removed with the run's end, as a run's is.
    wait_until("the failed notebook's container to be removed", || {
        containers_of(&id).is_empty()
    });

    // GPUs on an engine without the NVIDIA runtime: refused before anything starts.
    if !support::docker::no_nvidia_runtime_or_skip(
        "gpudeck_notebook_in_an_image_without_jupyter_says_so_and_one_with_gpus_is_refused",
    ) {
        return;
    }
    let fresh = Dirs::new();
    let out = output(
        &fresh,
        &["notebook", &image, "--gpus", "0", "--workdir", &work],
    );
    let text = crate::support::words(&stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&crate::support::words(gpudeck::shell::TOOLKIT_MESSAGE)),
        "{text}"
    );
    assert!(
        stdout(&out).is_empty(),
        "no id for a service that never started"
    );
    let _ = work_dir;
}
