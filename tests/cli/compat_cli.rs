//! `gpudeck compat` end to end: the binary on simulated drivers, images from the catalog and from the real engine.

use crate::support;

use serde_json::Value;
use support::docker::engine_or_skip;
use support::docker_cleanup::Cleanup;
use support::fake_engine::FakeEngine;
use support::registry::{Registry, TestImage};
use support::{stderr, stdout, Dirs};

const NO_DOCKER: &str = "unix:///nonexistent/gpudeck-test.sock";

fn compat(sim: &str, docker_host: &str, args: &[&str]) -> std::process::Output {
    let dirs = Dirs::new();
    dirs.gpudeck(sim)
        .args(["--demo", "--docker-host", docker_host, "compat"])
        .args(args)
        .output()
        .expect("gpudeck runs")
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn an_old_driver_is_told_which_driver_to_install_and_which_image_runs_instead() {
    let out = compat(
        "profile=a100-pcie,gpus=2,driver=470.57.02,cuda=11040",
        NO_DOCKER,
        &["tensorflow/tensorflow:2.17.0-gpu"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}{}", stderr(&out));
    assert!(text.contains("Host "), "{text}");
    assert!(
        text.contains("driver 470.57.02, CUDA 11.4, 2x NVIDIA A100 80GB PCIe (sm_80)"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("WILL NOT RUN")
                && l.contains(" tensorflow/tensorflow:2.17.0-gpu ")),
        "{text}"
    );
    assert!(
        text.contains("install NVIDIA driver 545.23.06 or newer (CUDA 12.3)"),
        "{text}"
    );
    assert!(
        text.contains("or use tensorflow/tensorflow:2.11.0-gpu, which runs here"),
        "{text}"
    );
    assert!(
        text.contains("Best TensorFlow image here: tensorflow/tensorflow:2.11.0-gpu"),
        "{text}"
    );
    assert!(
        stderr(&out).contains("Docker"),
        "the unreachable engine is mentioned: {}",
        stderr(&out)
    );
}

#[test]
fn json_has_a_stable_schema_with_both_verdicts() {
    let out = compat(
        "",
        NO_DOCKER,
        &["--json", "pytorch/pytorch:2.11.0-cuda13.0-cudnn9-runtime"],
    );
    let doc = json(&out);
    assert_eq!(doc["schema"], "gpudeck.compat/v1");
    assert_eq!(doc["host"]["driver"], "580.65.06");
    assert_eq!(doc["host"]["cuda"], "13.0");
    assert_eq!(doc["host"]["runtime"], "unknown");
    let images = doc["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "only the named image: {doc}");
    assert_eq!(images[0]["image"]["source"], "catalog");
    assert_eq!(images[0]["verdict"]["image_level"], "runs");
    assert_eq!(
        images[0]["verdict"]["level"], "unknown",
        "Docker could not be asked"
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(doc["tables"].as_array().unwrap().len() >= 3);
    assert_eq!(doc["best"][0]["framework"], "tensorflow");
}

#[test]
fn an_unknown_image_is_an_error_that_says_what_to_do() {
    // No network here: the registry cannot be asked and the catalog does not know it.
    let out = compat("", NO_DOCKER, &["example.invalid/nobody/nothing:1.0"]);
    assert_eq!(out.status.code(), Some(3));
    // The message is wrapped to the terminal's width (80 here): its words are read as one text.
    let err = stderr(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(err.contains("cannot be reached"), "{err}");
    assert!(
        err.contains("gpudeck's catalog does not list it either"),
        "{err}"
    );
    assert!(
        err.contains("gpudeck pull example.invalid/nobody/nothing:1.0"),
        "{err}"
    );
    let out = compat("", NO_DOCKER, &["Not A Reference"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("is not an image reference"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_driver_that_cannot_be_read_gives_unknown_verdicts_with_the_reason() {
    let out = compat(
        "init=driver-not-loaded",
        NO_DOCKER,
        &["--json", "tensorflow/tensorflow:2.17.0-gpu"],
    );
    let doc = json(&out);
    assert_eq!(doc["images"][0]["verdict"]["image_level"], "unknown");
    let reasons = doc["images"][0]["verdict"]["reasons"].to_string();
    assert!(
        reasons.contains("NVIDIA kernel driver not loaded"),
        "{reasons}"
    );
}

#[test]
fn a_local_image_is_judged_from_its_own_env_on_the_real_engine() {
    if !engine_or_skip("a_local_image_is_judged_from_its_own_env_on_the_real_engine") {
        return;
    }
    let mut cleanup = Cleanup::default();
    // The env of nvidia/cuda:13.0.2 as captured on a GPU host (quoted: it holds spaces).
    let env: Vec<String> = include_str!("../fixtures/h100-host/image_env_cuda13")
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(key, value)| format!("{key}=\"{value}\""))
        .collect();
    let env: Vec<&str> = env.iter().map(String::as_str).collect();
    let tag = cleanup.image(&env);
    let host =
        std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into());
    // On a 12.8 driver of the 570 branch, an H100 runs it through forward compatibility.
    let out = compat("driver=570.172.08,cuda=12080", &host, &["--json", &tag]);
    let doc = json(&out);
    let image = &doc["images"][0];
    assert_eq!(image["image"]["source"], "local", "{doc}");
    assert_eq!(image["image"]["reference"], tag.as_str());
    assert_eq!(image["verdict"]["image_level"], "compat");
    // This engine has no NVIDIA runtime: that is said, for every image.
    assert_eq!(doc["host"]["runtime"], "missing");
    assert_eq!(image["verdict"]["level"], "wont_run");
    assert_eq!(out.status.code(), Some(2));
    // The 560 branch is not among the image's forward-compatibility branches.
    let out = compat("driver=560.35.03,cuda=12060", &host, &[&tag]);
    // The reason is wrapped to the terminal's width (80 here): its words are read as one text.
    let words = stdout(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains("requires CUDA 13.0 (NVIDIA_REQUIRE_CUDA)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_image_not_pulled_is_judged_from_its_config_in_the_registry() {
    if !engine_or_skip("an_image_not_pulled_is_judged_from_its_config_in_the_registry") {
        return;
    }
    let registry = Registry::start();
    let image = TestImage::build(
        "compat-remote",
        &["CUDA_VERSION=12.8.1", r#"NVIDIA_REQUIRE_CUDA="cuda>=12.8""#],
        &[1],
    );
    let reference = registry.push_and_forget(&image, "lab/trainer:cuda12.8");
    // A 12.4 driver: NVIDIA_REQUIRE_CUDA refuses it, and the fix names the driver.
    let out = compat(
        "driver=550.54.14,cuda=12040",
        NO_DOCKER,
        &["--json", &reference],
    );
    let doc = json(&out);
    let judged = &doc["images"][0];
    assert_eq!(judged["image"]["source"], "registry", "{doc}");
    assert_eq!(judged["image"]["cuda"], "12.8.1");
    assert!(
        judged["image"]["download_bytes"].as_u64().unwrap() > 500_000,
        "{doc}"
    );
    assert_eq!(judged["verdict"]["image_level"], "wont_run");
    assert!(
        judged["verdict"]["reasons"].to_string().contains("570.26"),
        "{doc}"
    );
    assert!(
        support::registry::image_id(&reference).is_none(),
        "judging an image must not pull it"
    );
    // An unknown tag is the registry's answer, not a guess.
    let missing = reference.replace("cuda12.8", "cuda99");
    let out = compat("", NO_DOCKER, &[&missing]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("cuda12.8"),
        "the existing tags are suggested: {}",
        stderr(&out)
    );
}

/// The line that starts an image's entry in the text report.
fn verdict_line<'a>(text: &'a str, image: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(&format!(" {image}  [")))
        .unwrap_or_else(|| panic!("no line for {image}: {text}"))
}

#[test]
fn an_image_that_runs_exits_0_when_the_engine_can_give_gpus() {
    let engine = FakeEngine::start(&["nvidia", "runc"]);
    let out = compat("", &engine.host(), &["tensorflow/tensorflow:2.15.0-gpu"]);
    let text = stdout(&out);
    assert!(
        verdict_line(&text, "tensorflow/tensorflow:2.15.0-gpu").starts_with("RUNS "),
        "{text}"
    );
    assert!(
        text.contains("container GPUs: Docker has the NVIDIA runtime"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let out = compat(
        "",
        &engine.host(),
        &["--json", "tensorflow/tensorflow:2.15.0-gpu"],
    );
    let doc = json(&out);
    assert_eq!(doc["host"]["runtime"], "nvidia");
    assert_eq!(doc["images"][0]["verdict"]["level"], "runs", "{doc}");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn nemo_framework_images_are_judged_by_the_cuda_of_their_release() {
    // A CUDA 12.9 driver: NeMo Framework 25.09 (CUDA 12.9.1) runs, 26.04 (CUDA 13.1.1) does not.
    let engine = FakeEngine::start(&["nvidia", "runc"]);
    let sim = "driver=575.57.08,cuda=12090";
    let (old, new) = ("nvcr.io/nvidia/nemo:25.09", "nvcr.io/nvidia/nemo:26.04");
    let out = compat(sim, &engine.host(), &[old, new]);
    let text = stdout(&out);
    assert!(
        verdict_line(&text, old).starts_with("RUNS "),
        "{text}{}",
        stderr(&out)
    );
    assert!(verdict_line(&text, old).contains("[catalog, NeMo Framework 25.09]"));
    assert!(
        verdict_line(&text, new).starts_with("WILL NOT RUN "),
        "{text}"
    );
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("driver 575.57.08 supports CUDA 12.9; the image requires CUDA 13.1"),
        "{text}"
    );
    assert!(
        flat.contains("fix: install NVIDIA driver 590.44.01 or newer (CUDA 13.1)"),
        "{text}"
    );
    assert!(flat.contains(&format!("or use {old}, which")), "{text}");
    assert_eq!(out.status.code(), Some(2), "{text}{}", stderr(&out));

    let out = compat(sim, &engine.host(), &["--json", new]);
    let doc = json(&out);
    let image = &doc["images"][0]["image"];
    assert_eq!(image["source"], "catalog", "{doc}");
    assert_eq!(image["framework"], "nemo", "{doc}");
    assert_eq!(image["framework_version"], "26.04", "{doc}");
    assert_eq!(image["cuda"], "13.1.1", "{doc}");
    assert_eq!(doc["images"][0]["verdict"]["level"], "wont_run", "{doc}");
}

#[test]
fn without_the_nvidia_runtime_every_view_says_the_image_gets_no_gpu_and_exits_2() {
    let engine = FakeEngine::start(&["io.containerd.runc.v2", "runc"]);
    let out = compat("", &engine.host(), &["tensorflow/tensorflow:2.15.0-gpu"]);
    let text = stdout(&out);
    let line = verdict_line(&text, "tensorflow/tensorflow:2.15.0-gpu");
    assert!(line.starts_with("WILL NOT RUN "), "{text}");
    // The text wraps at the terminal's width: the sentences are read as one line of words.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("runs on this driver and these GPUs, but it will not get a GPU here"),
        "{text}"
    );
    assert!(
        flat.contains("For every image: Docker has no NVIDIA runtime and no NVIDIA CDI spec: no container can be given a GPU"),
        "{text}"
    );
    assert!(
        flat.contains("fix: install nvidia-container-toolkit and run `sudo nvidia-ctk runtime configure --runtime=docker`"),
        "{text}"
    );
    assert!(flat.contains("1 image: 1 will not run"), "{text}");
    // The best image is best for this driver; it is not said to run here.
    assert!(
        flat.contains(
            "(runs on this driver and these GPUs; no container gets a GPU here, see below)"
        ),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(2), "{text}{}", stderr(&out));
    let out = compat(
        "",
        &engine.host(),
        &["--json", "tensorflow/tensorflow:2.15.0-gpu"],
    );
    let doc = json(&out);
    assert_eq!(doc["host"]["runtime"], "missing");
    assert_eq!(doc["images"][0]["verdict"]["level"], "wont_run");
    assert_eq!(doc["images"][0]["verdict"]["image_level"], "runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn without_a_driver_every_verdict_is_unknown_and_exits_1() {
    let engine = FakeEngine::start(&["runc"]);
    let out = compat(
        "init=driver-not-loaded",
        &engine.host(),
        &[
            "tensorflow/tensorflow:2.15.0-gpu",
            "pytorch/pytorch:2.11.0-cuda13.0-cudnn9-runtime",
        ],
    );
    let text = stdout(&out);
    for image in [
        "tensorflow/tensorflow:2.15.0-gpu",
        "pytorch/pytorch:2.11.0-cuda13.0-cudnn9-runtime",
    ] {
        assert!(verdict_line(&text, image).starts_with("UNKNOWN "), "{text}");
    }
    assert!(text.contains("NVIDIA kernel driver not loaded"), "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    let out = compat(
        "init=driver-not-loaded",
        &engine.host(),
        &["--json", "tensorflow/tensorflow:2.15.0-gpu"],
    );
    assert_eq!(json(&out)["images"][0]["verdict"]["level"], "unknown");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn compat_help_lists_every_exit_code() {
    let out = Dirs::new()
        .gpudeck("")
        .args(["compat", "--help"])
        .output()
        .expect("gpudeck runs");
    let help = stdout(&out);
    for code in [
        "0 every image runs",
        "1 some verdict is unknown",
        "2 some image will not run",
        "3 a named image cannot be found",
        "4 gpudeck could not judge",
    ] {
        assert!(help.contains(code), "{code}: {help}");
    }
}

#[test]
fn an_image_known_only_by_its_tag_is_judged_by_the_cuda_the_tag_names() {
    // No network here: neither the registry nor the catalog knows these tags; the tag does.
    let torch = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime";
    let engine = FakeEngine::start(&["nvidia", "runc"]);
    let out = compat("driver=535.183.01,cuda=12020", &engine.host(), &[torch]);
    let text = stdout(&out);
    let line = verdict_line(&text, torch);
    assert!(
        line.starts_with("RUNS VIA COMPAT "),
        "{text}{}",
        stderr(&out)
    );
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "{torch} [tag, PyTorch 2.5.1, CUDA 12.4 inferred from the tag]"
        )),
        "{text}"
    );
    assert!(
        flat.contains("CUDA 12.4 is inferred from the tag (`cuda12.4`), not read from the image, which is neither pulled nor readable in its registry: this verdict is likely, not certain"),
        "{text}"
    );
    assert!(
        flat.contains("driver 535.183.01 supports CUDA 12.2, older than the 12.4 its tag names"),
        "{text}"
    );
    assert!(
        flat.contains("fix: install NVIDIA driver 550.54.14 or newer (CUDA 12.4)"),
        "{text}"
    );
    let err = stderr(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        err.contains(&format!(
            "judging {torch} by the CUDA 12.4 its tag names (`cuda12.4`)"
        )),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{text}{err}");

    // The JSON says the same: where the CUDA version came from, and the verdict's note.
    let out = compat(
        "driver=520.61.05,cuda=11080",
        &engine.host(),
        &["--json", torch],
    );
    let doc = json(&out);
    let judged = &doc["images"][0];
    assert_eq!(judged["image"]["source"], "tag", "{doc}");
    assert_eq!(judged["image"]["cuda"], "12.4", "{doc}");
    assert_eq!(judged["image"]["cuda_from_tag"], "cuda12.4", "{doc}");
    assert_eq!(judged["image"]["cudnn"], "9", "{doc}");
    assert_eq!(judged["image"]["framework"], "pytorch", "{doc}");
    assert_eq!(judged["verdict"]["level"], "wont_run", "{doc}");
    let reasons = judged["verdict"]["reasons"].to_string();
    assert!(reasons.contains("inferred from the tag"), "{reasons}");
    assert!(reasons.contains("550.54.14"), "{reasons}");
    assert_eq!(out.status.code(), Some(2));

    // `cu124` in any registry's tag, on a driver new enough.
    let lab = "example.invalid/lab/llm:v0.9-cu124";
    let out = compat(
        "driver=580.65.06,cuda=13000",
        &engine.host(),
        &["--json", lab],
    );
    let doc = json(&out);
    assert_eq!(doc["images"][0]["image"]["cuda_from_tag"], "cu124", "{doc}");
    assert_eq!(doc["images"][0]["verdict"]["level"], "runs", "{doc}");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_tag_that_only_holds_numbers_is_still_not_in_the_catalog() {
    for reference in [
        "example.invalid/pytorch/pytorch:2.4.0",
        "example.invalid/nvidia/cuda-python:12.4",
    ] {
        let out = compat("", NO_DOCKER, &[reference]);
        assert_eq!(out.status.code(), Some(3), "{reference}: {}", stdout(&out));
        let err = stderr(&out)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            err.contains("gpudeck's catalog does not list it either"),
            "{err}"
        );
    }
}
