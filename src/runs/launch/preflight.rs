//! Pre-flight for a run: the GPUs exist (and which are busy, claimed by a live run or shell
//! included), the command and work dir exist. Each refusal says why and what to do; busy GPUs
//! only warn. A service is one process, and one in a container publishes its ports. A container
//! run's engine and image are checked by `container::check`.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::claims::{owner_of, Claim};
use crate::gpu::report::{GpuEntry, GpuReport};
use crate::launch_check::{check_readable, find_gpus, LaunchError, Workload};
use crate::runs::error::RunError;
use crate::runs::record::RunGpu;
use crate::runs::spec::{GpuSelection, Launcher, RunSpec};
use crate::units;

use super::torchrun::{probe, torchrun_args, FileKind};

/// Above this share of its memory in use a GPU counts as taken by someone else.
const BUSY_MEMORY_SHARE: f64 = 0.5;

/// What pre-flight needs to know about the machine, gathered by the caller.
#[derive(Debug, Clone, Copy)]
pub struct PreflightInput<'a> {
    pub spec: &'a RunSpec,
    pub gpus: &'a GpuReport,
    /// The directory relative work dirs are taken from.
    pub cwd: &'a Path,
    /// The PATH the ranks will search (the launching environment's).
    pub path: Option<&'a OsString>,
    /// GPUs live runs and shells hold: busy even before their processes show in NVML.
    pub claimed: &'a [Claim],
}

/// What pre-flight decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub gpus: Vec<RunGpu>,
    pub workdir: PathBuf,
    pub warnings: Vec<String>,
    /// What the launcher is handed: the spec's command, or for torchrun the arguments after
    /// its own options (`train.py`, `-m pkg`, `--no-python ./run.sh`; see `torchrun.rs`).
    pub command: Vec<String>,
    /// The processes the launcher starts (torchrun: its workers).
    pub workers: usize,
}

/// Checks a spec against the machine; refuses what cannot work, warns about what may not.
pub fn preflight(input: &PreflightInput<'_>) -> Result<Checked, RunError> {
    let spec = input.spec;
    if spec.command.is_empty() {
        return Err(RunError::NoCommand);
    }
    check_service(spec)?;
    let workdir = check_workdir(spec.workdir.as_deref(), input.cwd)?;
    let busy = Busy {
        report: input.gpus,
        claimed: input.claimed,
    };
    let gpus = resolve_gpus(&spec.gpus, &busy)?;
    let workers = worker_count(spec, gpus.len())?;
    check_not_lost(&gpus, input.gpus)?;
    check_memory(spec, &gpus, input.gpus)?;
    let command = check_command(spec, &workdir, input.path)?;
    let warnings = busy_warnings(&gpus, &busy);
    Ok(Checked {
        gpus,
        workdir,
        warnings,
        command,
        workers,
    })
}

/// How many processes the launcher starts: one (`single`), one per GPU, or the CPU workers a
/// torchrun or per-gpu run without GPUs asks for (`workers`).
fn worker_count(spec: &RunSpec, gpus: usize) -> Result<usize, RunError> {
    let bad = |workers: usize, why: String| Err(RunError::BadWorkers { workers, why });
    match (spec.workers, spec.launcher) {
        (Some(0), _) => bad(0, "a run needs at least one".into()),
        (Some(n), Launcher::Single) => bad(n, "the single launcher starts one process".into()),
        (Some(n), _) if spec.image.is_some() => bad(
            n,
            "CPU workers run on the host only; a container run has one worker per GPU".into(),
        ),
        (Some(n), _) if gpus == 0 || n == gpus => Ok(n),
        (Some(n), _) => bad(
            n,
            format!(
                "{} {} given, and there is one worker per GPU",
                units::plural(gpus, "GPU"),
                if gpus == 1 { "is" } else { "are" }
            ),
        ),
        (None, Launcher::Single) => Ok(1),
        (None, launcher) if gpus == 0 => Err(RunError::NeedsGpus {
            launcher: launcher.as_str(),
        }),
        (None, _) => Ok(gpus),
    }
}

