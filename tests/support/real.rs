//! The real parts tests drive (the Docker Engine, Slurm, Prometheus, the services' programs,
//! root...): one place decides what a test does when one is missing, and keeps count.
//!
//! A test asks with [`require`] (or a helper built on it, such as `docker::engine_or_skip`). When
//! the part is there, the test runs against it. When it is missing, under `CI=true` (CI sets it,
//! and `.ci/run` exports it) the test fails with what is missing and how to install it: a CI run
//! cannot pass by skipping. Outside CI the test is skipped with one line saying the same.
//! `GPUDECK_TEST_MAY_SKIP=slurm,torch` lets the named parts be missing under CI too, for a CI
//! machine that cannot have them (the keys are [`Part::key`]).
//!
//! Every answer is appended to `target/real-parts.log` (`part<TAB>ran|skipped<TAB>test`), and
//! `.ci/run` prints how many tests ran against each part and how many were skipped.

use std::io::Write;
use std::path::PathBuf;

/// A real part of the machine some tests need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// A reachable Docker Engine.
    Docker,
    /// A Docker Engine without the NVIDIA runtime (the tests that GPUs are refused there).
    EngineWithoutNvidia,
    /// Debian's docker-registry, started on loopback.
    Registry,
    /// Prometheus and promtool.
    Prometheus,
    /// Slurm's programs and a one-node cluster started by `tests/support/slurm-up.sh`.
    Slurm,
    /// Slurm's accounting: slurmdbd with MariaDB.
    SlurmAccounting,
    /// JupyterLab in the test venv.
    JupyterLab,
    /// TensorBoard in the test venv.
    TensorBoard,
    /// NVIDIA's Triton Inference Server (nvidia-pytriton's tritonserver) in the test venv.
    Triton,
    /// PyTorch's torchrun in the test venv.
    Torch,
    /// Root: processes of a second user, a tmpfs mount.
    Root,
    /// tmux (and bash) to drive a terminal.
    Tmux,
    /// The openssl command.
    OpenSsl,
}

/// The programs `.ci/run` installs in `target/test-venv`, for the messages.
const VENV_INSTALL: &str =
    "bash .ci/run installs it in target/test-venv; by hand: python3 -m venv \
    target/test-venv && target/test-venv/bin/pip install jupyterlab==4.6.6 tensorboard==2.21.0 \
    nvidia-pytriton==0.7.0 torch==2.15.0";

impl Part {
    pub const ALL: [Part; 13] = [
        Part::Docker,
        Part::EngineWithoutNvidia,
        Part::Registry,
        Part::Prometheus,
        Part::Slurm,
        Part::SlurmAccounting,
        Part::JupyterLab,
        Part::TensorBoard,
        Part::Triton,
        Part::Torch,
        Part::Root,
        Part::Tmux,
        Part::OpenSsl,
    ];

    /// The part's name in the log, the summary and `GPUDECK_TEST_MAY_SKIP`.
    pub fn key(self) -> &'static str {
        match self {
            Part::Docker => "docker",
            Part::EngineWithoutNvidia => "docker-no-nvidia",
            Part::Registry => "registry",
            Part::Prometheus => "prometheus",
            Part::Slurm => "slurm",
            Part::SlurmAccounting => "slurm-accounting",
            Part::JupyterLab => "jupyterlab",
            Part::TensorBoard => "tensorboard",
            Part::Triton => "triton",
            Part::Torch => "torch",
            Part::Root => "root",
            Part::Tmux => "tmux",
            Part::OpenSsl => "openssl",
        }
    }

    /// What the part is, for a sentence.
    pub fn what(self) -> &'static str {
        match self {
            Part::Docker => "a Docker Engine",
            Part::EngineWithoutNvidia => "a Docker Engine without the NVIDIA runtime",
            Part::Registry => "Debian's docker-registry",
            Part::Prometheus => "Prometheus",
            Part::Slurm => "a Slurm cluster",
            Part::SlurmAccounting => "Slurm accounting (slurmdbd and MariaDB)",
            Part::JupyterLab => "JupyterLab",
            Part::TensorBoard => "TensorBoard",
            Part::Triton => "Triton Inference Server",
            Part::Torch => "PyTorch's torchrun",
            Part::Root => "root",
            Part::Tmux => "tmux and bash",
            Part::OpenSsl => "the openssl command",
        }
    }

    /// How to get it.
    pub fn how(self) -> &'static str {
        match self {
            Part::Docker => {
                "start the Docker Engine (bash .ci/run starts it) or name one in DOCKER_HOST"
            }
            Part::EngineWithoutNvidia => {
                "run these tests against an engine without nvidia-container-runtime: they check \
                 that GPUs are refused where the NVIDIA Container Toolkit is missing"
            }
            Part::Registry => "apt-get install docker-registry (bash .ci/run does)",
            Part::Prometheus => {
                "apt-get install --no-install-recommends prometheus (bash .ci/run does)"
            }
            Part::Slurm => {
                "apt-get install munge slurmctld slurmd slurm-client (bash .ci/run does) and run \
                 the tests as root, which tests/support/slurm-up.sh needs to start the cluster"
            }
            Part::SlurmAccounting => {
                "apt-get install slurmdbd mariadb-server (bash .ci/run does) and run the tests as \
                 root"
            }
            Part::JupyterLab | Part::TensorBoard | Part::Triton | Part::Torch => VENV_INSTALL,
            Part::Root => "run the tests as root (sudo -E cargo test)",
            Part::Tmux => "apt-get install tmux bash (bash .ci/run does)",
            Part::OpenSsl => "apt-get install openssl",
        }
    }
}

