//! `gpudeck doctor` end to end: the real binary on the NVML simulator (and `--demo`), a dead Docker
//! socket or this machine's engine, fake programs on PATH and CUDA variables in the environment.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{sim_library, stderr, stdout, Dirs};

const DEAD_DOCKER: &str = "unix:///nonexistent.sock";

/// A doctor run: the simulation, extra arguments, and environment changes.
struct Run<'a> {
    sim: &'a str,
    args: Vec<String>,
    env: Vec<(&'a str, String)>,
}

impl<'a> Run<'a> {
    /// Through NVML on the simulator, with Docker at a dead socket.
    fn nvml(sim: &'a str) -> Self {
        let lib = sim_library().display().to_string();
        Self {
            sim,
            args: vec![
                "--nvml-lib".into(),
                lib,
                "--docker-host".into(),
                DEAD_DOCKER.into(),
            ],
            env: Vec::new(),
        }
    }

    fn env(mut self, key: &'a str, value: impl Into<String>) -> Self {
        self.env.push((key, value.into()));
        self
    }

    fn command(&self, dirs: &Dirs) -> Command {
        let mut cmd = dirs.gpudeck(self.sim);
        // The caller's shell must not leak into what is being diagnosed.
        cmd.env_remove("CUDA_VISIBLE_DEVICES")
            .env_remove("CUDA_DEVICE_ORDER")
            .arg("doctor")
            .args(&self.args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// The JSON report and the process's exit code (which must equal the report's).
    fn json(&self) -> Value {
        let dirs = Dirs::new();
        let out = self
            .command(&dirs)
            .arg("--json")
            .output()
            .expect("gpudeck runs");
        let doc: Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(&out), stderr(&out)));
        assert_eq!(doc["schema"], "gpudeck.doctor/v1");
        assert_eq!(
            out.status.code().map(Value::from),
            Some(doc["exit_code"].clone()),
            "the exit code is the report's"
        );
        doc
    }

    fn text(&self) -> (String, i32) {
        let dirs = Dirs::new();
        let out = self.command(&dirs).output().expect("gpudeck runs");
        (stdout(&out), out.status.code().unwrap_or(-1))
    }
}

/// The check with `id`, failing the test when it is missing.
fn check<'d>(doc: &'d Value, id: &str) -> &'d Value {
    doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id))
        .unwrap_or_else(|| panic!("no check {id}: {doc:#}"))
}

fn status(doc: &Value, id: &str) -> String {
    check(doc, id)["status"].as_str().unwrap_or("").to_string()
}

fn detail(doc: &Value, id: &str) -> String {
    check(doc, id)["detail"].as_str().unwrap_or("").to_string()
}

fn fix(doc: &Value, id: &str) -> String {
    check(doc, id)["fix"].as_str().unwrap_or("").to_string()
}

/// Whether this machine has an NVIDIA kernel module the doctor could read.
fn host_has_module() -> bool {
    Path::new("/proc/driver/nvidia/version").exists()
        || Path::new("/sys/module/nvidia/version").exists()
}

#[test]
fn a_healthy_simulation_passes_every_gpu_check() {
    let doc = Run::nvml("gpus=2,frozen=30").json();
    assert_eq!(doc["source"], "nvml");
    assert_eq!(doc["driver_version"], "580.65.06");
    assert_eq!(doc["cuda_driver_version"]["major"], 13);
    assert_eq!(doc["gpu_count"], 2);
    for id in [
        "nvidia.nvml",
        "gpus.visible",
        "gpus.persistence",
        "gpus.pcie_link",
        "gpus.throttle",
        "gpus.ecc",
        "gpus.memory_repair",
    ] {
        assert_eq!(status(&doc, id), "pass", "{id}: {}", detail(&doc, id));
    }
    assert_eq!(
        detail(&doc, "gpus.visible"),
        "2 GPUs: 2 × NVIDIA H100 80GB HBM3"
    );
    // The simulator has no kernel module behind it; this machine's truth decides.
    let module = status(&doc, "nvidia.kernel_module");
    if host_has_module() {
        assert_eq!(module, "pass");
    } else {
        // NVML answers, so a module must be loaded somewhere: the files are taken as hidden.
        assert_eq!(module, "warn");
        assert!(detail(&doc, "nvidia.kernel_module").contains("yet NVML answers"));
        assert_eq!(status(&doc, "nvidia.version_match"), "skip");
    }
}

