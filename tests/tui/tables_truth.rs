//! Never a wrong number: every table (Processes, GPUs, Runs, Services, Containers, Images,
//! Compat, Doctor) drawn at every width from 40 to 200 columns with random values (PIDs past
//! pid_max, memory up to 143771MiB, long names and ids): every figure drawn is a true figure.
//!
//! Each drawn row is split into words (borders blanked). A word with a digit and no `…` must be
//! a whole word of one of the values that row was given, so `7MiB` drawn for 24678MiB or `0077`
//! for PID 4450077 fails. A word with `…` must be a visible cut of one of the row's text cells
//! (its start and `…`, or its start, `…` and its end), never of a figure. At 200 columns
//! nothing is cut.

use crate::support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use gpudeck::app::action::{Action, Tab};
use gpudeck::app::docker::{image_framework, short_image_id};
use gpudeck::app::state::AppState;
use gpudeck::docker::update::DockerUpdate;
use gpudeck::docker::{
    ContainerInfo, ContainerState, EngineInfo, GpuGrant, GpuSelection, ImageFacts, ImageInfo,
};
use gpudeck::doctor::{Check, DoctorReport, Family, Status, SCHEMA};
use gpudeck::gpu::collector::GpuUpdate;
use gpudeck::gpu::{GpuProcess, ProcessGpuUtil, ProcessKind};
use gpudeck::host::{ContainerRef, ContainerRuntime};
use gpudeck::runs::watch::{RunRow, RunsUpdate};
use gpudeck::runs::RunOwner;
use gpudeck::runs::{Launcher, RunGpu, RunState, ServiceKind};
use gpudeck::services::{Health, ServiceRow, ServicesUpdate};
use gpudeck::units;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};
use ratatui::buffer::Buffer;
use support::demo::demo_state;
use support::screen::{render, text};

const NOW: i64 = 1_800_000_000;
const HEIGHT: u16 = 60;
const CASES: u32 = 8;

/// What one row was given: its figures (never to be cut) and its text cells (cut with `…`).
#[derive(Debug, Default)]
struct Given {
    figures: Vec<String>,
    text: Vec<String>,
}

impl Given {
    fn figure(&mut self, v: impl Into<String>) -> &mut Self {
        self.figures.push(v.into());
        self
    }

    fn text(&mut self, v: impl Into<String>) -> &mut Self {
        self.text.push(v.into());
        self
    }
}

/// Whether the drawn word `a…b` is a visible cut of the text `value`: `a` starts one of its
/// words (or is empty: the cut fell between words) and `b`, if any, ends the same word, with
/// something left out between them.
fn cut_of(value: &str, a: &str, b: &str) -> bool {
    if a.is_empty() && b.is_empty() {
        return !value.trim().is_empty();
    }
    value.split_whitespace().any(|w| {
        if b.is_empty() {
            w.starts_with(a)
        } else {
            w.len() > a.len() + b.len() && w.starts_with(a) && w.ends_with(b)
        }
    })
}

/// The rule for one drawn row.
fn check_row(drawn: &str, given: &Given) -> Result<(), String> {
    for word in drawn.split_whitespace() {
        if let Some((a, b)) = word.split_once('…') {
            if b.contains('…') || !given.text.iter().any(|v| cut_of(v, a, b)) {
                return Err(format!(
                    "{word:?} is not a visible cut of a text cell\n row: {drawn}\n given: {given:?}"
                ));
            }
        } else if word.chars().any(|c| c.is_ascii_digit()) {
            let whole = given
                .figures
                .iter()
                .chain(&given.text)
                .any(|v| v.split_whitespace().any(|w| w == word));
            if !whole {
                return Err(format!(
                    "{word:?} is not a value this row was given\n row: {drawn}\n given: {given:?}"
                ));
            }
        }
    }
    Ok(())
}

/// The screen row `y` with the box borders blanked.
fn row_text(buf: &Buffer, y: u16) -> String {
    (0..buf.area.width)
        .map(|x| match buf[(x, y)].symbol() {
            "│" | "┌" | "┐" | "└" | "┘" | "─" => " ",
            s => s,
        })
        .collect()
}

/// The first screen row holding `needle`.
fn row_of(buf: &Buffer, needle: &str) -> Option<u16> {
    (0..buf.area.height).find(|&y| {
        (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol())
            .collect::<String>()
            .contains(needle)
    })
}