/// A service is one process (the single launcher); in a container its ports are published on the
/// host's 127.0.0.1, which Docker cannot do from the host's network.
fn check_service(spec: &RunSpec) -> Result<(), RunError> {
    let Some(service) = &spec.service else {
        return Ok(());
    };
    let kind = service.kind.as_str();
    if spec.launcher != Launcher::Single {
        return Err(RunError::ServiceLauncher {
            kind,
            launcher: spec.launcher.as_str(),
        });
    }
    if spec.image.is_some() && spec.host_network {
        return Err(RunError::ServiceOnHostNetwork { kind });
    }
    let bad = |why: String| Err(RunError::ServicePorts { kind, why });
    if service.ports.is_empty() {
        return bad("it has none".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for port in &service.ports {
        if port.port == 0 {
            return bad(format!("`{}` has port 0", port.name));
        }
        if !seen.insert(port.port) {
            return bad(format!("port {} is given twice", port.port));
        }
    }
    Ok(())
}

fn check_workdir(workdir: Option<&Path>, cwd: &Path) -> Result<PathBuf, RunError> {
    let path = workdir.map_or_else(|| cwd.to_path_buf(), |w| cwd.join(w));
    match std::fs::metadata(&path) {
        Ok(m) if m.is_dir() => Ok(path),
        Ok(_) => Err(RunError::BadWorkdir {
            path,
            why: "it is not a directory".into(),
        }),
        Err(e) => Err(RunError::BadWorkdir {
            path,
            why: e.to_string(),
        }),
    }
}

/// The program must exist. On the host: on PATH (the spec's, else the launching one), or the file
/// a path names; torchrun for the torchrun launcher, and a command torchrun can run. In a
/// container only a relative path can be checked here, since the work dir is the container's
/// /workspace; PATH is the image's. Returns the command the launcher is handed.
fn check_command(
    spec: &RunSpec,
    workdir: &Path,
    path: Option<&OsString>,
) -> Result<Vec<String>, RunError> {
    let program = &spec.command[0];
    let torchrun = |kind: &dyn Fn(&str) -> FileKind| {
        torchrun_args(&spec.command, kind).map_err(|r| RunError::TorchrunCommand {
            why: r.why,
            instead: r.instead,
        })
    };
    if spec.image.is_some() {
        if program.contains('/') && !program.starts_with('/') {
            find_program(program, workdir, None)?;
        }
        return match spec.launcher {
            Launcher::Torchrun => torchrun(&|_| FileKind::Unknown),
            _ => Ok(spec.command.clone()),
        };
    }
    let path = spec
        .env
        .get("PATH")
        .map(OsString::from)
        .or_else(|| path.cloned());
    if spec.launcher == Launcher::Torchrun {
        find_program("torchrun", workdir, path.as_ref())?;
        return torchrun(&|name| probe(name, workdir, path.as_deref()));
    }
    find_program(program, workdir, path.as_ref())?;
    Ok(spec.command.clone())
}

/// The file `program` names: a path (relative to the work dir), or the first match on PATH.
fn find_program(
    program: &str,
    workdir: &Path,
    path: Option<&OsString>,
) -> Result<PathBuf, RunError> {
    let not_found = |why: String| RunError::CommandNotFound {
        program: program.to_string(),
        why,
    };
    if program.contains('/') {
        let file = workdir.join(program);
        return match std::fs::metadata(&file) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(file),
            Ok(m) if m.is_file() => Err(not_found(format!(
                "{} is not executable (chmod +x it, or run it through its interpreter)",
                file.display()
            ))),
            Ok(_) => Err(not_found(format!("{} is not a file", file.display()))),
            Err(e) => Err(not_found(format!("{}: {e}", file.display()))),
        };
    }
    let Some(path) = path else {
        return Err(not_found("PATH is not set".into()));
    };
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|file| {
            std::fs::metadata(file)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| not_found("it is on no directory of PATH".into()))
}

/// The GPUs as NVML reads them, and those claimed by live runs and shells.
#[derive(Clone, Copy)]
struct Busy<'a> {
    report: &'a GpuReport,
    claimed: &'a [Claim],
}