#[test]
fn a_dead_docker_socket_is_unreachable_and_its_dependents_skip() {
    let doc = Run::nvml("gpus=1,frozen=10").json();
    // An engine configured with --docker-host that does not answer is a broken setup.
    assert_eq!(status(&doc, "docker.engine"), "fail");
    assert_eq!(doc["exit_code"], 2);
    assert!(
        detail(&doc, "docker.engine").contains("/nonexistent.sock"),
        "{}",
        detail(&doc, "docker.engine")
    );
    let engine = detail(&doc, "docker.engine");
    assert!(
        engine.contains("Docker is installed: ")
            && engine.contains("the engine is configured as unix:///nonexistent.sock"),
        "{engine}"
    );
    // The flag chose that address: changing it is the first fix, not starting a daemon.
    let engine_fix = fix(&doc, "docker.engine");
    assert!(
        engine_fix.starts_with("--docker-host points elsewhere (unix:///nonexistent.sock)"),
        "{engine_fix}"
    );
    for id in [
        "docker.gpu_runtime",
        "docker.default_runtime",
        "docker.disk_space",
    ] {
        assert_eq!(status(&doc, id), "skip", "{id}");
        assert!(
            detail(&doc, id).contains("not reachable"),
            "{id}: {}",
            detail(&doc, id)
        );
    }
}

#[test]
fn nvml_init_failures_fail_the_nvml_check_with_their_fix() {
    for (knob, words) in [
        ("init=driver-not-loaded", "modprobe nvidia"),
        ("init=rm-mismatch", "Reboot"),
        ("init=no-permission", "/dev/nvidia"),
    ] {
        let doc = Run::nvml(knob).json();
        assert_eq!(status(&doc, "nvidia.nvml"), "fail", "{knob}");
        assert!(
            fix(&doc, "nvidia.nvml").contains(words),
            "{knob}: {}",
            fix(&doc, "nvidia.nvml")
        );
        assert_eq!(status(&doc, "gpus.visible"), "skip", "{knob}");
        assert_eq!(doc["exit_code"], 2, "{knob}");
    }
    let doc = Run::nvml("init=driver-not-loaded").json();
    if !host_has_module() {
        assert_eq!(status(&doc, "nvidia.kernel_module"), "fail");
    }
    let doc = Run::nvml("init=rm-mismatch").json();
    assert_eq!(status(&doc, "nvidia.version_match"), "fail");
    assert!(fix(&doc, "nvidia.version_match").contains("rmmod"));
}

#[test]
fn links_throttling_ecc_and_row_remapping_are_flagged_on_the_right_gpu() {
    let doc = Run::nvml("gpus=4,frozen=40,downgrade=1,throttle=2:thermal,ecc=3:5:1,remap=0:failed")
        .json();
    assert_eq!(status(&doc, "gpus.pcie_link"), "warn");
    assert!(
        detail(&doc, "gpus.pcie_link").starts_with("GPU 1 runs"),
        "{}",
        detail(&doc, "gpus.pcie_link")
    );
    assert_eq!(status(&doc, "gpus.throttle"), "warn");
    assert!(
        detail(&doc, "gpus.throttle")
            .contains("GPU 2 (hardware slowdown, hardware thermal slowdown"),
        "{}",
        detail(&doc, "gpus.throttle")
    );
    assert_eq!(status(&doc, "gpus.ecc"), "fail");
    assert!(
        detail(&doc, "gpus.ecc").contains("GPU 3: 1 uncorrected, 5 corrected"),
        "{}",
        detail(&doc, "gpus.ecc")
    );
    assert_eq!(status(&doc, "gpus.memory_repair"), "fail");
    let repair = detail(&doc, "gpus.memory_repair");
    assert!(
        repair.contains("GPU 0: a row remapping failed")
            && repair.contains("GPU 3: a row remap waits"),
        "{repair}"
    );
    assert!(fix(&doc, "gpus.memory_repair").contains("RMA"));
    assert_eq!(doc["exit_code"], 2);
}

#[test]
fn a_pending_row_remap_alone_warns() {
    let doc = Run::nvml("gpus=2,frozen=10,remap=1:pending").json();
    assert_eq!(status(&doc, "gpus.memory_repair"), "warn");
    assert!(fix(&doc, "gpus.memory_repair").contains("nvidia-smi -r -i"));
    assert_eq!(status(&doc, "gpus.ecc"), "pass");
}