/// Draws `state` at every width from 40 to 200 and checks the rows of the table whose box
/// title holds `title`: data row `i` is `step * i` rows below the header and was given
/// `given[i]`. At 200 columns no data row is cut.
fn every_width(
    state: &AppState,
    title: &str,
    step: u16,
    given: &[Given],
) -> Result<(), TestCaseError> {
    for width in 40..=200u16 {
        let buf = render(state, width, HEIGHT);
        let top = row_of(&buf, title)
            .ok_or_else(|| TestCaseError::fail(format!("{title:?} at {width}:\n{}", text(&buf))))?;
        for (i, g) in given.iter().enumerate() {
            let y = top + 2 + step * i as u16;
            let drawn = row_text(&buf, y);
            check_row(&drawn, g).map_err(|e| {
                TestCaseError::fail(format!("at {width} columns, row {i}: {e}\n{}", text(&buf)))
            })?;
            if width == 200 {
                prop_assert!(
                    !drawn.contains('…'),
                    "cut at 200 columns: {drawn}\n{}",
                    text(&buf)
                );
            }
        }
    }
    Ok(())
}

fn run_cases<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}");
    }
}

/// A word of a command or a sentence: letters, digits and the punctuation of flags and paths.
fn word() -> impl Strategy<Value = String> {
    "[a-z0-9./=_-]{1,12}"
}

/// Up to `n` words, spaced.
fn words(n: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(word(), 1..=n).prop_map(|w| w.join(" "))
}

/// An identifier: parts joined by `-`, long enough to be cut at 80 columns.
fn ident(max_parts: usize) -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z0-9]{1,7}", 1..=max_parts).prop_map(|p| p.join("-"))
}

/// An image reference: a registry with a port or a path, a repository and a tag.
fn image_ref() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("127.0.0.1:5072".to_string()),
            Just("nvcr.io/nvidia".to_string()),
            "[a-z]{2,10}\\.example\\.org:[0-9]{2,5}/[a-z]{2,8}",
        ],
        "[a-z][a-z0-9-]{0,14}",
        "[a-z0-9][a-z0-9.-]{0,14}",
    )
        .prop_map(|(registry, repo, tag)| format!("{registry}/{repo}:{tag}"))
}

// ---------------------------------------------------------------------------------------------
// Processes

#[derive(Debug, Clone)]
struct Proc {
    gpu: u32,
    pid: u32,
    mib: u64,
    user: String,
    command: String,
    container: Option<String>,
    share: Option<u32>,
    cpu: Option<f64>,
}

fn process_strategy() -> impl Strategy<Value = Proc> {
    (
        0u32..2,
        prop_oneof![1u32..100_000, 1_000_000u32..=9_999_999],
        0u64..=143_771,
        "[a-z][a-z0-9_-]{0,20}",
        words(8),
        prop::option::of("[0-9a-f]{64}"),
        prop::option::of(0u32..=100),
        prop::option::of(0.0f64..3200.0),
    )
        .prop_map(
            |(gpu, pid, mib, user, command, container, share, cpu)| Proc {
                gpu,
                pid,
                mib,
                user,
                command,
                container,
                share,
                cpu,
            },
        )
}

fn processes_state(procs: &[Proc]) -> AppState {
    let mut s = demo_state("gpus=2,seed=3,frozen=10", 1);
    s.update(Action::SelectTab(Tab::Processes));
    let mut samples = s.data().expect("GPU data").samples.clone();
    for sample in &mut samples {
        sample.processes.clear();
    }
    for p in procs {
        samples[p.gpu as usize].processes.push(GpuProcess {
            gpu_index: p.gpu,
            pid: p.pid,
            kind: ProcessKind::Compute,
            used_memory_bytes: Some(p.mib * 1024 * 1024),
            user: Some(p.user.clone()),
            command: Some(p.command.clone()),
            container: p.container.clone().map(|id| ContainerRef {
                runtime: ContainerRuntime::Docker,
                id,
            }),
            identity: None,
            gpu_util: p.share.map(|sm_pct| ProcessGpuUtil {
                sm_pct,
                ..ProcessGpuUtil::default()
            }),
            cpu_pct: p.cpu,
            host_memory_bytes: None,
        });
    }
    s.apply_gpu(GpuUpdate::Sampled(samples));
    s
}

fn process_given(p: &GpuProcess) -> Given {
    let mut g = Given::default();
    g.figure(p.gpu_index.to_string())
        .figure(p.pid.to_string())
        .figure(units::mib(p.used_memory_bytes.unwrap_or(0)))
        .figure(units::pct(p.gpu_util.map(|u| u.sm_pct)))
        .figure(p.cpu_pct.map_or("n/a".into(), |c| format!("{c:.0}%")))
        .figure(p.container.as_ref().map_or("-", |c| c.short_id()))
        .text(p.user.clone().unwrap_or_default())
        .text("C")
        .text(p.command.clone().unwrap_or_default());
    g
}