/// The GPUs a selection means on this machine, in the order given.
fn resolve_gpus(wanted: &GpuSelection, busy: &Busy<'_>) -> Result<Vec<RunGpu>, RunError> {
    let report = busy.report;
    if *wanted == GpuSelection::None {
        return Ok(Vec::new());
    }
    check_readable(report, Workload::Run)?;
    if report.gpus.is_empty() {
        let none = LaunchError::gpus_unreadable(Workload::Run, "the driver reports no GPU");
        return Err(none.into());
    }
    let chosen: Vec<&GpuEntry> = match wanted {
        GpuSelection::None => Vec::new(),
        GpuSelection::All => report.gpus.iter().collect(),
        GpuSelection::Count(n) => pick_free(busy, *n)?,
        GpuSelection::Indices(indices) => find_gpus(
            indices,
            report,
            |g, i| g.info.index == *i,
            |i| i.to_string(),
        )?,
        GpuSelection::Uuids(uuids) => find_gpus(
            uuids,
            report,
            |g, u| g.info.uuid.eq_ignore_ascii_case(u),
            Clone::clone,
        )?,
    };
    Ok(chosen
        .into_iter()
        .map(|g| RunGpu {
            index: g.info.index,
            uuid: g.info.uuid.clone(),
            name: g.info.name.clone(),
        })
        .collect())
}

/// No chosen GPU has fallen off the bus: it answers nothing, and a run on it would fail at its
/// first CUDA call.
fn check_not_lost(chosen: &[RunGpu], report: &GpuReport) -> Result<(), RunError> {
    let lost: Vec<String> = chosen
        .iter()
        .filter(|c| {
            report
                .gpus
                .iter()
                .any(|g| g.info.uuid == c.uuid && g.sample.lost)
        })
        .map(|c| c.index.to_string())
        .collect();
    if lost.is_empty() {
        return Ok(());
    }
    let healthy: Vec<String> = report
        .gpus
        .iter()
        .filter(|g| !g.sample.lost)
        .map(|g| g.info.index.to_string())
        .collect();
    Err(RunError::LostGpu {
        lost: lost.join(","),
        healthy: healthy.join(","),
    })
}

/// Every chosen GPU has the free memory the spec asks for (total less used, as NVML reads it).
fn check_memory(spec: &RunSpec, chosen: &[RunGpu], report: &GpuReport) -> Result<(), RunError> {
    let Some(text) = &spec.gpu_memory else {
        return Ok(());
    };
    let need = crate::shell::size::parse_size(text).map_err(|e| RunError::BadSpec {
        location: "gpu_memory".into(),
        reason: e.to_string(),
    })?;
    let free = |g: &GpuEntry| match (g.info.memory_total_bytes, g.sample.memory_used_bytes) {
        (Some(total), Some(used)) => Some(total.saturating_sub(used)),
        _ => None,
    };
    let short: Vec<String> = chosen
        .iter()
        .filter_map(|c| report.gpus.iter().find(|g| g.info.uuid == c.uuid))
        .filter(|g| free(g).is_some_and(|f| f < need))
        .map(|g| {
            let f = free(g).unwrap_or(0);
            format!("GPU {} has {} free", g.info.index, units::human_bytes(f))
        })
        .collect();
    if short.is_empty() {
        return Ok(());
    }
    let roomy: Vec<String> = report
        .gpus
        .iter()
        .filter(|g| free(g).is_some_and(|f| f >= need))
        .map(|g| g.info.index.to_string())
        .collect();
    Err(RunError::NotEnoughGpuMemory {
        need: units::human_bytes(need),
        short: short.join(", "),
        roomy: roomy.join(","),
    })
}

/// `n` GPUs nobody uses or claims, lowest index first.
fn pick_free<'r>(busy: &Busy<'r>, n: usize) -> Result<Vec<&'r GpuEntry>, RunError> {
    let report = busy.report;
    if n > report.gpus.len() {
        return Err(RunError::TooFewGpus {
            wanted: n,
            present: present_gpus(report),
            count: report.gpus.len(),
        });
    }
    let free: Vec<&GpuEntry> = report.gpus.iter().filter(|g| !busy.is(g)).collect();
    if free.len() >= n {
        return Ok(free.into_iter().take(n).collect());
    }
    let taken: Vec<String> = report
        .gpus
        .iter()
        .filter(|g| busy.is(g))
        .map(|g| format!("GPU {} ({})", g.info.index, busy.reason(g)))
        .collect();
    Err(RunError::NotEnoughFreeGpus {
        wanted: n,
        free: format!(
            "only {} of {} {} free; busy: {}",
            free.len(),
            report.gpus.len(),
            if free.len() == 1 { "is" } else { "are" },
            taken.join("; ")
        ),
    })
}