#[test]
fn an_nvcc_newer_than_an_old_driver_warns() {
    let bin = tempfile::tempdir().expect("tempdir");
    let nvcc = bin.path().join("nvcc");
    std::fs::write(
        &nvcc,
        "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n",
    )
    .expect("write nvcc");
    std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let doc = Run::nvml("gpus=1,frozen=10,driver=470.57.02,cuda=11040")
        .env("PATH", path)
        .json();
    assert_eq!(doc["driver_version"], "470.57.02");
    assert_eq!(status(&doc, "cuda.nvcc"), "warn");
    let d = detail(&doc, "cuda.nvcc");
    assert!(
        d.contains("nvcc 12.4")
            && d.contains(&nvcc.display().to_string())
            && d.contains("CUDA 11.4"),
        "{d}"
    );
    assert!(
        fix(&doc, "cuda.nvcc").contains("550.54.14"),
        "{}",
        fix(&doc, "cuda.nvcc")
    );
    // The compatibility engine says what an old driver costs in framework images.
    assert_eq!(status(&doc, "compat.frameworks"), "warn");
    let f = fix(&doc, "compat.frameworks");
    assert!(
        f.contains("TensorFlow 2.20.0 needs driver 555.42.02 or newer"),
        "{f}"
    );
    assert!(
        f.contains("tensorflow/tensorflow:2.11.0-gpu runs here"),
        "{f}"
    );
    // A current driver, but Docker (at a dead socket) could not be asked whether containers
    // get GPUs: whether the images run is unknown, as `gpudeck compat` says, not a PASS.
    let current = Run::nvml("gpus=1,frozen=10").json();
    assert_eq!(status(&current, "compat.frameworks"), "skip");
    let d = detail(&current, "compat.frameworks");
    assert!(
        d.contains("is new enough for the newest images") && d.contains("unknown"),
        "{d}"
    );
}

#[test]
fn cuda_visible_devices_naming_a_missing_gpu_is_flagged() {
    let doc = Run::nvml("gpus=2,frozen=10")
        .env("CUDA_VISIBLE_DEVICES", "7")
        .json();
    assert_eq!(status(&doc, "cuda.visible_devices"), "fail");
    assert!(detail(&doc, "cuda.visible_devices").contains("7 is not one of the 2 GPUs"));
    assert!(fix(&doc, "cuda.visible_devices").contains("unset CUDA_VISIBLE_DEVICES"));
    let doc = Run::nvml("gpus=2,frozen=10")
        .env("CUDA_VISIBLE_DEVICES", "1")
        .json();
    assert_eq!(status(&doc, "cuda.visible_devices"), "warn");
    let doc = Run::nvml("gpus=2,frozen=10").json();
    assert_eq!(status(&doc, "cuda.visible_devices"), "pass");
}

#[test]
fn the_demo_is_diagnosed_as_a_demo() {
    let mut run = Run::nvml("gpus=3,frozen=20");
    run.args = vec!["--demo".into(), "--docker-host".into(), DEAD_DOCKER.into()];
    let doc = run.json();
    assert_eq!(doc["source"], "demo");
    assert_eq!(status(&doc, "nvidia.kernel_module"), "skip");
    assert_eq!(status(&doc, "nvidia.nvml"), "pass");
    assert_eq!(
        detail(&doc, "gpus.visible"),
        "3 GPUs: 3 × NVIDIA H100 80GB HBM3"
    );
    let (text, code) = run.text();
    // The headline (wrapped to the width, 80 here: one or more lines before the first blank).
    let headline = text.split("\n\n").next().unwrap_or_default();
    assert!(
        headline.starts_with("gpudeck doctor") && headline.ends_with("DEMO: simulated GPUs"),
        "{text}"
    );
    assert_eq!(code, doc["exit_code"].as_i64().map_or(-1, |c| c as i32));
}

#[test]
fn text_is_plain_when_piped_and_ends_with_the_summary() {
    let (text, code) = Run::nvml("gpus=2,frozen=10,throttle=0:thermal").text();
    assert!(
        !text.contains('\x1b'),
        "no colour codes into a pipe: {text:?}"
    );
    assert!(
        text.contains("\nGPUs\n") && text.contains("\nDocker\n") && text.contains("\nCUDA\n"),
        "{text}"
    );
    assert!(text.contains("  WARN  Clocks (throttling)"), "{text}");
    assert!(text.contains("        fix: Improve cooling"), "{text}");
    let last = text.lines().last().unwrap_or("");
    assert!(
        last.contains(" passed, ") && last.contains(" failed, ") && last.ends_with(" skipped"),
        "{last}"
    );
    assert!(code >= 1, "a warning at least: {code}");
}