/// What becomes of a test whose part is missing.
#[derive(Debug, PartialEq, Eq)]
pub enum Missing {
    Skip,
    Fail,
}

/// Whether a missing `part` fails or skips, given `CI` and `GPUDECK_TEST_MAY_SKIP` as read from
/// the environment.
pub fn when_missing(part: Part, ci: Option<&str>, may_skip: Option<&str>) -> Missing {
    let allowed = may_skip.is_some_and(|list| {
        list.split(',')
            .any(|key| key.trim() == part.key() || key.trim() == "all")
    });
    if ci == Some("true") && !allowed {
        Missing::Fail
    } else {
        Missing::Skip
    }
}

/// What `test` is told when `part` is missing (`why`).
pub fn message(part: Part, test: &str, why: &str, missing: &Missing) -> String {
    let said = format!(
        "{test} needs {}, which is missing here: {why}. To run it: {}.",
        part.what(),
        part.how()
    );
    match missing {
        Missing::Skip => format!("SKIPPED: {said}"),
        Missing::Fail => format!(
            "{said} Under CI=true a missing real part fails the test instead of skipping it; \
             GPUDECK_TEST_MAY_SKIP={} lets it skip.",
            part.key()
        ),
    }
}

/// The value when `found` holds one (the test runs against `part`). When it holds why `part` is
/// missing: None after one line saying the test is skipped, or, under `CI=true`, a panic saying
/// what is missing and how to install it. `test` names the test in the messages.
pub fn require<T>(part: Part, test: &str, found: Result<T, String>) -> Option<T> {
    match found {
        Ok(value) => {
            record(part, "ran");
            Some(value)
        }
        Err(why) => {
            record(part, "skipped");
            let missing = when_missing(
                part,
                std::env::var("CI").ok().as_deref(),
                std::env::var("GPUDECK_TEST_MAY_SKIP").ok().as_deref(),
            );
            let said = message(part, test, &why, &missing);
            match missing {
                Missing::Skip => {
                    eprintln!("{said}");
                    None
                }
                Missing::Fail => panic!("{said}"),
            }
        }
    }
}

/// As [`require`] for a part that a helper cannot do without (it hands the test the part itself,
/// so there is no test left to skip): counted, and a missing one fails the test everywhere.
pub fn must<T>(part: Part, test: &str, found: Result<T, String>) -> T {
    match found {
        Ok(value) => {
            record(part, "ran");
            value
        }
        Err(why) => {
            record(part, "skipped");
            panic!(
                "{test} needs {}, which is missing here: {why}. To run it: {}.",
                part.what(),
                part.how()
            )
        }
    }
}

/// As [`require`] for a condition: true when `have` holds, else `why` decides as there.
pub fn have(part: Part, test: &str, have: bool, why: &str) -> bool {
    require(part, test, if have { Ok(()) } else { Err(why.to_string()) }).is_some()
}

/// The running test's name, as the harness gives it (the name of its thread), for helpers that
/// are not handed one.
pub fn current_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string()
}

/// Where the answers are counted.
pub fn log_path() -> PathBuf {
    super::target_dir().join("real-parts.log")
}

/// Appends `part<TAB>outcome<TAB>test` for the running test (the harness names its thread after
/// it). One short write with O_APPEND, so lines of tests running side by side do not mix.
fn record(part: Part, outcome: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("unnamed");
    let line = format!("{}\t{outcome}\t{test}\n", part.key());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path())
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "could not count a real part in {}: {e}",
            log_path().display()
        );
    }
}

#[test]
fn a_missing_part_fails_under_ci_unless_listed_and_skips_elsewhere() {
    use Missing::{Fail, Skip};
    assert_eq!(when_missing(Part::Docker, Some("true"), None), Fail);
    assert_eq!(when_missing(Part::Docker, None, None), Skip);
    assert_eq!(when_missing(Part::Docker, Some("false"), None), Skip);
    assert_eq!(
        when_missing(Part::Slurm, Some("true"), Some("torch, slurm")),
        Skip
    );
    // `slurm` does not let `slurm-accounting` skip: keys are matched whole.
    assert_eq!(
        when_missing(Part::SlurmAccounting, Some("true"), Some("slurm")),
        Fail
    );
    assert_eq!(when_missing(Part::Torch, Some("true"), Some("all")), Skip);
    let fail = message(Part::Prometheus, "t", "no /usr/bin/promtool", &Fail);
    let words = super::words(&fail);
    assert!(words.contains("t needs Prometheus, which is missing here: no /usr/bin/promtool."));
    assert!(words.contains("apt-get install --no-install-recommends prometheus"));
    assert!(words.contains("GPUDECK_TEST_MAY_SKIP=prometheus"));
    let skip = message(Part::Prometheus, "t", "no /usr/bin/promtool", &Skip);
    assert!(
        skip.starts_with("SKIPPED: t needs Prometheus, which is missing here"),
        "{skip}"
    );
    assert!(!skip.contains("CI=true"), "{skip}");
    let keys: std::collections::HashSet<_> = Part::ALL.iter().map(|p| p.key()).collect();
    assert_eq!(keys.len(), Part::ALL.len(), "every part has its own key");
}
