//! Container runs on the real engine with a busybox test image: every line and the exit code of a
//! CPU-only run, what a kept container carries, per-gpu containers sharing rank 0's IPC with a
//! failing rank stopping the others, and the refusals: a missing image, an unreachable engine,
//! GPUs without the NVIDIA Container Toolkit (pre-flight's refusal and the engine's own). The
//! life of a container run (stop, SIGTERM, a killed supervisor) is in runs_container_lifecycle.rs.

use crate::support;

use std::path::Path;

use serde_json::Value;

use gpudeck::runs::RunStore;
use gpudeck::shell::GpuPlumbing;
use support::docker::{docker, engine_or_skip};
use support::docker_cleanup::Cleanup;
use support::run_containers::{
    containers_of, inspect, per_gpu_run_dir, start_in, workdir, RunContainers,
};
use support::runs::{log, output, record, run_dir, start, wait_state};
use support::{stderr, stdout, Dirs};

#[test]
fn a_cpu_only_container_run_keeps_every_line_and_its_exit_code_and_is_removed() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_cpu_only_container_run_keeps_every_line_and_its_exit_code_and_is_removed")
    {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    let script = "for i in $(seq 1 2000); do echo out $i; echo err $i >&2; done; exit 3";
    let id = start_in(&dirs, &image, &work, &["--gpus", "none"], script);
    let _containers = RunContainers(id.clone());
    let rec = wait_state(&dirs, &id, "failed");
    assert_eq!(rec["exit_code"], 3, "{rec}");
    assert_eq!(rec["ranks"][0]["exit_code"], 3);
    assert_eq!(rec["first_failed_rank"], 0);
    let want = |stream: &str| -> String { (1..=2000).map(|i| format!("{stream} {i}\n")).collect() };
    assert_eq!(log(&dirs, &id, 0, "stdout"), want("out"));
    assert_eq!(log(&dirs, &id, 0, "stderr"), want("err"));

    assert_eq!(rec["image"], image.as_str());
    assert_eq!(rec["workdir"], work.as_str());
    let container = &rec["container"];
    let image_id = docker(&["image", "inspect", "--format", "{{.Id}}", &image]);
    assert_eq!(container["image_id"], image_id.as_str(), "{container}");
    assert_eq!(container["gpu_request"], "none");
    assert_eq!(container["network"], "bridge");
    assert_eq!(
        container["containers"][0]["name"],
        format!("gpudeck-{id}-rank0")
    );
    let created = container["containers"][0]["id"].as_str().expect("an id");
    assert_eq!(created.len(), 64, "{created}");
    assert!(containers_of(&id).is_empty(), "removed at the end");
    assert!(run_dir(&dirs, &id).join("containers.json").exists());
}

#[test]
fn a_kept_container_carries_the_run_labels_env_workspace_and_isolation() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_kept_container_carries_the_run_labels_env_workspace_and_isolation") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (work_dir, work) = workdir();
    let spec = work_dir.path().join("run.toml");
    let toml = format!(
        "name = \"kept\"\ncommand = [\"sh\", \"-c\", \"id -u; pwd; echo $GPUDECK_RUN_ID; echo made > made\"]\n\
         image = \"{image}\"\ngpus = \"none\"\nkeep = true\nworkdir = \".\"\n[env]\nSEED = \"7\"\n"
    );
    std::fs::write(&spec, toml).unwrap();
    let dirs = Dirs::new();
    let (id, _) = start(&dirs, &[spec.to_str().unwrap()]);
    let _containers = RunContainers(id.clone());
    let rec = wait_state(&dirs, &id, "succeeded");
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    assert_eq!(
        log(&dirs, &id, 0, "stdout"),
        format!("{uid}\n/workspace\n{id}\n")
    );
    assert_eq!(
        std::fs::read_to_string(work_dir.path().join("made")).unwrap(),
        "made\n"
    );
    assert_eq!(rec["container"]["keep"], true);

    let kept = containers_of(&id);
    assert_eq!(kept.len(), 1, "keep = true keeps it");
    assert_eq!(
        Some(&kept[0]),
        rec["container"]["containers"][0]["id"]
            .as_str()
            .map(String::from)
            .as_ref()
    );
    let seen = inspect(&kept[0]);
    let config = &seen["Config"];
    assert_eq!(config["Labels"]["gpudeck.run"], id.as_str());
    assert_eq!(config["Labels"]["gpudeck.rank"], "0");
    assert!(
        config["Labels"].get("gpudeck.shell").is_none(),
        "not a shell"
    );
    // SAFETY: getgid cannot fail.
    let gid = unsafe { libc::getgid() };
    assert_eq!(config["User"], format!("{uid}:{gid}"));
    assert_eq!(config["WorkingDir"], "/workspace");
    let env: Vec<&str> = config["Env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(env.contains(&"SEED=7"), "{env:?}");
    assert!(env.contains(&"NVIDIA_VISIBLE_DEVICES=void"), "{env:?}");
    assert!(
        env.contains(&format!("GPUDECK_RUN_ID={id}").as_str()),
        "{env:?}"
    );
    let host = &seen["HostConfig"];
    assert_eq!(host["Init"], true);
    assert_eq!(host["Privileged"], false);
    assert_eq!(host["SecurityOpt"][0], "no-new-privileges");
    assert!(host["CapDrop"].as_array().is_some_and(|c| !c.is_empty()));
    assert_eq!(host["NetworkMode"], "bridge");
    assert_eq!(seen["Mounts"][0]["Source"], work.as_str());
    assert_eq!(seen["Mounts"][0]["Destination"], "/workspace");
}