/// `docker info --format TEMPLATE` from the CLI, to compare the doctor with.
fn docker_info(template: &str) -> String {
    let out = Command::new("docker")
        .args(["info", "--format", template])
        .output()
        .expect("docker runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn on_path(program: &str) -> bool {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .any(|d| !d.is_empty() && Path::new(d).join(program).is_file())
}

#[test]
fn the_real_engine_is_diagnosed() {
    if !support::docker::engine_or_skip("the_real_engine_is_diagnosed") {
        return;
    }
    let mut run = Run::nvml("gpus=2,frozen=10");
    run.args.truncate(2);
    let doc = run.json();
    assert_eq!(
        status(&doc, "docker.engine"),
        "pass",
        "{}",
        detail(&doc, "docker.engine")
    );
    assert!(detail(&doc, "docker.engine").contains(&docker_info("{{.ServerVersion}}")));
    let root = docker_info("{{.DockerRootDir}}");
    assert!(
        detail(&doc, "docker.disk_space").contains(&format!("free under {root}")),
        "{}",
        detail(&doc, "docker.disk_space")
    );
    assert_eq!(status(&doc, "docker.default_runtime"), "pass");
    let runtimes = docker_info("{{json .Runtimes}}");
    if runtimes.contains("\"nvidia\"") || on_path("nvidia-container-runtime-hook") {
        assert_eq!(status(&doc, "docker.gpu_runtime"), "pass");
    } else {
        // This machine's engine has runc only: the truth is that GPU containers cannot start.
        assert_eq!(
            status(&doc, "docker.gpu_runtime"),
            "fail",
            "{}",
            detail(&doc, "docker.gpu_runtime")
        );
        assert!(fix(&doc, "docker.gpu_runtime")
            .contains("sudo nvidia-ctk runtime configure --runtime=docker"));
        assert_eq!(doc["exit_code"], 2);
        // And no framework image runs here, as `gpudeck compat` says of every image.
        assert_eq!(
            status(&doc, "compat.frameworks"),
            "fail",
            "{}",
            detail(&doc, "compat.frameworks")
        );
        assert!(
            detail(&doc, "compat.frameworks").starts_with("no image will run here"),
            "{}",
            detail(&doc, "compat.frameworks")
        );
        let dirs = Dirs::new();
        let compat = dirs
            .gpudeck("gpus=2,frozen=10")
            .args(["--nvml-lib", &sim_library().display().to_string()])
            .args(["compat", "--json"])
            .output()
            .expect("gpudeck runs");
        let verdicts: Value = serde_json::from_str(&stdout(&compat))
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&compat)));
        let images = verdicts["images"].as_array().expect("images");
        assert!(!images.is_empty());
        for a in images {
            assert_eq!(a["verdict"]["level"], "wont_run", "{a}");
        }
    }
}

#[test]
fn docker_host_at_a_missing_socket_is_the_doctors_first_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = format!("unix://{}/docker.sock", dir.path().display());
    let mut run = Run::nvml("gpus=1,frozen=10").env("DOCKER_HOST", host.clone());
    // No --docker-host: the environment chooses the engine.
    run.args.truncate(2);
    let doc = run.json();
    assert_eq!(status(&doc, "docker.engine"), "fail");
    let engine_fix = fix(&doc, "docker.engine");
    assert!(
        engine_fix.starts_with(&format!("DOCKER_HOST points elsewhere ({host})")),
        "{engine_fix}"
    );
    assert!(engine_fix.contains("unset DOCKER_HOST"), "{engine_fix}");
}

#[test]
fn no_gpus_doctor_and_gpus_name_the_loaded_driver() {
    let doc = Run::nvml("gpus=0").json();
    assert_eq!(doc["driver_version"], "580.65.06");
    assert_eq!(status(&doc, "gpus.visible"), "fail");
    assert_eq!(status(&doc, "nvidia.nvml"), "pass");
    assert!(
        detail(&doc, "nvidia.nvml").contains("driver 580.65.06"),
        "{}",
        detail(&doc, "nvidia.nvml")
    );
    let dirs = Dirs::new();
    let out = dirs
        .gpudeck("gpus=0")
        .args(["gpus", "--nvml-lib", &sim_library().display().to_string()])
        .output()
        .expect("gpudeck runs");
    let text = stdout(&out);
    assert!(text.contains("driver 580.65.06"), "{text}");
    assert!(!text.contains("driver n/a"), "{text}");
    assert!(
        text.contains("the NVIDIA driver 580.65.06 is loaded but reports no GPUs"),
        "{text}"
    );
}