impl Busy<'_> {
    fn is(&self, g: &GpuEntry) -> bool {
        is_busy(g) || owner_of(self.claimed, &g.info.uuid).is_some()
    }

    /// Who holds a GPU: the live run or shell that claimed it, else what NVML shows.
    fn reason(&self, g: &GpuEntry) -> String {
        match owner_of(self.claimed, &g.info.uuid) {
            Some(owner) => format!("claimed by {owner}"),
            None => busy_reason(g),
        }
    }
}

fn is_busy(g: &GpuEntry) -> bool {
    g.sample.lost || !g.sample.processes.is_empty() || memory_busy(g)
}

fn memory_busy(gpu: &GpuEntry) -> bool {
    match (gpu.sample.memory_used_bytes, gpu.info.memory_total_bytes) {
        (Some(used), Some(total)) if total > 0 => used as f64 / total as f64 > BUSY_MEMORY_SHARE,
        _ => false,
    }
}

/// Who holds a GPU: its processes, else how much memory is in use.
fn busy_reason(g: &GpuEntry) -> String {
    if g.sample.lost {
        return "fallen off the bus".into();
    }
    if !g.sample.processes.is_empty() {
        let procs: Vec<String> = g
            .sample
            .processes
            .iter()
            .map(|p| {
                let user = p
                    .user
                    .as_deref()
                    .map(|u| format!(", {u}"))
                    .unwrap_or_default();
                format!(
                    "{} (pid {}{user})",
                    p.command.as_deref().unwrap_or("?"),
                    p.pid
                )
            })
            .collect();
        return format!("in use by {}", procs.join(", "));
    }
    format!(
        "{} of memory in use",
        units::memory_pair(g.sample.memory_used_bytes, g.info.memory_total_bytes)
    )
}

fn busy_warnings(chosen: &[RunGpu], busy: &Busy<'_>) -> Vec<String> {
    chosen
        .iter()
        .filter_map(|c| busy.report.gpus.iter().find(|g| g.info.uuid == c.uuid))
        .filter(|g| busy.is(g))
        .map(|g| format!("GPU {} is {}", g.info.index, busy.reason(g)))
        .collect()
}