#[test]
fn processes_every_figure_drawn_is_a_true_figure_at_every_width() {
    run_cases(prop::collection::vec(process_strategy(), 1..=6), |procs| {
        let s = processes_state(&procs);
        let given: Vec<Given> = s
            .visible_processes()
            .into_iter()
            .map(process_given)
            .collect();
        prop_assert_eq!(given.len(), procs.len());
        every_width(&s, "Processes · ", 1, &given)
    });
}

/// The two cuts issue 27 saw: at 50 columns 24678MiB read `7MiB`, at 40 PID 4450077 read `0077`.
#[test]
fn processes_at_50_and_40_columns_keep_the_memory_and_the_pid_whole() {
    let p = Proc {
        gpu: 0,
        pid: 4_450_077,
        mib: 24_678,
        user: "alice".into(),
        command: "python train.py --epochs 90".into(),
        container: Some("d1c1ecb382bb".repeat(6)[..64].to_string()),
        share: Some(97),
        cpu: Some(101.0),
    };
    let s = processes_state(&[p]);
    for width in [40, 50] {
        let buf = render(&s, width, 20);
        let screen = text(&buf);
        assert!(screen.contains(" 4450077 "), "{screen}");
        assert!(screen.contains(" 24678MiB "), "{screen}");
    }
}

// ---------------------------------------------------------------------------------------------
// GPUs

#[derive(Debug, Clone)]
struct GpuFigures {
    util: Option<u32>,
    used_frac: f64,
    temp: Option<u32>,
    power: Option<f64>,
    limit: Option<f64>,
}

fn gpu_strategy() -> impl Strategy<Value = GpuFigures> {
    (
        prop::option::of(0u32..=100),
        0.0f64..=1.0,
        prop::option::of(20u32..=110),
        prop::option::of(0.0f64..1200.0),
        prop::option::of(50.0f64..1200.0),
    )
        .prop_map(|(util, used_frac, temp, power, limit)| GpuFigures {
            util,
            used_frac,
            temp,
            power,
            limit,
        })
}

#[test]
fn gpu_rows_every_figure_drawn_is_a_true_figure_at_every_width() {
    run_cases(prop::collection::vec(gpu_strategy(), 3), |figures| {
        let mut s = demo_state("gpus=3,seed=5,frozen=10", 1);
        let data = s.data().expect("GPU data").clone();
        let mut samples = data.samples.clone();
        for (sample, (f, gpu)) in samples
            .iter_mut()
            .zip(figures.iter().zip(&data.inventory.gpus))
        {
            sample.util_gpu_pct = f.util;
            let total = gpu.memory_total_bytes.unwrap_or(0);
            sample.memory_used_bytes = Some((total as f64 * f.used_frac) as u64);
            sample.temp_c = f.temp;
            sample.power_w = f.power;
            sample.power_limit_w = f.limit;
        }
        s.apply_gpu(GpuUpdate::Sampled(samples.clone()));
        let given: Vec<Given> = samples
            .iter()
            .zip(&data.inventory.gpus)
            .map(|(sample, gpu)| {
                let mut g = Given::default();
                g.figure(gpu.index.to_string())
                    .figure(units::pct(sample.util_gpu_pct))
                    .figure(units::memory_pair(
                        sample.memory_used_bytes,
                        gpu.memory_total_bytes,
                    ))
                    .figure(units::celsius(sample.temp_c))
                    .figure(units::power_pair(sample.power_w, sample.power_limit_w))
                    .text(gpu.name.clone());
                g
            })
            .collect();
        // Fewer than 8 GPUs: each has a history line under its row.
        every_width(&s, "┌ GPUs", 2, &given)
    });
}