#[test]
fn gpus_on_an_engine_without_the_toolkit_are_refused_before_anything_starts() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("gpus_on_an_engine_without_the_toolkit_are_refused_before_anything_starts") {
        return;
    }
    if !support::docker::no_nvidia_runtime_or_skip(
        "gpus_on_an_engine_without_the_toolkit_are_refused_before_anything_starts",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    let args = [
        "run",
        "--gpus",
        "0,1",
        "--launcher",
        "per-gpu",
        "--image",
        &image,
        "--workdir",
        &work,
        "--",
        "true",
    ];
    let out = output(&dirs, &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = crate::support::words(&stderr(&out));
    assert!(
        text.contains(&crate::support::words(gpudeck::shell::TOOLKIT_MESSAGE)),
        "{text}"
    );
    assert!(text.contains("--gpus none"), "{text}");
    assert!(stdout(&output(&dirs, &["runs"])).starts_with("No runs yet"));
}

#[test]
fn the_engines_own_gpu_refusal_is_recorded_with_the_toolkit_message() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("the_engines_own_gpu_refusal_is_recorded_with_the_toolkit_message") {
        return;
    }
    if !support::docker::no_nvidia_runtime_or_skip(
        "the_engines_own_gpu_refusal_is_recorded_with_the_toolkit_message",
    ) {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    // What `gpudeck run` writes for a per-gpu run on two GPUs, had pre-flight let it through.
    let dir = per_gpu_run_dir(
        &dirs,
        &image,
        Path::new(&work),
        GpuPlumbing::DeviceRequest,
        "true",
    );
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let _containers = RunContainers(id.clone());
    let supervised = dirs
        .gpudeck("gpus=4")
        .args(["__supervise"])
        .arg(&dir)
        .output()
        .expect("the supervisor runs");
    assert!(supervised.status.success(), "{}", stderr(&supervised));
    assert!(
        stderr(&supervised).contains("rank 0 could not be started"),
        "{}",
        stderr(&supervised)
    );
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "failed", "{rec}");
    assert_eq!(rec["exit_code"], 126);
    assert_eq!(rec["first_failed_rank"], 0);
    let error = rec["error"].as_str().expect("why");
    assert!(error.contains(gpudeck::shell::TOOLKIT_MESSAGE), "{error}");
    assert!(error.contains("could not select device driver"), "{error}");
    assert!(containers_of(&id).is_empty(), "nothing left behind");
}

#[test]
fn per_gpu_containers_share_rank_0s_ipc_and_a_failing_rank_stops_the_others() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("per_gpu_containers_share_rank_0s_ipc_and_a_failing_rank_stops_the_others") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    // GPUs left out (this engine has none): the containers are the per-gpu ones otherwise.
    let script = "if [ \"$RANK\" = 0 ]; then echo from-rank-0 > /dev/shm/note; \
                  while true; do sleep 0.1; done; fi; \
                  while [ ! -e /dev/shm/note ]; do sleep 0.05; done; cat /dev/shm/note; \
                  echo $RANK/$WORLD_SIZE@$MASTER_ADDR:$MASTER_PORT; exit 5";
    let dir = per_gpu_run_dir(&dirs, &image, Path::new(&work), GpuPlumbing::None, script);
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let _containers = RunContainers(id.clone());
    let supervised = dirs
        .gpudeck("gpus=4")
        .arg("__supervise")
        .arg(&dir)
        .output()
        .expect("the supervisor runs");
    assert!(supervised.status.success(), "{}", stderr(&supervised));
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "failed", "{rec}\n{}", stderr(&supervised));
    assert_eq!(rec["first_failed_rank"], 1);
    assert_eq!(rec["exit_code"], 5);
    assert_eq!(rec["ranks"][1]["exit_code"], 5);
    // Rank 0 was stopped once rank 1 failed: SIGINT through its init.
    assert_eq!(rec["ranks"][0]["exit_code"], 130, "{rec}");
    assert_eq!(
        log(&dirs, &id, 1, "stdout"),
        "from-rank-0\n1/2@127.0.0.1:29500\n",
        "rank 1 saw rank 0's /dev/shm and its place"
    );
    let ids = &rec["container"]["containers"];
    assert!(
        ids[0]["id"].is_string() && ids[1]["id"].is_string(),
        "{ids}"
    );
    assert!(containers_of(&id).is_empty(), "both removed");
}