/// "GPUs 0-3 (4 × NVIDIA A100)": index and name, never the UUIDs.
fn present_gpus(report: &GpuReport) -> String {
    crate::gpu::report::brief_list(report)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::doctor::testkit::{gpu, healthy, GIB};
    use crate::gpu::{GpuProcess, ProcessKind};

    /// Four GPUs of 80 GiB with 1 GiB in use; GPU 0 runs alice's training, GPU 3 has most of its
    /// memory taken.
    fn report() -> GpuReport {
        let mut report = healthy().gpu;
        report.gpus = (0..4).map(gpu).collect();
        report.gpu_count = 4;
        for g in &mut report.gpus {
            g.sample.memory_used_bytes = Some(GIB);
        }
        report.gpus[0].sample.processes.push(GpuProcess {
            gpu_index: 0,
            pid: 4242,
            kind: ProcessKind::Compute,
            used_memory_bytes: Some(10 * GIB),
            user: Some("alice".into()),
            command: Some("python train.py".into()),
            container: None,
            identity: None,
            gpu_util: None,
            cpu_pct: None,
            host_memory_bytes: None,
        });
        report.gpus[3].sample.memory_used_bytes = Some(70 * GIB);
        report
    }

    /// A directory with an executable `tool` and a plain `notes.txt`, used as PATH and work dir.
    struct Scratch {
        dir: tempfile::TempDir,
    }

    impl Scratch {
        fn new() -> Scratch {
            let dir = tempfile::tempdir().unwrap();
            let tool = dir.path().join("tool");
            std::fs::write(&tool, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::write(dir.path().join("notes.txt"), "").unwrap();
            Scratch { dir }
        }

        fn check(&self, spec: &RunSpec) -> Result<Checked, RunError> {
            let path = OsString::from(self.dir.path());
            preflight(&PreflightInput {
                spec,
                gpus: &report(),
                cwd: self.dir.path(),
                path: Some(&path),
                claimed: &[],
            })
        }
    }

    fn spec(gpus: &str, command: &[&str]) -> RunSpec {
        RunSpec {
            gpus: gpus.parse().unwrap(),
            command: command.iter().map(|s| s.to_string()).collect(),
            ..RunSpec::default()
        }
    }

    #[test]
    fn indices_and_uuids_resolve_in_the_order_given() {
        let s = Scratch::new();
        let checked = s.check(&spec("2,1", &["tool"])).unwrap();
        let indices: Vec<u32> = checked.gpus.iter().map(|g| g.index).collect();
        assert_eq!(indices, [2, 1]);
        assert_eq!(checked.gpus[0].uuid, gpu(2).info.uuid);
        assert!(checked.warnings.is_empty(), "{:?}", checked.warnings);
        assert_eq!(checked.workdir, s.dir.path());

        let by_uuid = s
            .check(&spec(&gpu(1).info.uuid.to_lowercase(), &["tool"]))
            .unwrap();
        assert_eq!(by_uuid.gpus[0].index, 1);
    }

    #[test]
    fn a_missing_gpu_names_the_gpus_there_are() {
        let s = Scratch::new();
        let err = s.check(&spec("1,7", &["tool"])).unwrap_err();
        let text = err.to_string();
        assert_eq!(
            text,
            "there is no GPU 7: this machine has GPUs 0-3 (4 × NVIDIA H100 80GB HBM3)"
        );
        let err = s.check(&spec("GPU-nope", &["tool"])).unwrap_err();
        assert!(
            err.to_string().starts_with("there is no GPU GPU-nope"),
            "{err}"
        );
    }

    #[test]
    fn busy_gpus_are_warnings_naming_their_processes() {
        let s = Scratch::new();
        let checked = s.check(&spec("0,3", &["tool"])).unwrap();
        assert_eq!(checked.warnings.len(), 2, "{:?}", checked.warnings);
        assert!(
            checked.warnings[0].contains("GPU 0 is in use by python train.py (pid 4242, alice)"),
            "{:?}",
            checked.warnings
        );
        assert!(
            checked.warnings[1].contains("GPU 3"),
            "{:?}",
            checked.warnings
        );
    }

    #[test]
    fn a_count_picks_free_gpus_or_says_which_are_busy() {
        let s = Scratch::new();
        let checked = s.check(&spec("count:2", &["tool"])).unwrap();
        let indices: Vec<u32> = checked.gpus.iter().map(|g| g.index).collect();
        assert_eq!(indices, [1, 2]);
        let err = s.check(&spec("count:3", &["tool"])).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("3 free GPUs wanted, but only 2 of 4 are free"),
            "{text}"
        );
        assert!(text.contains("GPU 0 (in use by python train.py"), "{text}");
    }

    #[test]
    fn a_missing_or_unusable_command_is_refused() {
        let s = Scratch::new();
        let err = s.check(&spec("1", &["no-such-tool"])).unwrap_err();
        assert!(matches!(err, RunError::CommandNotFound { .. }), "{err}");
        assert!(err.to_string().contains("on no directory of PATH"), "{err}");
        let err = s.check(&spec("1", &["./notes.txt"])).unwrap_err();
        assert!(err.to_string().contains("is not executable"), "{err}");
        assert!(s.check(&spec("1", &["./tool"])).is_ok());
        let mut torch = spec("1", &["train.py"]);
        torch.launcher = Launcher::Torchrun;
        let err = s.check(&torch).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the command `torchrun` was not found"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_workdir_and_no_command_are_refused() {
        let s = Scratch::new();
        let mut missing = spec("1", &["tool"]);
        missing.workdir = Some("nowhere".into());
        assert!(matches!(
            s.check(&missing),
            Err(RunError::BadWorkdir { .. })
        ));
        assert!(matches!(s.check(&spec("1", &[])), Err(RunError::NoCommand)));
    }

    #[test]
    fn in_a_container_only_a_relative_program_is_looked_for_here() {
        let s = Scratch::new();
        let in_image = |command: &[&str], launcher: Launcher| {
            let mut run = spec("1", command);
            run.image = Some("nvcr.io/nvidia/pytorch:24.05-py3".into());
            run.launcher = launcher;
            s.check(&run)
        };
        // PATH is the image's: a bare name or an absolute path can only be found when it runs.
        assert!(in_image(&["python", "train.py"], Launcher::Single).is_ok());
        assert!(in_image(&["/opt/conda/bin/python"], Launcher::Single).is_ok());
        assert!(
            in_image(&["train.py"], Launcher::Torchrun).is_ok(),
            "torchrun is the image's"
        );
        // A relative path is in the work dir, which is the container's /workspace.
        assert!(in_image(&["./tool"], Launcher::Single).is_ok());
        let err = in_image(&["./missing.sh"], Launcher::Single).unwrap_err();
        assert!(matches!(err, RunError::CommandNotFound { .. }), "{err}");
    }

    #[test]
    fn no_gpus_needs_no_driver_and_only_the_single_launcher() {
        let s = Scratch::new();
        let failed = crate::gpu::report::failed("h".into(), &crate::gpu::GpuError::DriverNotLoaded);
        let path = OsString::from(s.dir.path());
        let check = |run: &RunSpec| {
            preflight(&PreflightInput {
                spec: run,
                gpus: &failed,
                cwd: s.dir.path(),
                path: Some(&path),
                claimed: &[],
            })
        };
        let checked = check(&spec("none", &["tool"])).unwrap();
        assert!(checked.gpus.is_empty());
        assert!(checked.warnings.is_empty());
        for launcher in [Launcher::Torchrun, Launcher::PerGpu] {
            let mut run = spec("none", &["tool"]);
            run.launcher = launcher;
            let err = check(&run).unwrap_err();
            assert!(matches!(err, RunError::NeedsGpus { .. }), "{err}");
            assert!(err.to_string().contains(launcher.as_str()), "{err}");
            assert!(err.fix().contains("--workers 2"), "{err}");
            // With a worker count they are CPU workers (torchrun itself is not on this PATH).
            run.workers = Some(2);
            if launcher == Launcher::PerGpu {
                assert_eq!(check(&run).unwrap().workers, 2);
            }
        }
    }

    #[test]
    fn a_service_is_one_process_and_in_a_container_never_on_the_hosts_network() {
        use crate::runs::spec::{ServiceKind, ServicePort, ServiceSpec};
        let s = Scratch::new();
        let service = |launcher: Launcher, image: bool, host_network: bool| RunSpec {
            launcher,
            image: image.then(|| "quay.io/jupyter/base-notebook".to_string()),
            host_network,
            service: Some(ServiceSpec {
                kind: ServiceKind::Notebook,
                ports: vec![ServicePort {
                    name: "http".into(),
                    port: 8888,
                }],
                idle_stop_secs: None,
            }),
            ..spec("1", &["tool"])
        };
        assert!(s.check(&service(Launcher::Single, true, false)).is_ok());
        assert!(s.check(&service(Launcher::Single, false, false)).is_ok());
        for launcher in [Launcher::Torchrun, Launcher::PerGpu] {
            for image in [false, true] {
                let err = s.check(&service(launcher, image, false)).unwrap_err();
                assert!(matches!(err, RunError::ServiceLauncher { .. }), "{err:?}");
                assert_eq!(
                    err.to_string(),
                    format!(
                        "a notebook service is one process, so the {} launcher cannot start it",
                        launcher.as_str()
                    )
                );
                assert!(err.fix().contains("launcher = \"single\""), "{}", err.fix());
            }
        }
        let with_ports = |ports: &[u16]| RunSpec {
            service: Some(ServiceSpec {
                kind: ServiceKind::Notebook,
                ports: ports
                    .iter()
                    .map(|&port| ServicePort {
                        name: "http".into(),
                        port,
                    })
                    .collect(),
                idle_stop_secs: None,
            }),
            ..service(Launcher::Single, false, false)
        };
        for (ports, why) in [
            (&[][..], "it has none"),
            (&[0][..], "`http` has port 0"),
            (&[8888, 8888][..], "port 8888 is given twice"),
        ] {
            let err = s.check(&with_ports(ports)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("the notebook service's ports are not usable: {why}")
            );
            assert!(err.is_usage());
        }
        let err = s.check(&service(Launcher::Single, true, true)).unwrap_err();
        assert!(
            matches!(err, RunError::ServiceOnHostNetwork { .. }),
            "{err:?}"
        );
        assert!(
            err.to_string().starts_with(
                "a notebook service in a container cannot be on the host's network \
                 (host_network = true)"
            ),
            "{err}"
        );
        assert!(err.fix().contains("127.0.0.1"), "{}", err.fix());
        // On the host it listens on 127.0.0.1 itself: host_network means nothing there.
        assert!(s.check(&service(Launcher::Single, false, true)).is_ok());
        // A run that is not a service keeps every launcher and the host's network.
        let mut run = spec("1", &["tool"]);
        run.launcher = Launcher::PerGpu;
        run.image = Some("busybox".into());
        run.host_network = true;
        assert!(s.check(&run).is_ok());
    }

    #[test]
    fn unreadable_gpus_are_refused_with_the_reason() {
        let s = Scratch::new();
        let failed = crate::gpu::report::failed("h".into(), &crate::gpu::GpuError::DriverNotLoaded);
        let path = OsString::from(s.dir.path());
        let err = preflight(&PreflightInput {
            spec: &spec("0", &["tool"]),
            gpus: &failed,
            cwd: s.dir.path(),
            path: Some(&path),
            claimed: &[],
        })
        .unwrap_err();
        assert!(
            matches!(err, RunError::Launch(LaunchError::GpusUnreadable { .. })),
            "{err}"
        );
        assert!(err.fix().contains("gpudeck doctor"));
    }

    #[test]
    fn gpus_without_the_free_memory_asked_for_are_refused_naming_ones_that_have_it() {
        let scratch = Scratch::new();
        let mut wanted = spec("2,3", &["tool"]);
        wanted.gpu_memory = Some("40GiB".into());
        let err = scratch.check(&wanted).unwrap_err();
        let RunError::NotEnoughGpuMemory { short, roomy, .. } = &err else {
            panic!("{err:?}");
        };
        assert!(
            short.starts_with("GPU 3 has ") && !short.contains("GPU 2"),
            "{short}"
        );
        assert_eq!(roomy, "0,1,2");
        assert!(
            err.to_string().contains("40.0GiB free on each GPU"),
            "{err}"
        );
        assert!(err.fix().contains("--gpus 0,1,2"), "{}", err.fix());
        wanted.gpus = "1,2".parse().unwrap();
        assert!(scratch.check(&wanted).is_ok());
        wanted.gpu_memory = Some("lots".into());
        let err = scratch.check(&wanted).unwrap_err();
        assert!(matches!(err, RunError::BadSpec { .. }), "{err:?}");
    }

    /// GPUs live runs and shells claim count as busy before their processes show: `count:N` takes
    /// others, an explicit one warns naming the owner, and a refusal says who holds what.
    #[test]
    fn claimed_gpus_are_busy_and_their_owners_are_named() {
        use crate::claims::{Claim, Owner};
        let s = Scratch::new();
        let path = OsString::from(s.dir.path());
        let gpus = report();
        let uuid = |i: usize| gpus.gpus[i].info.uuid.clone();
        let claimed = [
            Claim {
                owner: Owner::Run {
                    id: "20261125-093000-bert-0001".into(),
                    dir: "/runs/x".into(),
                },
                gpus: vec![uuid(1)],
                holder: None,
                created_ms: 0,
            },
            Claim {
                owner: Owner::Shell {
                    name: "dev".into(),
                    container: None,
                },
                gpus: vec![uuid(2).to_lowercase()],
                holder: None,
                created_ms: 0,
            },
        ];
        let check = |run: &RunSpec| {
            preflight(&PreflightInput {
                spec: run,
                gpus: &gpus,
                cwd: s.dir.path(),
                path: Some(&path),
                claimed: &claimed,
            })
        };
        // GPU 1 and 2 look free to NVML, but are claimed: GPU 0 and 3 are busy anyway.
        let err = check(&spec("count:1", &["tool"])).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, RunError::NotEnoughFreeGpus { .. }), "{err:?}");
        assert!(
            text.contains("GPU 1 (claimed by run 20261125-093000-bert-0001)"),
            "{text}"
        );
        assert!(text.contains("GPU 2 (claimed by shell dev)"), "{text}");
        let checked = check(&spec("2", &["tool"])).unwrap();
        assert_eq!(checked.warnings, ["GPU 2 is claimed by shell dev"]);
        // Without the claims, `count:1` gets GPU 1.
        let free = s.check(&spec("count:1", &["tool"])).unwrap();
        assert_eq!(free.gpus[0].index, 1);
    }

    #[test]
    fn more_gpus_than_the_machine_has_says_how_many_it_has() {
        let s = Scratch::new();
        let err = s.check(&spec("count:9", &["tool"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "9 GPUs wanted, but this machine has only 4: GPUs 0-3 (4 × NVIDIA H100 80GB HBM3)"
        );
        assert_eq!(
            err.fix(),
            "Ask for at most count:4, or `--gpus all` for every GPU."
        );
    }
}