/// The GPU list's header names a column exactly when the rows under it draw that column: at
/// 40 columns it read `MEM…` over rows that had left the memory out.
#[test]
fn gpu_list_titles_go_in_step_with_the_rows_figures() {
    let s = demo_state("gpus=3,seed=5,frozen=10", 1);
    for width in 40..=200u16 {
        let buf = render(&s, width, HEIGHT);
        let top = row_of(&buf, "┌ GPUs").expect("the GPU list");
        let (header, row) = (row_text(&buf, top + 1), row_text(&buf, top + 2));
        let columns = [
            ("UTIL", "%"),
            ("MEMORY", "GiB"),
            ("TEMP", "°C"),
            ("POWER", "W "),
        ];
        for (title, mark) in columns {
            assert_eq!(
                header.contains(title),
                format!("{row} ").contains(mark),
                "at {width} columns: {title} in the header, {mark:?} in the row?\n{header}\n{row}"
            );
        }
        assert!(
            !header.contains('…') || !header.contains("UTIL"),
            "{header}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Runs

#[derive(Debug, Clone)]
struct RunFigures {
    name: String,
    state: usize,
    gpus: Vec<u32>,
    ago_s: u64,
    ran_s: Option<u64>,
    exit: Option<i32>,
    command: String,
}

fn run_strategy() -> impl Strategy<Value = RunFigures> {
    (
        ident(4).prop_filter("an id fits its 28-column cap", |n| n.len() <= 28),
        0usize..5,
        prop::collection::vec(0u32..16, 0..8),
        0u64..2_000_000,
        prop::option::of(0u64..2_000_000),
        prop::option::of(-128i32..=255),
        words(10),
    )
        .prop_map(
            |(name, state, gpus, ago_s, ran_s, exit, command)| RunFigures {
                name,
                state,
                gpus,
                ago_s,
                ran_s,
                exit,
                command,
            },
        )
}

const STATES: [RunState; 5] = [
    RunState::Running,
    RunState::Succeeded,
    RunState::Failed,
    RunState::Stopped,
    RunState::Lost,
];

fn run_row(i: usize, f: &RunFigures) -> RunRow {
    let started = (NOW as u64 - f.ago_s) * 1000;
    RunRow {
        id: format!("20270115-08{i:04}-{}", f.name),
        name: f.name.clone(),
        state: STATES[f.state],
        launcher: Launcher::PerGpu,
        image: None,
        gpus: f.gpus.clone(),
        ranks: 1,
        command: f.command.clone(),
        created_ms: started,
        started_ms: Some(started),
        ended_ms: f.ran_s.map(|r| started + r * 1000),
        exit_code: f.exit,
        first_failed_rank: None,
        error: None,
        dir: PathBuf::from("/nonexistent"),
        summary: None,
        job: None,
        engine_away: None,
        xids: Vec::new(),
        owner: RunOwner::default(),
    }
}

fn run_given(r: &RunRow) -> Given {
    let started = r.started_ms.unwrap_or(r.created_ms);
    let now_ms = NOW as u64 * 1000;
    let mut g = Given::default();
    let gpus: Vec<String> = r.gpus.iter().map(u32::to_string).collect();
    g.figure(if gpus.is_empty() {
        "none".into()
    } else {
        gpus.join(",")
    })
    .figure(format!(
        "{} ago",
        units::age(now_ms.saturating_sub(started) as i64 / 1000)
    ))
    .figure(units::run_duration(
        r.ended_ms
            .unwrap_or(now_ms.max(started))
            .saturating_sub(started),
    ))
    .figure(r.exit_code.map_or("-".into(), |c| c.to_string()))
    .text(
        r.id.split_once('-')
            .and_then(|(_, rest)| rest.split_once('-'))
            .map_or(r.id.clone(), |(_, id)| id.to_string()),
    )
    .text(r.state.to_string())
    .text(r.command.clone());
    g
}

#[test]
fn runs_every_figure_drawn_is_a_true_figure_at_every_width() {
    run_cases(prop::collection::vec(run_strategy(), 1..=5), |figures| {
        let mut s = demo_state("gpus=2,seed=7,frozen=100", 1);
        s.now = NOW;
        s.update(Action::SelectTab(Tab::Runs));
        s.apply_runs(RunsUpdate::Listed {
            runs: figures
                .iter()
                .enumerate()
                .map(|(i, f)| run_row(i, f))
                .collect(),
            warnings: vec![],
        });
        let given: Vec<Given> = s
            .runs
            .shown()
            .iter()
            .map(|&i| run_given(&s.runs.runs[i]))
            .collect();
        prop_assert_eq!(given.len(), figures.len());
        every_width(&s, "Runs · ", 1, &given)
    });
}

/// Ranks of one run differ only at the end of their ids: a narrow Runs tab keeps that end.
#[test]
fn run_ids_cut_in_the_middle_keep_the_rank_apart() {
    let mut s = demo_state("gpus=2,seed=7,frozen=100", 1);
    s.now = NOW;
    s.update(Action::SelectTab(Tab::Runs));
    let rank = |n: u32| RunFigures {
        name: format!("gpudeck-20261128-085030-crun-{n}"),
        state: 0,
        gpus: vec![n],
        ago_s: 60,
        ran_s: None,
        exit: None,
        command: "python train.py".into(),
    };
    s.apply_runs(RunsUpdate::Listed {
        runs: (0..3).map(|n| run_row(n as usize, &rank(n))).collect(),
        warnings: vec![],
    });
    let screen = text(&render(&s, 60, 30));
    for n in 0..3 {
        assert!(screen.contains(&format!("…-crun-{n} ")), "{screen}");
    }
}

// ---------------------------------------------------------------------------------------------
// Services

#[derive(Debug, Clone)]
struct ServiceFigures {
    name: String,
    kind: usize,
    gpus: Vec<u32>,
    idle_s: Option<u64>,
    container: bool,
}

fn service_strategy() -> impl Strategy<Value = ServiceFigures> {
    (
        ident(3).prop_filter("an id fits its 34-column cap", |n| n.len() <= 18),
        0usize..3,
        prop::collection::vec(0u32..2, 0..3),
        prop::option::of(0u64..400_000),
        any::<bool>(),
    )
        .prop_map(|(name, kind, gpus, idle_s, container)| ServiceFigures {
            name,
            kind,
            gpus,
            idle_s,
            container,
        })
}

fn service_row(i: usize, f: &ServiceFigures) -> ServiceRow {
    let kind = [
        ServiceKind::Notebook,
        ServiceKind::Tensorboard,
        ServiceKind::Triton,
    ][f.kind];
    let mut gpus = f.gpus.clone();
    gpus.sort_unstable();
    gpus.dedup();
    ServiceRow {
        id: format!("20270115-08{i:04}-{}", f.name),
        kind,
        name: f.name.clone(),
        state: RunState::Running,
        health: Health::Ready,
        problem: None,
        url: "http://127.0.0.1:8888/".into(),
        ssh: "ssh -N -L 8888:127.0.0.1:8888 alice@node".into(),
        ports: Vec::new(),
        gpus: gpus
            .iter()
            .map(|&index| RunGpu {
                index,
                uuid: format!("GPU-{index}"),
                name: "H100".into(),
            })
            .collect(),
        image: f
            .container
            .then(|| "nvcr.io/nvidia/tritonserver:25.10-py3".into()),
        started_ms: Some((NOW as u64 - 3600) * 1000),
        ended_ms: None,
        error: None,
        idle_seconds: f.idle_s,
        idle_alert: f.idle_s.is_some_and(|s| s > 3600),
        kernels: Vec::new(),
        models: Vec::new(),
        gpu_memory_bytes: None,
        own: Default::default(),
    }
}

#[test]
fn services_every_figure_drawn_is_a_true_figure_at_every_width() {
    run_cases(
        prop::collection::vec(service_strategy(), 1..=4),
        |figures| {
            let mut s = demo_state("gpus=2,seed=42,frozen=100", 1);
            s.now = NOW;
            s.update(Action::SelectTab(Tab::Services));
            let data = s.data().expect("GPU data").clone();
            // Each service owns the processes on its first GPU; the others are someone else's.
            let rows: Vec<ServiceRow> = figures
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let mut row = service_row(i, f);
                    row.own.pids = (data.samples.iter().zip(&data.inventory.gpus))
                        .filter(|(_, g)| row.gpus.first().is_some_and(|r| r.index == g.index))
                        .flat_map(|(s, _)| s.processes.iter().map(|p| p.pid))
                        .collect();
                    row
                })
                .collect();
            s.apply_services(ServicesUpdate {
                rows,
                store_error: None,
            });
            let given: Vec<Given> = s
                .services
                .rows
                .iter()
                .map(|r| {
                    let mut g = Given::default();
                    // "0,1 (3.2GiB)": the indices, and the memory its own processes hold.
                    let indices: Vec<String> =
                        r.gpus.iter().map(|gpu| gpu.index.to_string()).collect();
                    let own = data
                        .samples
                        .iter()
                        .flat_map(|s| &s.processes)
                        .filter(|p| r.own.pids.contains(&p.pid))
                        .map(|p| p.used_memory_bytes)
                        .sum::<Option<u64>>()
                        .filter(|_| !r.own.pids.is_empty());
                    g.figure(match (indices.is_empty(), own) {
                        (true, _) => "-".into(),
                        (false, Some(b)) => {
                            format!("{} ({})", indices.join(","), units::human_bytes(b))
                        }
                        (false, None) => indices.join(","),
                    })
                    .figure(r.idle_seconds.map_or("-".into(), |secs| {
                        let d = units::run_duration(secs * 1000);
                        if r.idle_alert {
                            format!("{d}!")
                        } else {
                            d
                        }
                    }))
                    .text(r.id.clone())
                    .text(r.name.clone())
                    .text(r.kind.as_str())
                    .text("ready")
                    .text(if r.image.is_some() {
                        "container"
                    } else {
                        "host"
                    });
                    g
                })
                .collect();
            prop_assert_eq!(given.len(), figures.len());
            every_width(&s, "Services · ", 1, &given)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Containers and Images

fn docker_state() -> AppState {
    let mut s = demo_state("gpus=2,seed=11,frozen=10", 1);
    s.now = NOW;
    s.apply_docker(DockerUpdate::Connected {
        host: "unix:///var/run/docker.sock".into(),
        info: Box::new(EngineInfo {
            server_version: "27.3.1".into(),
            api_version: "1.47".into(),
            os: "Ubuntu".into(),
            docker_root_dir: "/var/lib/docker".into(),
            runtimes: vec!["runc".into(), "nvidia".into()],
            default_runtime: "runc".into(),
            cdi_spec_dirs: vec![],
            nvidia_cdi: false,
            nvidia_hook: false,
            cgroup_version: "2".into(),
        }),
    });
    s
}

#[derive(Debug, Clone)]
struct ContainerFigures {
    name: String,
    image: String,
    up_s: i64,
    exit: Option<i64>,
    devices: Vec<u32>,
    procs: Vec<(u32, u64)>,
}

fn container_strategy() -> impl Strategy<Value = ContainerFigures> {
    (
        ident(5).prop_filter("a name fits its 30-column cap", |n| n.len() <= 27),
        image_ref(),
        0i64..5_000_000,
        prop::option::of(0i64..=255),
        prop::collection::vec(0u32..8, 0..4),
        prop::collection::vec((0u32..2, 0u64..=143_771), 0..3),
    )
        .prop_map(
            |(name, image, up_s, exit, devices, procs)| ContainerFigures {
                name,
                image,
                up_s,
                exit,
                devices,
                procs,
            },
        )
}

#[test]
fn containers_every_figure_drawn_is_a_true_figure_at_every_width() {
    run_cases(
        prop::collection::vec(container_strategy(), 1..=4),
        |figures| {
            let mut s = docker_state();
            s.update(Action::SelectTab(Tab::Containers));
            let containers: Vec<ContainerInfo> = figures
                .iter()
                .enumerate()
                .map(|(i, f)| ContainerInfo {
                    id: format!("{i:x}{}", "c".repeat(63)),
                    name: format!("{}-{i}", f.name),
                    image: f.image.clone(),
                    image_id: "sha256:1".into(),
                    command: "python train.py".into(),
                    state: if f.exit.is_some() {
                        ContainerState::Exited
                    } else {
                        ContainerState::Running
                    },
                    status: "Up".into(),
                    created: NOW - f.up_s - 10,
                    started_at: Some(NOW - f.up_s),
                    exit_code: f.exit,
                    gpus: if f.devices.is_empty() {
                        vec![]
                    } else {
                        vec![GpuGrant::DeviceRequest {
                            devices: GpuSelection::Devices(
                                f.devices.iter().map(u32::to_string).collect(),
                            ),
                        }]
                    },
                    labels: BTreeMap::new(),
                })
                .collect();
            // Their processes on the GPUs, for the GPU MEM and GPU columns.
            let mut samples = s.data().expect("GPU data").samples.clone();
            for sample in &mut samples {
                sample.processes.clear();
            }
            for (c, f) in containers.iter().zip(&figures) {
                for (n, &(gpu, mib)) in f.procs.iter().enumerate() {
                    samples[gpu as usize].processes.push(GpuProcess {
                        gpu_index: gpu,
                        pid: 1000 + n as u32,
                        kind: ProcessKind::Compute,
                        used_memory_bytes: Some(mib * 1024 * 1024),
                        user: None,
                        command: None,
                        container: Some(ContainerRef {
                            runtime: ContainerRuntime::Docker,
                            id: c.id.clone(),
                        }),
                        identity: None,
                        gpu_util: None,
                        cpu_pct: None,
                        host_memory_bytes: None,
                    });
                }
            }
            s.apply_gpu(GpuUpdate::Sampled(samples.clone()));
            s.apply_docker(DockerUpdate::Containers(containers));
            let given: Vec<Given> = s
                .docker
                .shown_containers()
                .iter()
                .map(|&i| {
                    let c = &s.docker.containers[i];
                    let mut g = Given::default();
                    let up = match c.state {
                        ContainerState::Running => units::age(NOW - c.started_at.unwrap_or(NOW)),
                        _ => c.exit_code.map_or("-".into(), |e| format!("exit {e}")),
                    };
                    let procs: Vec<&GpuProcess> = samples
                        .iter()
                        .flat_map(|s| &s.processes)
                        .filter(|p| p.container.as_ref().is_some_and(|r| r.id == c.id))
                        .collect();
                    let mut gpus: Vec<u32> = procs.iter().map(|p| p.gpu_index).collect();
                    gpus.sort_unstable();
                    gpus.dedup();
                    g.figure(up).text(c.name.clone()).text(c.image.clone());
                    for grant in &c.gpus {
                        if let GpuGrant::DeviceRequest {
                            devices: GpuSelection::Devices(d),
                        } = grant
                        {
                            g.figure(d.join(","));
                        }
                    }
                    if c.gpus.is_empty() && !gpus.is_empty() {
                        let list: Vec<String> = gpus.iter().map(u32::to_string).collect();
                        g.figure(format!("uses {}", list.join(",")));
                    }
                    if !procs.is_empty() {
                        let bytes: u64 = procs.iter().filter_map(|p| p.used_memory_bytes).sum();
                        g.figure(units::human_bytes(bytes));
                        let utils: Vec<u32> = gpus
                            .iter()
                            .filter_map(|&i| samples[i as usize].util_gpu_pct)
                            .collect();
                        if !utils.is_empty() {
                            g.figure(format!(
                                "{}%",
                                utils.iter().sum::<u32>() / utils.len() as u32
                            ));
                        }
                    }
                    g
                })
                .collect();
            prop_assert_eq!(given.len(), figures.len());
            every_width(&s, "Containers · ", 1, &given)
        },
    );
}

#[derive(Debug, Clone)]
struct ImageFigures {
    reference: String,
    id: String,
    size: u64,
    age_s: i64,
    cuda: Option<String>,
    cudnn: Option<String>,
    pytorch: Option<String>,
}

fn version() -> impl Strategy<Value = String> {
    "[0-9]{1,2}\\.[0-9]{1,2}(\\.[0-9]{1,3})?"
}

fn image_strategy() -> impl Strategy<Value = ImageFigures> {
    (
        image_ref(),
        "[0-9a-f]{64}",
        0u64..60_000_000_000,
        0i64..80_000_000,
        prop::option::of(version()),
        prop::option::of(version()),
        prop::option::of(version()),
    )
        .prop_map(
            |(reference, id, size, age_s, cuda, cudnn, pytorch)| ImageFigures {
                reference,
                id,
                size,
                age_s,
                cuda,
                cudnn,
                pytorch,
            },
        )
}

fn image_info(f: &ImageFigures) -> ImageInfo {
    ImageInfo {
        id: format!("sha256:{}", f.id),
        tags: vec![f.reference.clone()],
        digests: vec![],
        size_bytes: f.size,
        created: NOW - f.age_s,
        facts: ImageFacts {
            cuda: f.cuda.clone(),
            cudnn: f.cudnn.clone(),
            pytorch: f.pytorch.clone(),
            ..ImageFacts::default()
        },
    }
}

#[test]
fn images_every_figure_drawn_is_a_true_figure_at_every_width() {
    run_cases(prop::collection::vec(image_strategy(), 1..=4), |figures| {
        let mut s = docker_state();
        s.update(Action::SelectTab(Tab::Images));
        s.apply_docker(DockerUpdate::Images(
            figures.iter().map(image_info).collect(),
        ));
        let given: Vec<Given> = s
            .docker
            .shown_images()
            .iter()
            .map(|&i| {
                let img = &s.docker.images[i];
                let mut g = Given::default();
                g.figure(short_image_id(&img.id))
                    .figure(units::human_bytes(img.size_bytes))
                    .figure(units::age(NOW - img.created))
                    .figure(img.facts.cuda.clone().unwrap_or("-".into()))
                    .figure(img.facts.cudnn.clone().unwrap_or("-".into()))
                    .figure(image_framework(img).unwrap_or("-".into()))
                    .text(img.tags[0].clone());
                g
            })
            .collect();
        prop_assert_eq!(given.len(), figures.len());
        every_width(&s, "Images · ", 1, &given)
    });
}

// ---------------------------------------------------------------------------------------------
// Compat

#[test]
fn compat_every_figure_drawn_is_a_true_figure_at_every_width() {
    run_cases(prop::collection::vec(image_strategy(), 1..=3), |figures| {
        let mut s = docker_state();
        s.compat = gpudeck::app::compat::CompatView::new(gpudeck::compat::CompatData::builtin());
        s.apply_docker(DockerUpdate::Images(
            figures.iter().map(image_info).collect(),
        ));
        support::demo::feed(&mut s, "gpus=2,seed=11,frozen=10", 1);
        s.update(Action::SelectTab(Tab::Compat));
        // The first rows on screen: the list scrolls with the selection, which is the first.
        let board = s.compat.board.as_ref().expect("a board");
        let given: Vec<Given> = s
            .compat
            .shown()
            .iter()
            .take(8)
            .map(|&i| {
                let a = &board.images[i];
                let mut g = Given::default();
                g.figure(a.image.framework_label().unwrap_or_default())
                    .figure(a.image.cuda.map_or("–".into(), |c| c.to_string()))
                    .text(a.image.reference.clone())
                    .text(a.image.source.label())
                    .text(a.verdict.level.word());
                g
            })
            .collect();
        prop_assert!(!given.is_empty());
        every_width(&s, "Will it run here?", 1, &given)
    });
}

// ---------------------------------------------------------------------------------------------
// Doctor

#[test]
fn doctor_every_figure_drawn_is_a_true_figure_at_every_width() {
    let check = (
        "[A-Z][a-z]{1,8}( [a-z0-9]{1,8}){0,5}"
            .prop_filter("a title fits 60 columns", |t| t.len() <= 60),
        words(12).prop_filter("a finding fits 200 columns", |t| t.len() <= 100),
        0usize..4,
    );
    run_cases(prop::collection::vec(check, 1..=6), |checks| {
        let mut s = demo_state("gpus=2,frozen=60", 1);
        s.update(Action::SelectTab(Tab::Doctor));
        let statuses = [Status::Pass, Status::Warn, Status::Fail, Status::Skip];
        let checks: Vec<Check> = checks
            .iter()
            .map(|(title, detail, status)| {
                Check::new(
                    "gpus.test",
                    Family::Gpus,
                    Box::leak(title.clone().into_boxed_str()),
                    statuses[*status],
                    detail.clone(),
                )
            })
            .collect();
        s.apply_doctor(DoctorReport {
            schema: SCHEMA,
            host: "testhost".into(),
            source: None,
            driver_version: Some("580.65.06".into()),
            cuda_driver_version: None,
            kernel_module_version: Some("580.65.06".into()),
            gpu_count: 2,
            checks: checks.clone(),
        });
        let given: Vec<Given> = checks
            .iter()
            .map(|c| {
                let mut g = Given::default();
                g.text(c.status.word())
                    .text(c.family.heading())
                    .text(c.title)
                    .text(c.detail.clone());
                g
            })
            .collect();
        every_width(&s, "Doctor · ", 1, &given)
    });
}

/// Check names are whole on a wide terminal, however long.
#[test]
fn doctor_check_names_are_whole_at_200_columns() {
    let mut s = demo_state("gpus=2,frozen=60", 1);
    s.update(Action::SelectTab(Tab::Doctor));
    let title = "Framework images run the newest images on this driver";
    s.apply_doctor(DoctorReport {
        schema: SCHEMA,
        host: "testhost".into(),
        source: None,
        driver_version: None,
        cuda_driver_version: None,
        kernel_module_version: None,
        gpu_count: 2,
        checks: vec![Check::new(
            "docker.frameworks",
            Family::Docker,
            title,
            Status::Pass,
            "PyTorch 2.5.1 and TensorFlow 2.17.0 images run here",
        )],
    });
    let screen = text(&render(&s, 200, 40));
    assert!(screen.contains(title), "{screen}");
}

/// The rule itself: the cuts issue 27 saw fail it, true and visibly cut words pass.
#[test]
fn the_rule_catches_a_number_cut_into_another() {
    let mut g = Given::default();
    g.figure("4450077")
        .figure("24678MiB")
        .text("python train.py --epochs 90")
        .text("gpudeck-20261128-085030-crun-3");
    assert!(check_row("│ 4450077  24678MiB python train.py --ep…  │", &g).is_ok());
    assert!(check_row("gpudeck-2026…-crun-3", &g).is_ok());
    assert!(check_row(" 0077  24678MiB", &g).is_err());
    assert!(check_row(" 4450077  7MiB", &g).is_err());
    assert!(
        check_row(" 4450077  24678M…", &g).is_err(),
        "a figure is never cut"
    );
    assert!(check_row(" python train.py --epochs 9", &g).is_err());
}