#[test]
fn per_gpu_ranks_meet_on_rank_0s_own_network_not_the_hosts() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("per_gpu_ranks_meet_on_rank_0s_own_network_not_the_hosts") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    // Rank 0 listens on MASTER_PORT; rank 1 dials 127.0.0.1 (MASTER_ADDR) until its line has
    // arrived. Both look at the shared workspace: under load busybox's `nc` may take a
    // connection and end before the line is read, so one connection is not proof of delivery.
    let script = "if [ \"$RANK\" = 0 ]; then i=0; until [ -s /workspace/got ]; do \
                  nc -l -p $MASTER_PORT > /workspace/got; \
                  i=$((i+1)); [ $i -gt 20 ] && exit 8; done; exit 0; fi; \
                  i=0; until [ -s /workspace/got ]; do \
                  echo hello-from-$RANK | nc $MASTER_ADDR $MASTER_PORT; \
                  i=$((i+1)); [ $i -gt 200 ] && exit 9; sleep 0.05; done";
    let dir = per_gpu_run_dir(&dirs, &image, Path::new(&work), GpuPlumbing::None, script);
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let _containers = RunContainers(id.clone());
    // Kept, so that their network modes can be read after the run.
    let path = dir.join("run.json");
    let mut rec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    rec["container"]["keep"] = Value::Bool(true);
    std::fs::write(&path, rec.to_string()).unwrap();
    let supervised = dirs
        .gpudeck("gpus=4")
        .arg("__supervise")
        .arg(&dir)
        .output()
        .expect("the supervisor runs");
    assert!(supervised.status.success(), "{}", stderr(&supervised));
    let rec = record(&dirs, &id);
    assert_eq!(rec["state"], "succeeded", "{rec}\n{}", stderr(&supervised));
    let got = std::fs::read_to_string(Path::new(&work).join("got")).unwrap();
    assert_eq!(got, "hello-from-1\n", "rank 1 reached rank 0 on 127.0.0.1");
    let rank0 = format!("gpudeck-{id}-rank0");
    let mode = |name: &str| inspect(name)["HostConfig"]["NetworkMode"].clone();
    assert_eq!(mode(&rank0), "bridge");
    // The engine writes the joined container by id.
    let rank0_id = inspect(&rank0)["Id"].as_str().unwrap().to_string();
    assert_eq!(
        mode(&format!("gpudeck-{id}-rank1")),
        format!("container:{rank0_id}")
    );
}

#[test]
fn a_missing_image_is_refused_with_the_pull_command() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_missing_image_is_refused_with_the_pull_command") {
        return;
    }
    let (_work, work) = workdir();
    let dirs = Dirs::new();
    let image = "gpudeck-test-nowhere:1";
    let out = output(
        &dirs,
        &[
            "run",
            "--gpus",
            "none",
            "--image",
            image,
            "--workdir",
            &work,
            "--",
            "true",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("the image {image} is not on this machine")),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains(&format!("gpudeck pull {image}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_work_dir_holding_a_socket_is_refused_before_any_run_or_container() {
    let _gate = crate::support::gate::gate(module_path!());
    if !engine_or_skip("a_work_dir_holding_a_socket_is_refused_before_any_run_or_container") {
        return;
    }
    let mut cleanup = Cleanup::default();
    let image = cleanup.image(&[]);
    let (work_dir, work) = workdir();
    let deep = work_dir.path().join("outputs/ipc");
    std::fs::create_dir_all(&deep).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(deep.join("forward")).unwrap();
    let dirs = Dirs::new();
    let args = [
        "run",
        "--gpus",
        "none",
        "--image",
        &image,
        "--workdir",
        &work,
        "--",
        "true",
    ];
    let out = output(&dirs, &args);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("holds the Unix socket") && said.contains("outputs/ipc/forward"),
        "{said}"
    );
    let (runs, _) = RunStore::new(&dirs.root.path().join("data")).list();
    assert!(
        runs.is_empty(),
        "no run was recorded, so no container was made"
    );
}

#[test]
fn an_unreachable_engine_is_refused_with_what_to_do() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let image = "gpudeck-test-nowhere:1";
    let unreachable = output(
        &dirs,
        &[
            "--docker-host",
            "unix:///nonexistent/docker.sock",
            "run",
            "--gpus",
            "none",
            "--image",
            image,
            "--",
            "true",
        ],
    );
    assert_eq!(unreachable.status.code(), Some(1));
    let text = stderr(&unreachable);
    assert!(
        text.contains("Docker is not reachable at unix:///nonexistent/docker.sock"),
        "{text}"
    );
    assert!(text.contains("sudo systemctl start docker"), "{text}");
}
